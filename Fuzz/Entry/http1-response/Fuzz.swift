import PinproxyFuzzing

// libFuzzer's entry point for the http1-response target (FuzzTarget.http1Response).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.http1Response.runOrTrap(data, size)
    return 0
}
