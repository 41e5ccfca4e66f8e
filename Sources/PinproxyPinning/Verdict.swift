import Foundation
import PinproxyCertificates

/// The judgement of one policy on one presented chain.
public struct Verdict: Sendable, Encodable {
    /// What the client does with the connection.
    public enum Decision: String, Sendable, Encodable {
        /// The client proceeds.
        case accept = "ACCEPT"
        /// The client refuses the server.
        case reject = "REJECT"
        /// Pinning failed but is not enforced: the client proceeds and reports the failure.
        case reportOnly = "REPORT-ONLY"
    }

    /// One thing the policy did, with its outcome in plain words.
    public struct Step: Sendable, Encodable, CustomStringConvertible {
        public var action: String
        public var outcome: String
        /// Set when this step reproduces a known weakness.
        public var weakness: Weakness?

        public var description: String {
            var line = "\(action): \(outcome)"
            if let weakness { line += " [weakness: \(weakness.name) — \(weakness.explanation)]" }
            return line
        }
    }

    public var decision: Decision
    public var family: PolicyFamily
    /// The library version or behaviour emulated ("4.x", "2.5.2", "cleaned-chain").
    public var profile: String
    public var host: String
    public var steps: [Step]
    /// Pins (or pinned certificates) found in the chain that was checked.
    public var matchedPins: [String]
    /// Configured pins that matched nothing.
    public var missingPins: [String]
    /// The chain the main trust evaluation built (leaf first).
    public var builtChain: [ChainEntry]
    /// The chain as the server presented it.
    public var presentedChain: [ChainEntry]
    /// The NSURLSession challenge disposition, for iOS families.
    public var disposition: String?

    /// How ``host`` reads for an evaluation without a host name (``DomainlessEvaluating``).
    public static let noDomainHost = "(no domain)"

    /// Whether the client goes on with the connection (ACCEPT or REPORT-ONLY).
    public var connectionProceeds: Bool { decision != .reject }

    /// Weaknesses reproduced by any step.
    public var weaknesses: [Weakness] {
        var out: [Weakness] = []
        for step in steps { if let w = step.weakness, !out.contains(w) { out.append(w) } }
        return out
    }

    private enum CodingKeys: String, CodingKey {
        case decision, family, profile, host, steps, matchedPins, missingPins, builtChain, presentedChain, disposition
    }
}

/// A known defect a step reproduces, named so a reviewer can look it up.
public struct Weakness: Sendable, Hashable, Encodable, CustomStringConvertible {
    public let name: String
    public let explanation: String

    public var description: String { name }

    /// AFNetworking 2.5.1: mode none trusted every certificate.
    public static let afnetworking251 = Weakness(
        name: "AFNetworking 2.5.1",
        explanation: "SSLPinningMode none accepted any certificate without evaluating the trust")
    /// AFNetworking 2.5.2: host names were not checked in mode none.
    public static let cve2015_3996 = Weakness(
        name: "CVE-2015-3996",
        explanation: "AFNetworking 2.5.2 did not validate the domain name in mode none, so a valid certificate for any other name passed")
    /// OkHttp before 2.7.5/3.1.2: pins checked against the raw presented chain.
    public static let cve2016_2402 = Weakness(
        name: "CVE-2016-2402",
        explanation: "pins were checked against the chain as presented, so appending the genuine certificate to a forged chain satisfied them")
    /// AFNetworking publicKey mode: keys compared on a chain nothing validated.
    public static let publicKeyWithoutRevalidation = Weakness(
        name: "publicKey mode without re-validation",
        explanation: "AFNetworking compares the keys of the certificates in the trust but never re-evaluates the chain against them; with allowInvalidCertificates nothing validated that chain")
    /// A policy that turns off chain validation altogether.
    public static let validationDisabled = Weakness(
        name: "validation disabled",
        explanation: "the chain is not validated, so any certificate is accepted")
    /// A host written with a trailing dot, skipping pins looked up by exact string.
    public static let trailingDotHost = Weakness(
        name: "trailing-dot host",
        explanation: "the URL host ends with a dot; pins looked up by the exact host string were set for the name without it and are skipped, while the TLS name check, which normalises the name, still passes")
    /// A pin set keyed by a host name in other letter case than the URL's, skipped by an exact lookup.
    public static let hostKeyCase = Weakness(
        name: "host key case",
        explanation: "the policy keys its pins by a host name that differs from the URL's host only in letter case; the library looks keys up as exact strings, finds none and falls back to the default evaluation without pins")
    /// A policy that accepts invalid chains without a pin to make up for it.
    public static let invalidChainAccepted = Weakness(
        name: "invalid chain accepted",
        explanation: "the chain failed evaluation and the policy accepts it anyway")
}

