import PinproxyFuzzing

// libFuzzer's entry point for the rules target (FuzzTarget.rules).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.rules.runOrTrap(data, size)
    return 0
}
