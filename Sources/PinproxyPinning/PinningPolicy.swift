import Foundation
import PinproxyCertificates

/// What a client sees of a TLS server: the `SecTrust` a policy judges.
public struct ServerTrust: Sendable {
    /// The certificates as the server sent them, leaf first, extras allowed.
    public var presentedChain: [Certificate]
    /// The host the client connected to, normalised: lower case, no trailing dot. Name
    /// checks use it, as every library normalises the name before matching certificates.
    public var host: HostName
    /// The host as the application wrote it in its URL, lower case (`api.example.com.` keeps
    /// its trailing dot). Libraries that look pins up by exact string see this form: OkHttp's
    /// `CertificatePinner`, Alamofire's evaluator keys, TrustKit's domain lookup.
    public var hostAsWritten: String
    /// The evaluation time.
    public var time: Date
    /// The device's anchors.
    public var store: TrustStore

    public init(presentedChain: [Certificate], host: HostName, time: Date = Date(), store: TrustStore) {
        self.presentedChain = presentedChain
        self.host = host
        self.hostAsWritten = host.description
        self.time = time
        self.store = store
    }

    /// A trust for the host as the application wrote it (`api.example.com.`, `[::1]`): validated
    /// as a ``HostName``, kept as written for the libraries that compare strings.
    public init(presentedChain: [Certificate], hostAsWritten text: String, time: Date = Date(), store: TrustStore) throws {
        let host = try HostName(validating: text)
        self.init(presentedChain: presentedChain, host: host, time: time, store: store)
        if case .dns = host { hostAsWritten = text.lowercased() }
    }

    /// Whether the host was written with a trailing dot that the normalised name drops.
    var hasTrailingDot: Bool { hostAsWritten != host.description && hostAsWritten.hasSuffix(".") }

    /// Evaluates the presented chain under `policy` (a fresh evaluation each call).
    func evaluate(_ policy: TrustPolicy, anchors: TrustAnchors) -> TrustEvaluation {
        TrustEvaluator.evaluate(presentedChain, policy: policy, at: time, anchors: anchors)
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

    /// Whether the family's pins are compared with the server's own key alone, never with the
    /// rest of a chain (curl's `--pinnedpubkey`): so no verdict of it depends on how far a
    /// failed evaluation built the chain.
    public var pinsTheLeafKeyOnly: Bool { self == .curl }

    /// Whose name rules and algorithm floor the family's evaluations follow.
    public var platform: TrustPlatform {
        switch self {
        case .afnetworking, .customAnchors, .alamofire, .trustkit: return .apple
        case .okhttp, .androidNSC: return .android
        case .curl: return .curl
        }
    }
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
    /// Where the library refuses `trust`, given that ``evaluate(_:)`` refuses it: its timing,
    /// which decides what the server sees (an alert in the handshake, or a connection closed
    /// after it without a request).
    func refusalPoint(for trust: ServerTrust) -> DecisionPoint
    /// Why the policy pins nothing for `host`, looked up as the library looks it up (`no
    /// CertificatePinner pattern (…) matches it, so …`); nil when it pins something for it, or
    /// when it applies alike to every connection made with it. The harness says so before its
    /// rows (``PolicyCoverage``); no verdict changes.
    func uncoveredReason(host: HostName) -> String?
    /// Whether `certificate` is one the policy names — a pinned certificate, a pinned key, or a
    /// certificate it adds as a trust anchor — compared by key where the library compares keys;
    /// nil when the policy names none (it validates only, or pins nothing). The harness says so
    /// when a policy names some but none of its world's (``PolicyCoverage``): the sign of a real
    /// server's pins checked against the world it generates.
    func refersTo(_ certificate: Certificate) -> Bool?
}

extension Array where Element == SPKIPin {
    /// Whether one of these pins is `certificate`'s key; nil for no pin at all.
    func pinsKey(of certificate: Certificate) -> Bool? {
        isEmpty ? nil : contains(certificate.spkiPin)
    }
}

extension Array where Element == Certificate {
    /// Whether `certificate`, or a certificate with its key, is among these; nil for none at all.
    func holdsKey(of certificate: Certificate) -> Bool? {
        isEmpty ? nil : contains { $0.spkiPin == certificate.spkiPin }
    }
}

extension Optional where Wrapped == Bool {
    /// The two answers of ``PinningPolicy/refersTo(_:)`` together: true when either is, nil when both are.
    static func || (lhs: Bool?, rhs: Bool?) -> Bool? {
        switch (lhs, rhs) {
        case (nil, nil): return nil
        default: return lhs == true || rhs == true
        }
    }
}

extension Array where Element == String {
    /// `a, b, c` (each once, in order), or `none` for an empty list: the names in an
    /// ``PinningPolicy/uncoveredReason(host:)``.
    var distinctList: String {
        var seen = Set<String>()
        let distinct = filter { seen.insert($0).inserted }
        return distinct.isEmpty ? "none" : distinct.joined(separator: ", ")
    }
}

/// A policy whose library can also be called for no host name at all.
///
/// AFNetworking's `evaluateServerTrust:forDomain:` takes a nil domain (its own tests pass
/// one in 20 cases): the contradiction guard is skipped and the trust is evaluated without a
/// host name. The other families always have one: the challenge's or the connection's host.
public protocol DomainlessEvaluating: PinningPolicy {
    /// The verdict for `presentedChain` evaluated for no domain at `time` on a device with `store`.
    func evaluateWithoutDomain(_ presentedChain: [Certificate], at time: Date, store: TrustStore) -> Verdict
}

extension Array where Element == Certificate {
    /// "2 certificates" / "1 certificate".
    var countText: String { "\(count) certificate\(count == 1 ? "" : "s")" }
}