/// One certificate of a chain, summarised for reports.
public struct ChainEntry: Sendable, Encodable, CustomStringConvertible {
    public var index: Int
    public var subject: String
    public var issuer: String
    public var notBefore: String
    public var notAfter: String
    public var sha256Fingerprint: String
    public var spkiPin: String
    /// Where this certificate sits among the anchors of the evaluation, if it is one.
    public var anchor: String?

    public init(index: Int, certificate: Certificate, anchor: AnchorKind? = nil) {
        let iso = ISO8601DateFormatter()
        self.index = index
        self.subject = certificate.subject
        self.issuer = certificate.issuer
        self.notBefore = iso.string(from: certificate.notBefore)
        self.notAfter = iso.string(from: certificate.notAfter)
        self.sha256Fingerprint = certificate.sha256FingerprintText
        self.spkiPin = certificate.spkiPin.okhttp
        self.anchor = anchor?.rawValue
    }

    public var description: String {
        "#\(index) \(subject) (issuer \(issuer); valid \(notBefore) to \(notAfter); \(spkiPin)\(anchor.map { "; \($0) anchor" } ?? ""))"
    }
}

enum ChainSummary {
    /// The CN when there is one, else the whole subject.
    static func name(of certificate: Certificate) -> String {
        if let cn = certificate.subjectCommonName { return "CN=\(cn)" }
        let subject = certificate.subject
        return subject.isEmpty ? "empty subject" : subject
    }

    static func quote(_ name: String) -> String { name.isEmpty ? "an empty name" : "'\(name)'" }

    static func entries(_ chain: [Certificate], anchors: TrustAnchors? = nil, anchorOfLast: AnchorKind? = nil) -> [ChainEntry] {
        chain.enumerated().map { index, certificate in
            let isLast = index == chain.count - 1
            return ChainEntry(index: index, certificate: certificate, anchor: isLast ? anchorOfLast : nil)
        }
    }

    /// Where `certificate` sits: "certificate #1 of the validated chain" or of the presented chain.
    static func position(of certificate: Certificate, built: [Certificate], presented: [Certificate]) -> String {
        if let i = built.firstIndex(of: certificate) {
            return "certificate #\(i) of the built chain (\(name(of: certificate)))"
        }
        if let i = presented.firstIndex(of: certificate) {
            return "certificate #\(i) of the presented chain (\(name(of: certificate)); not part of the built chain)"
        }
        return name(of: certificate)
    }
}

/// Collects steps while a policy runs.
struct VerdictRecorder {
    private(set) var steps: [Verdict.Step] = []
    var matchedPins: [String] = []
    var missingPins: [String] = []
    var builtChain: [Certificate] = []
    var builtChainAnchor: AnchorKind?
    let family: PolicyFamily
    let profile: String
    /// The host as the verdict names it.
    let host: String
    let presentedChain: [Certificate]

    init(family: PolicyFamily, profile: String, trust: ServerTrust) {
        self.init(family: family, profile: profile, host: trust.hostAsWritten, presentedChain: trust.presentedChain)
    }

    init(family: PolicyFamily, profile: String, host: String, presentedChain: [Certificate]) {
        self.family = family
        self.profile = profile
        self.host = host
        self.presentedChain = presentedChain
    }

    mutating func step(_ action: String, _ outcome: String, weakness: Weakness? = nil) {
        steps.append(Verdict.Step(action: action, outcome: outcome, weakness: weakness))
    }

    /// Looks for the first certificate of `chain` whose SPKI pin is in `pins` (bare
    /// base64 notation, as TrustKit and Android write them), records the matched and
    /// missing pins and one step, and says whether a pin matched.
    mutating func matchSPKIPins(_ pins: [SPKIPin], over chain: [Certificate], step action: String) -> Bool {
        for (index, certificate) in chain.enumerated() where pins.contains(certificate.spkiPin) {
            matchedPins = [certificate.spkiPin.base64]
            missingPins = pins.filter { $0 != certificate.spkiPin }.map(\.base64)
            step(action, "accept: \(certificate.spkiPin.base64) matched certificate #\(index) (\(ChainSummary.name(of: certificate)))")
            return true
        }
        missingPins = pins.map(\.base64)
        return false
    }

    /// Records the main evaluation's chain for the verdict.
    mutating func use(_ evaluation: TrustEvaluation) {
        builtChain = evaluation.builtChain
        builtChainAnchor = evaluation.anchor
    }

    func finish(_ decision: Verdict.Decision, disposition: String? = nil) -> Verdict {
        Verdict(
            decision: decision, family: family, profile: profile, host: host,
            steps: steps, matchedPins: matchedPins, missingPins: missingPins,
            builtChain: ChainSummary.entries(builtChain, anchorOfLast: builtChainAnchor),
            presentedChain: ChainSummary.entries(presentedChain),
            disposition: disposition)
    }
}
