import Foundation
import PinproxyCertificates

/// Where an evaluated chain ended.
public enum AnchorKind: String, Sendable, Hashable, CustomStringConvertible {
    /// A root of the operating system's store.
    case system
    /// A CA the device's user installed (the proxy CA of an intercepting tester).
    case user
    /// A certificate the application itself supplied as an anchor (pinned certificates, bundled CAs).
    case application

    public var description: String {
        switch self {
        case .system: return "a system anchor"
        case .user: return "a user-installed anchor"
        case .application: return "an anchor supplied by the application"
        }
    }
}

/// The anchors one evaluation trusts, grouped by where they come from.
public struct TrustAnchors: Sendable {
    public var system: [Certificate]
    public var user: [Certificate]
    public var application: [Certificate]

    public init(system: [Certificate] = [], user: [Certificate] = [], application: [Certificate] = []) {
        self.system = system
        self.user = user
        self.application = application
    }

    /// The device's anchors: the system store, and the user-installed CAs unless excluded.
    public static func device(_ store: TrustStore, includingUser: Bool = true) -> TrustAnchors {
        TrustAnchors(system: store.systemAnchors, user: includingUser ? store.userAnchors : [])
    }

    /// Only the given certificates (`SecTrustSetAnchorCertificates` without re-enabling the system ones).
    public static func only(_ certificates: [Certificate]) -> TrustAnchors {
        TrustAnchors(application: certificates)
    }

    public var all: [Certificate] { application + user + system }
    public var isEmpty: Bool { system.isEmpty && user.isEmpty && application.isEmpty }

    /// Which group holds `certificate` (application first, then user, then system).
    public func kind(of certificate: Certificate) -> AnchorKind? {
        if application.contains(certificate) { return .application }
        if user.contains(certificate) { return .user }
        if system.contains(certificate) { return .system }
        return nil
    }

    /// A short description for step lines: "system anchors and user anchors".
    public var summary: String {
        var parts: [String] = []
        if !application.isEmpty { parts.append("\(application.count) application anchor\(application.count == 1 ? "" : "s")") }
        if !user.isEmpty { parts.append("\(user.count) user anchor\(user.count == 1 ? "" : "s")") }
        if !system.isEmpty { parts.append("\(system.count) system anchor\(system.count == 1 ? "" : "s")") }
        return parts.isEmpty ? "no anchors" : parts.joined(separator: " + ")
    }
}

/// One reason a chain failed evaluation, in plain words.
public struct TrustFailure: Sendable, Hashable, CustomStringConvertible {
    /// The family of failure, named as a person would name it.
    public enum Kind: String, Sendable, Hashable {
        case expired = "expired"
        case notYetValid = "not yet valid"
        case hostMismatch = "host mismatch"
        case unknownIssuer = "unknown issuer"
        case selfSigned = "self-signed"
        case notACA = "not a CA"
        case pathLength = "path length exceeded"
        case nameConstraints = "name constraints violated"
        case badSignature = "bad signature"
        case wrongPurpose = "not valid for TLS server authentication"
        /// A signature digest or key below the platform's floor.
        case weakAlgorithm = "weak algorithm"
        case untrusted = "untrusted"
        case malformed = "malformed certificate"
        case other = "invalid"
    }

    public let kind: Kind
    /// OpenSSL's `X509_V_ERR_*` code.
    public let code: Int
    /// Position in the built chain (0 = leaf).
    public let depth: Int
    /// The full sentence: kind, certificate and details.
    public let detail: String

    public var description: String { detail }
}

/// The outcome of evaluating a presented chain, as `SecTrustEvaluateWithError` would report it.
public struct TrustEvaluation: Sendable {
    /// Whether the chain is trusted for the requested use.
    public let isValid: Bool
    /// Every failure met, in the order the evaluator met them; empty when valid.
    public let failures: [TrustFailure]
    /// What the platform let pass that another would refuse ("the anchor CN=Old Root expired
    /// on ..., which the JDK's PKIX does not check").
    public let notes: [String]
    /// The chain the evaluator built from the leaf upward. After a failed
    /// evaluation this is the partial chain it reached: presented extras that
    /// do not chain are never part of it.
    public let builtChain: [Certificate]
    /// Where the built chain ended, when its last certificate is an anchor of this evaluation.
    public let anchor: AnchorKind?
    /// What was checked: the policy kind, the host and the platform.
    public let policy: TrustPolicy
    /// The anchors that were in force.
    public let anchorsSummary: String
    /// The evaluation time.
    public let time: Date

    /// The host name checked, nil without one (basic X.509, or the SSL policy without a host).
    public var host: HostName? { policy.host }

    /// "valid" or the failures in plain words.
    public var reason: String {
        if isValid { return "valid" }
        if failures.isEmpty { return "invalid" }
        return failures.map(\.detail).joined(separator: "; ")
    }

    /// The distinct failure kinds, in order ("expired, host mismatch").
    public var failureKinds: [TrustFailure.Kind] {
        var seen: [TrustFailure.Kind] = []
        for failure in failures where !seen.contains(failure.kind) { seen.append(failure.kind) }
        return seen
    }

    /// One line for verdict steps: "passed, chain ends at a system anchor" / "failed — unknown issuer".
    public var outcomeSummary: String {
        if isValid {
            let noted = notes.map { "; " + $0 }.joined()
            return "passed (\(builtChain.count)-certificate chain ending at \(anchor?.description ?? "an anchor")\(noted))"
        }
        return "failed — " + reason
    }
}
