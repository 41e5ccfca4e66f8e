import Foundation
import PinproxyCertificates

/// Alamofire 5's `ServerTrustManager` with its evaluators.
///
/// Evaluators are looked up by the challenge's host as the URL wrote it, as exact dictionary
/// keys (`ServerTrustManager.serverTrustEvaluator(forHost:)` is `evaluators[host]`): `api.example.com.`
/// finds no evaluator set for `api.example.com`, and a key written `API.example.com` matches no
/// lower-case URL host (keys are kept as the policy writes them). A host without one is refused when
/// `allHostsMustBeEvaluated` (the default), else left to URLSession's default handling (the
/// system evaluation with the host name) — the trailing dot then skips the pins.
///
/// Evaluations share one trust, as in Alamofire: anchors set by a
/// `PinnedCertificatesTrustEvaluator` with `acceptSelfSignedCertificates` stay in
/// force for the evaluators after it in a `CompositeTrustEvaluator`. "Default
/// validation" is the SSL policy without a host name (`SecPolicyCreateSSL(true, nil)`: the
/// serverAuth extended key usage and Apple's algorithm floors still apply); "host
/// validation" adds the name.
///
/// A pin check that validates nothing itself is reported as "validation disabled" only
/// when no evaluator of the whole composite validates the chain: every evaluator of a
/// composite must pass, so a validating one before or after it covers the chain.
public struct AlamofirePolicy: PinningPolicy {
    /// One `ServerTrustEvaluating` value.
    public indirect enum Evaluator: Sendable {
        case defaultEvaluator(validateHost: Bool)
        case pinnedCertificates(certificates: [Certificate], acceptSelfSignedCertificates: Bool, performDefaultValidation: Bool, validateHost: Bool)
        case publicKeys(keys: [SPKIPin], performDefaultValidation: Bool, validateHost: Bool)
        case composite([Evaluator])
        case disabled
        case revocation(performDefaultValidation: Bool, validateHost: Bool, options: RevocationOptions)

        /// Whether this evaluator, or one inside it, validates the chain.
        var validates: Bool {
            switch self {
            case .defaultEvaluator: return true
            case .pinnedCertificates(_, _, let performDefault, let validateHost), .publicKeys(_, let performDefault, let validateHost):
                return performDefault || validateHost
            case .composite(let children): return children.contains { $0.validates }
            case .disabled: return false
            case .revocation: return true
            }
        }

        /// Whether this evaluator, or one inside it, pins `certificate` (nil: it pins nothing).
        func refersTo(_ certificate: Certificate) -> Bool? {
            switch self {
            case .pinnedCertificates(let certificates, _, _, _): return certificates.holdsKey(of: certificate)
            case .publicKeys(let keys, _, _): return keys.pinsKey(of: certificate)
            case .composite(let children): return children.reduce(nil as Bool?) { $0 || $1.refersTo(certificate) }
            case .defaultEvaluator, .disabled, .revocation: return nil
            }
        }

        var name: String {
            switch self {
            case .defaultEvaluator: return "DefaultTrustEvaluator"
            case .pinnedCertificates: return "PinnedCertificatesTrustEvaluator"
            case .publicKeys: return "PublicKeysTrustEvaluator"
            case .composite: return "CompositeTrustEvaluator"
            case .disabled: return "DisabledTrustEvaluator"
            case .revocation: return "RevocationTrustEvaluator"
            }
        }
    }

    /// Evaluators by host name, exactly as written (Alamofire's keys are case-sensitive).
    public var evaluators: [String: Evaluator]
    public var allHostsMustBeEvaluated: Bool

    public init(evaluators: [String: Evaluator], allHostsMustBeEvaluated: Bool = true) {
        self.evaluators = evaluators
        self.allHostsMustBeEvaluated = allHostsMustBeEvaluated
    }

    public var family: PolicyFamily { .alamofire }
    public var profile: String { "5.x" }

    static let performDefaultHandling = "URLSession.AuthChallengeDisposition.performDefaultHandling"
    static let useCredential = "URLSession.AuthChallengeDisposition.useCredential"
    static let cancel = "URLSession.AuthChallengeDisposition.cancelAuthenticationChallenge"

