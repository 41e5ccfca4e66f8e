import PinproxyFuzzing

// libFuzzer's entry point for the http2-responses target (FuzzTarget.http2Responses).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.http2Responses.runOrTrap(data, size)
    return 0
}
