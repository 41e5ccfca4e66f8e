import PinproxyFuzzing

// libFuzzer's entry point for the policy-xml target (FuzzTarget.policyAndroidXML).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.policyAndroidXML.runOrTrap(data, size)
    return 0
}
