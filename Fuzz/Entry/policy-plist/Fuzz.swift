import PinproxyFuzzing

// libFuzzer's entry point for the policy-plist target (FuzzTarget.policyTrustKitPlist).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.policyTrustKitPlist.runOrTrap(data, size)
    return 0
}
