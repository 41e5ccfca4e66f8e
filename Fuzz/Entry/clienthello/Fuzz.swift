import PinproxyFuzzing

// libFuzzer's entry point for the clienthello target (FuzzTarget.clientHello).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.clientHello.runOrTrap(data, size)
    return 0
}
