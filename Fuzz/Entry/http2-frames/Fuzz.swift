import PinproxyFuzzing

// libFuzzer's entry point for the http2-frames target (FuzzTarget.http2Frames).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.http2Frames.runOrTrap(data, size)
    return 0
}
