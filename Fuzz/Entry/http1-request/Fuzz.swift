import PinproxyFuzzing

// libFuzzer's entry point for the http1-request target (FuzzTarget.http1Request).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.http1Request.runOrTrap(data, size)
    return 0
}
