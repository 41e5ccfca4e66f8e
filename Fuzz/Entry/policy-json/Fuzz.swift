import PinproxyFuzzing

// libFuzzer's entry point for the policy-json target (FuzzTarget.policyJSON).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.policyJSON.runOrTrap(data, size)
    return 0
}