    /// The certificates and keys of every evaluator, for any host.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        evaluators.values.reduce(nil as Bool?) { $0 || $1.refersTo(certificate) }
    }

    /// Why no evaluator has `host` as its key (keys are exact strings), and what Alamofire then does.
    public func uncoveredReason(host: HostName) -> String? {
        guard evaluators[host.description] == nil else { return nil }
        return "no Alamofire evaluator has it as its key (\(evaluators.keys.sorted().distinctList))"
            + (allHostsMustBeEvaluated
                ? ", so allHostsMustBeEvaluated refuses every connection to it, the genuine server's too"
                : ", so URLSession's default handling applies")
    }

    /// Inside the handshake: the `ServerTrustManager`'s evaluator answers NSURLSession's
    /// server-trust challenge, and a refusal cancels it, aborting the handshake.
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint { .handshake }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let host = trust.hostAsWritten
        guard let evaluator = evaluators[host] else {
            let dotless = trust.hasTrailingDot && evaluators[trust.host.description] != nil
            let caseVariant = evaluators.keys.first { $0 != host && $0.lowercased() == host }
            let why: String
            if dotless {
                why = "no evaluator for \(host) (the keys are exact host strings; \(trust.host) has one)"
            } else if let caseVariant {
                why = "no evaluator for \(host) (the keys are exact, case-sensitive host strings; \(caseVariant) differs in case)"
            } else {
                why = "no evaluator for this host"
            }
            if allHostsMustBeEvaluated {
                record.step("ServerTrustManager lookup for \(host)", "reject: \(why) and allHostsMustBeEvaluated is true (AFError.serverTrustEvaluationFailed(.noRequiredEvaluator))")
                return record.finish(.reject, disposition: Self.cancel)
            }
            let evaluation = trust.evaluate(.ssl(host: trust.host, platform: .apple), anchors: .device(trust.store))
            record.use(evaluation)
            record.step("ServerTrustManager lookup for \(host)", "\(why); URLSession performs its default handling",
                        weakness: !evaluation.isValid ? nil : dotless ? .trailingDotHost : caseVariant != nil ? .hostKeyCase : nil)
            record.step("system evaluation with the SSL policy for \(trust.host)", evaluation.outcomeSummary)
            return record.finish(evaluation.isValid ? .accept : .reject, disposition: Self.performDefaultHandling)
        }
        record.step("ServerTrustManager lookup for \(host)", "\(evaluator.name)")
        var state = TrustState(anchors: .device(trust.store), chainValidated: evaluator.validates)
        let passed = run(evaluator, trust: trust, state: &state, record: &record)
        return record.finish(passed ? .accept : .reject, disposition: passed ? Self.useCredential : Self.cancel)
    }

    /// What the evaluators have done to the shared trust so far.
    struct TrustState {
        var anchors: TrustAnchors
        var lastEvaluation: TrustEvaluation?
        /// Whether some evaluator of the whole tree validates the chain.
        let chainValidated: Bool

        init(anchors: TrustAnchors, chainValidated: Bool) {
            self.anchors = anchors
            self.chainValidated = chainValidated
        }
    }

    private func run(_ evaluator: Evaluator, trust: ServerTrust, state: inout TrustState, record: inout VerdictRecorder) -> Bool {
        func validate(_ what: String, host: HostName?) -> Bool {
            let evaluation = trust.evaluate(.ssl(host: host, platform: .apple), anchors: state.anchors)
            state.lastEvaluation = evaluation
            record.use(evaluation)
            record.step("\(evaluator.name): \(what) against \(state.anchors.summary)", evaluation.outcomeSummary)
            return evaluation.isValid
        }
        /// The certificates of the trust: the chain of the last evaluation, or of a basic one if none ran.
        func certificatesInTrust() -> [Certificate] {
            if let last = state.lastEvaluation { return last.builtChain }
            let evaluation = trust.evaluate(.basicX509(platform: .apple), anchors: state.anchors)
            record.use(evaluation)
            return evaluation.builtChain
        }
        switch evaluator {
        case .disabled:
            if state.chainValidated {
                record.step("DisabledTrustEvaluator", "pass: performs no validation itself; the composite validates the chain")
            } else {
                record.step("DisabledTrustEvaluator", "accept: performs no validation at all", weakness: .validationDisabled)
            }
            return true
        case .defaultEvaluator(let validateHost):
            if validateHost && !validate("host validation (SSL policy for \(trust.host))", host: trust.host) { return false }
            return validate("default validation (SSL policy without a host name)", host: nil)
        case .revocation(let performDefault, let validateHost, let options):
            if performDefault && !validate("default validation (SSL policy without a host name)", host: nil) { return false }
            if validateHost && !validate("host validation (SSL policy for \(trust.host))", host: trust.host) { return false }
            return checkRevocation(options, trust: trust, state: &state, record: &record)
        case .composite(let children):
            for (index, child) in children.enumerated() {
                record.step("CompositeTrustEvaluator", "evaluator \(index + 1) of \(children.count): \(child.name)")
                if !run(child, trust: trust, state: &state, record: &record) {
                    record.step("CompositeTrustEvaluator", "reject: evaluator \(index + 1) failed")
                    return false
                }
            }
            return true
        case .pinnedCertificates(let certificates, let acceptSelfSigned, let performDefault, let validateHost):
            guard !certificates.isEmpty else {
                record.step("PinnedCertificatesTrustEvaluator", "reject: no certificates to pin (AFError.serverTrustEvaluationFailed(.noCertificatesFound))")
                return false
            }
            if acceptSelfSigned {
                state.anchors = .only(certificates)
                record.step("PinnedCertificatesTrustEvaluator", "acceptSelfSignedCertificates: the \(certificates.countText) become the only anchors")
            }
            if performDefault && !validate("default validation (SSL policy without a host name)", host: nil) { return false }
            if validateHost && !validate("host validation (SSL policy for \(trust.host))", host: trust.host) { return false }
            let chain = certificatesInTrust()
            let matches = chain.filter { certificates.contains($0) }
            record.matchedPins = matches.map(\.sha256FingerprintText)
            record.missingPins = certificates.filter { !matches.contains($0) }.map(\.sha256FingerprintText)
            guard let first = matches.first else {
                record.step("PinnedCertificatesTrustEvaluator: pinned certificates in the trust's \(chain.countText)", "reject: none of them is pinned (.certificatePinningFailed)")
                return false
            }
            let unvalidated = !performDefault && !validateHost
            record.step("PinnedCertificatesTrustEvaluator: pinned certificates in the trust's \(chain.countText)",
                        "accept: \(ChainSummary.name(of: first)) is pinned" + (unvalidated ? Self.unvalidatedNote(state) : ""),
                        weakness: unvalidated && !acceptSelfSigned && !state.chainValidated ? .validationDisabled : nil)
            return true
        case .publicKeys(let keys, let performDefault, let validateHost):
            guard !keys.isEmpty else {
                record.step("PublicKeysTrustEvaluator", "reject: no public keys to pin (AFError.serverTrustEvaluationFailed(.noPublicKeysFound))")
                return false
            }
            if performDefault && !validate("default validation (SSL policy without a host name)", host: nil) { return false }
            if validateHost && !validate("host validation (SSL policy for \(trust.host))", host: trust.host) { return false }
            let chain = certificatesInTrust()
            let matches = chain.filter { keys.contains($0.spkiPin) }
            record.matchedPins = matches.map(\.spkiPin.okhttp)
            record.missingPins = keys.filter { key in !matches.contains { $0.spkiPin == key } }.map(\.okhttp)
            guard let first = matches.first else {
                record.step("PublicKeysTrustEvaluator: pinned keys in the trust's \(chain.countText)", "reject: no key is pinned (.publicKeyPinningFailed)")
                return false
            }
            let unvalidated = !performDefault && !validateHost
            record.step("PublicKeysTrustEvaluator: pinned keys in the trust's \(chain.countText)",
                        "accept: \(first.spkiPin.okhttp) of \(ChainSummary.name(of: first)) is pinned" + (unvalidated ? Self.unvalidatedNote(state) : ""),
                        weakness: unvalidated && !state.chainValidated ? .validationDisabled : nil)
            return true
        }
    }

    /// How a pin check that validates nothing itself is qualified.
    private static func unvalidatedNote(_ state: TrustState) -> String {
        state.chainValidated
            ? " (this evaluator validates nothing itself; the composite validates the chain)"
            : " (no validation ran)"
    }
}
