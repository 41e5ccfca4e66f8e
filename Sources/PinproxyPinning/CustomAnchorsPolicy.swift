import Foundation
import PinproxyCertificates

/// The plain NSURLSession pattern: `SecTrustSetAnchorCertificates` with the app's CA
/// certificates, evaluate, and proceed only on `kSecTrustResultUnspecified` or
/// `kSecTrustResultProceed`.
///
/// With ``anchorCertificatesOnly`` (the default once anchors are set) the system
/// and user anchors no longer count; without it the app's certificates are added
/// to them (`SecTrustSetAnchorCertificatesOnly(trust, false)`).
public struct CustomAnchorsPolicy: PinningPolicy {
    public var anchorCertificates: [Certificate]
    public var anchorCertificatesOnly: Bool
    /// SSL policy with the host name (true) or basic X.509 (false: no extended key usage, no
    /// name, and none of the SSL policy's algorithm floors).
    public var validatesDomainName: Bool

    public init(anchorCertificates: [Certificate], anchorCertificatesOnly: Bool = true, validatesDomainName: Bool = true) {
        self.anchorCertificates = anchorCertificates
        self.anchorCertificatesOnly = anchorCertificatesOnly
        self.validatesDomainName = validatesDomainName
    }

    public var family: PolicyFamily { .customAnchors }
    public var profile: String { "NSURLSession" }

    /// Nil: the app's anchors apply to every connection it makes.
    public func uncoveredReason(host: HostName) -> String? { nil }

    /// The anchor certificates the app sets.
    public func refersTo(_ certificate: Certificate) -> Bool? { anchorCertificates.holdsKey(of: certificate) }

    /// Inside the handshake: the app's own anchors are applied in NSURLSession's server-trust
    /// challenge, and a refusal cancels it, aborting the handshake.
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint { .handshake }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        var anchors = TrustAnchors.only(anchorCertificates)
        if !anchorCertificatesOnly {
            anchors.system = trust.store.systemAnchors
            anchors.user = trust.store.userAnchors
        }
        let policy: TrustPolicy = validatesDomainName ? .ssl(host: trust.host, platform: .apple) : .basicX509(platform: .apple)
        let evaluation = trust.evaluate(policy, anchors: anchors)
        record.use(evaluation)
        record.step(
            "SecTrustSetAnchorCertificates with \(anchorCertificates.countText)\(anchorCertificatesOnly ? " as the only anchors" : " added to the system and user anchors"), then evaluation with the \(policy)",
            evaluation.outcomeSummary)
        if evaluation.isValid {
            record.step("result check", "accept: kSecTrustResultUnspecified (chain ends at \(evaluation.anchor?.description ?? "an anchor"))")
            return record.finish(.accept, disposition: AFNetworkingPolicy.useCredential)
        }
        record.step("result check", "reject: kSecTrustResultRecoverableTrustFailure")
        return record.finish(.reject, disposition: AFNetworkingPolicy.cancelChallenge)
    }
}
