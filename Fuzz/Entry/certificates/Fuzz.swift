import PinproxyFuzzing

// libFuzzer's entry point for the certificates target (FuzzTarget.certificates).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.certificates.runOrTrap(data, size)
    return 0
}
