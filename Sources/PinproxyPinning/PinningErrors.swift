import PinproxyCertificates

extension PinproxyError.Code {
    /// A policy is contradictory or breaks a rule of its library (TrustKit's two-pin rule, an empty pin set).
    public static let policy = Self("policy")
    /// A policy file cannot be read: unknown key, wrong type, missing or undecodable file, malformed pin or XML.
    public static let policyFile = Self("policy-file")
    /// A certificate chain given for evaluation is empty or unreadable.
    public static let chain = Self("chain")
    /// A live server could not be reached or did not complete a handshake.
    public static let connect = Self("connect")
}
