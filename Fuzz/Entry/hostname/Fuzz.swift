import PinproxyFuzzing

// libFuzzer's entry point for the hostname target (FuzzTarget.hostName).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.hostName.runOrTrap(data, size)
    return 0
}
