import Foundation
import PinproxyCertificates

/// What a client sees of a TLS server: the `SecTrust` a policy judges.
public struct ServerTrust: Sendable {
    /// The certificates as the server sent them, leaf first, extras allowed.
    public var presentedChain: [Certificate]
    /// The host the client connected to.
    public var host: HostName
    /// The evaluation time.
    public var time: Date
    /// The device's anchors.
    public var store: TrustStore

    public init(presentedChain: [Certificate], host: HostName, time: Date = Date(), store: TrustStore) {
        self.presentedChain = presentedChain
        self.host = host
        self.time = time
        self.store = store
    }

    /// Evaluates the presented chain with these options (a fresh evaluation each call).
    func evaluate(host: HostName?, anchors: TrustAnchors) -> TrustEvaluation {
        TrustEvaluator.evaluate(presentedChain, host: host, at: time, anchors: anchors)
    }
}

/// The pinning libraries and platform mechanisms the harness emulates.
public enum PolicyFamily: String, Sendable, Encodable, CaseIterable, CustomStringConvertible {
    case afnetworking
    case customAnchors = "custom-anchors"
    case alamofire
    case okhttp
    case trustkit
    case androidNSC = "android-nsc"
    case curl

    public var description: String { rawValue }
}

/// A client's server-trust policy: given what the server presented, does the client go on?
///
/// Each family is a small value type; a policy decides from the ``ServerTrust``
/// alone and explains itself step by step in the ``Verdict``.
public protocol PinningPolicy: Sendable {
    var family: PolicyFamily { get }
    /// The library version or behaviour emulated.
    var profile: String { get }
    func evaluate(_ trust: ServerTrust) -> Verdict
}

extension Array where Element == Certificate {
    /// "2 certificates" / "1 certificate".
    var countText: String { "\(count) certificate\(count == 1 ? "" : "s")" }
}
