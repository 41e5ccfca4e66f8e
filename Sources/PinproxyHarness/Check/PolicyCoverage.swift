import PinproxyCertificates
import PinproxyPinning

/// Whether a policy pins anything for the world's host, looked up as each library looks it up
/// (``PinningPolicy/uncoveredReason(host:)``), so a check of a host the policy does not cover
/// says so before its rows do.
///
/// The note changes no verdict: the rows still show what the library does with an unpinned host.
public enum PolicyCoverage {
    /// The notes that concern every row of a check of `policy` in `world`: ``note(_:host:)`` and
    /// ``foreignPinsNote(_:world:)``.
    public static func notes(_ policy: any PinningPolicy, world: HarnessWorld) -> [String] {
        [note(policy, host: world.host), foreignPinsNote(policy, world: world.policyWorld)].compactMap { $0 }
    }

    /// `the policy pins nothing for other.example.com: …`, or nil when it covers `host`.
    public static func note(_ policy: any PinningPolicy, host: HostName) -> String? {
        policy.uncoveredReason(host: host).map { "the policy pins nothing for \(host): \($0); the rows below are those of an unpinned host" }
    }

    /// Whether the policy names certificates or keys (``PinningPolicy/refersTo(_:)``) and none of
    /// them is a certificate of `world`: the mark of a real server's pins checked in a world whose
    /// certificates are made afresh, where none can match.
    public static func pinsNameNoWorldCertificate(_ policy: any PinningPolicy, world: PolicyWorld) -> Bool {
        let answers = PolicyWorld.names.compactMap { world.certificates[$0] }.map(policy.refersTo)
        return answers.contains(false) && !answers.contains(true)
    }

    /// `none of the policy's pins and certificates is a certificate of the generated world …`, when
    /// ``pinsNameNoWorldCertificate(_:world:)``; nil otherwise.
    public static func foreignPinsNote(_ policy: any PinningPolicy, world: PolicyWorld) -> String? {
        guard pinsNameNoWorldCertificate(policy, world: world) else { return nil }
        let made = world.origin == "the generated world" ? " (made afresh on every run)" : ""
        return "none of the policy's pins and certificates is a certificate of \(world.origin)\(made), so none of them can match here. "
            + "In a policy for check, name them as world:leaf, world:intermediate or world:root (docs/examples/); "
            + "a real server's pins belong to 'pinproxy verify --policy FILE --host HOST --chain CHAIN.pem', on the chain 'pinproxy pin --connect HOST:443 --out CHAIN.pem' saves"
    }
}
