import PinproxyCertificates
import PinproxyPinning

/// Whether a policy pins anything for the world's host, looked up as each library looks it up
/// (``PinningPolicy/uncoveredReason(host:)``), so a check of a host the policy does not cover
/// says so before its rows do.
///
/// The note changes no verdict: the rows still show what the library does with an unpinned host.
public enum PolicyCoverage {
    /// `the policy pins nothing for other.example.com: …`, or nil when it covers `host`.
    public static func note(_ policy: any PinningPolicy, host: HostName) -> String? {
        policy.uncoveredReason(host: host).map { "the policy pins nothing for \(host): \($0); the rows below are those of an unpinned host" }
    }
}
