import Foundation
import PinproxyCertificates

/// AFNetworking's `AFSecurityPolicy`, as `evaluateServerTrust:forDomain:` decides.
///
/// The 4.x steps, in order (the step lines of the verdict follow them):
/// 1. If a domain is given (AFURLSessionManager always gives the challenge's host; an app
///    calling the method itself may pass nil, see ``evaluateWithoutDomain(_:at:store:)``),
///    `allowInvalidCertificates` and `validatesDomainName` are both set and there is nothing
///    to pin against (mode none, or no pinned certificates): reject — "In order to validate
///    a domain name for self signed certificates, you MUST use pinning."
/// 2. Trust policy: SSL with the host name (none for a nil domain) if `validatesDomainName`, else basic X.509
///    (`SecPolicyCreateBasicX509()`: no extended key usage, no name, none of the SSL
///    policy's SHA-1 and RSA-2048 floors).
/// 3. Mode none: accept iff `allowInvalidCertificates` or the trust evaluates valid
///    against the device anchors (system and user-installed).
/// 4. Other modes: reject if the trust is invalid and `allowInvalidCertificates` is not set.
/// 5. Mode certificate: the pinned certificates become the ONLY anchors; the trust must
///    evaluate valid again; accept iff a certificate of that evaluated chain is
///    byte-equal to a pinned certificate.
/// 6. Mode publicKey: accept iff the public key of a certificate in the trust equals a
///    pinned key. Nothing re-evaluates the chain against the pinned keys, so with
///    `allowInvalidCertificates` no validation stands behind the match.
///
/// "The certificates in the trust" are the chain the evaluator built in step 2
/// (after a failure, the partial chain it reached), never the raw presented list.
///
/// Profiles `2.5.1` and `2.5.2` change only mode none: 2.5.1 returns YES without
/// evaluating anything; 2.5.2 evaluates with basic X.509, so without the host name
/// (CVE-2015-3996: `validatesDomainName` defaulted to NO there). Outside mode none they
/// follow the 4.x steps.
public struct AFNetworkingPolicy: DomainlessEvaluating {
    /// `AFSSLPinningMode`.
    public enum PinningMode: String, Sendable, CaseIterable {
        case none
        case publicKey
        case certificate
    }

    /// The AFNetworking release emulated.
    public enum Profile: String, Sendable, CaseIterable {
        case current = "4.x"
        case v2_5_1 = "2.5.1"
        case v2_5_2 = "2.5.2"
    }

    public var mode: PinningMode
    public var allowInvalidCertificates: Bool
    public var validatesDomainName: Bool
    /// The `.cer` files shipped with the app.
    public var pinnedCertificates: [Certificate]
    public var release: Profile

    public init(
        mode: PinningMode = .none, allowInvalidCertificates: Bool = false, validatesDomainName: Bool = true,
        pinnedCertificates: [Certificate] = [], profile: Profile = .current
    ) {
        self.mode = mode
        self.allowInvalidCertificates = allowInvalidCertificates
        self.validatesDomainName = validatesDomainName
        self.pinnedCertificates = pinnedCertificates
        self.release = profile
    }

    public var family: PolicyFamily { .afnetworking }
    public var profile: String { release.rawValue }

    public static let useCredential = "NSURLSessionAuthChallengeUseCredential"
    public static let cancelChallenge = "NSURLSessionAuthChallengeCancelAuthenticationChallenge"

    /// Nil: an `AFSecurityPolicy` applies to every connection its session makes.
    public func uncoveredReason(host: HostName) -> String? { nil }

    /// The pinned certificates, by key (a certificate-mode pin of a re-issued certificate with
    /// the same key is still the user's own material); nil in mode none, which ignores them.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        mode == .none ? nil : pinnedCertificates.holdsKey(of: certificate)
    }

    /// Inside the handshake: AFNetworking answers NSURLSession's server-trust challenge, and a
    /// refusal cancels it, aborting the handshake.
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint { .handshake }

    /// What one call of `evaluateServerTrust:forDomain:` is given.
    struct Call {
        var chain: [Certificate]
        /// nil for `forDomain:nil`.
        var domain: HostName?
        var named: String
        var time: Date
        var store: TrustStore

        func evaluate(_ policy: TrustPolicy, anchors: TrustAnchors) -> TrustEvaluation {
            TrustEvaluator.evaluate(chain, policy: policy, at: time, anchors: anchors)
        }
    }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        decide(Call(chain: trust.presentedChain, domain: trust.host, named: trust.hostAsWritten, time: trust.time, store: trust.store))
    }

    /// `evaluateServerTrust:forDomain:nil`: no contradiction guard, and the SSL policy without a host name.
    public func evaluateWithoutDomain(_ presentedChain: [Certificate], at time: Date, store: TrustStore) -> Verdict {
        decide(Call(chain: presentedChain, domain: nil, named: Verdict.noDomainHost, time: time, store: store))
    }

    private func decide(_ call: Call) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, host: call.named, presentedChain: call.chain)
        func accept() -> Verdict { record.finish(.accept, disposition: Self.useCredential) }
        func reject() -> Verdict { record.finish(.reject, disposition: Self.cancelChallenge) }
        let settings = "SSLPinningMode \(mode.rawValue), allowInvalidCertificates \(yes(allowInvalidCertificates)), validatesDomainName \(yes(validatesDomainName)), \(pinnedCertificates.countText) pinned"

        if release == .v2_5_1 && mode == .none {
            record.step("AFNetworking 2.5.1 with \(settings)", "mode none returns YES without evaluating the trust", weakness: .afnetworking251)
            return accept()
        }

        // Step 1: the contradiction guard, only when a domain is given.
        let contradiction = allowInvalidCertificates && validatesDomainName && (mode == .none || pinnedCertificates.isEmpty)
        if contradiction && call.domain == nil {
            record.step("step 1, contradiction guard (\(settings))", "skipped: no domain was given, and the guard applies only with one")
        } else if contradiction {
            record.step("step 1, contradiction guard (\(settings))",
                        "reject: allowInvalidCertificates with validatesDomainName needs pinned certificates — \"In order to validate a domain name for self signed certificates, you MUST use pinning.\"")
            return reject()
        } else {
            record.step("step 1, contradiction guard (\(settings))", "passed")
        }

        // Step 2: the trust policy.
        var policy: TrustPolicy = validatesDomainName ? .ssl(host: call.domain, platform: .apple) : .basicX509(platform: .apple)
        var policyWeakness: Weakness? = nil
        if release == .v2_5_2 && mode == .none && validatesDomainName {
            policy = .basicX509(platform: .apple)
            policyWeakness = .cve2015_3996
        }
        let anchors = TrustAnchors.device(call.store)
        let evaluation = call.evaluate(policy, anchors: anchors)
        record.use(evaluation)
        record.step("step 2, trust evaluation with the \(policy) against \(anchors.summary)",
                    evaluation.outcomeSummary, weakness: policyWeakness)

        // Step 3: mode none.
        if mode == .none {
            if evaluation.isValid {
                record.step("step 3, mode none", "accept: the trust evaluated valid",
                            weakness: policyWeakness != nil && !evaluationWithHostIsValid(call) ? policyWeakness : nil)
                return accept()
            }
            if allowInvalidCertificates {
                record.step("step 3, mode none", "accept: allowInvalidCertificates is YES, so the failed evaluation is ignored", weakness: .invalidChainAccepted)
                return accept()
            }
            record.step("step 3, mode none", "reject: the trust is invalid and allowInvalidCertificates is NO")
            return reject()
        }

        // Step 4: an invalid trust is fatal unless invalid certificates are allowed.
        if !evaluation.isValid {
            if !allowInvalidCertificates {
                record.step("step 4, trust validity", "reject: the trust is invalid and allowInvalidCertificates is NO")
                return reject()
            }
            record.step("step 4, trust validity", "continue: the trust is invalid but allowInvalidCertificates is YES")
        } else {
            record.step("step 4, trust validity", "continue: the trust is valid")
        }

        let decision: Verdict.Decision
        switch mode {
        case .certificate: decision = evaluateCertificateMode(call, policy: policy, record: &record)
        case .publicKey: decision = evaluatePublicKeyMode(evaluation, record: &record)
        case .none: decision = .reject
        }
        return decision == .accept ? accept() : reject()
    }

    private func evaluateCertificateMode(
        _ call: Call, policy: TrustPolicy, record: inout VerdictRecorder
    ) -> Verdict.Decision {
        let anchors = TrustAnchors.only(pinnedCertificates)
        let evaluation = call.evaluate(policy, anchors: anchors)
        record.step("step 5, re-evaluation with the \(policy) and the \(pinnedCertificates.countText) pinned as the only anchors (SecTrustSetAnchorCertificates)",
                    evaluation.outcomeSummary)
        guard evaluation.isValid else {
            record.missingPins = pinnedCertificates.map(\.sha256FingerprintText)
            record.step("step 5, certificate pinning", "reject: the trust is not valid with the pinned certificates as anchors")
            return .reject
        }
        record.use(evaluation)
        // AFNetworking walks the evaluated chain from the anchor end down.
        for certificate in evaluation.builtChain.reversed() where pinnedCertificates.contains(certificate) {
            let index = evaluation.builtChain.firstIndex(of: certificate)!
            record.matchedPins = [certificate.sha256FingerprintText]
            record.missingPins = pinnedCertificates.filter { $0 != certificate }.map(\.sha256FingerprintText)
            record.step("step 5, certificate pinning",
                        "accept: pinned certificate \(ChainSummary.name(of: certificate)) (SHA-256 \(certificate.sha256FingerprintText)) is certificate #\(index) of the evaluated chain")
            return .accept
        }
        record.missingPins = pinnedCertificates.map(\.sha256FingerprintText)
        record.step("step 5, certificate pinning", "reject: no certificate of the evaluated chain equals a pinned certificate")
        return .reject
    }

    private func evaluatePublicKeyMode(
        _ evaluation: TrustEvaluation, record: inout VerdictRecorder
    ) -> Verdict.Decision {
        let pinnedKeys = pinnedCertificates.map(\.spkiPin)
        let inTrust = evaluation.builtChain
        var matched: [(SPKIPin, Int)] = []
        for (index, certificate) in inTrust.enumerated() where pinnedKeys.contains(certificate.spkiPin) {
            if !matched.contains(where: { $0.0 == certificate.spkiPin }) { matched.append((certificate.spkiPin, index)) }
        }
        record.matchedPins = matched.map { $0.0.okhttp }
        record.missingPins = pinnedKeys.filter { key in !matched.contains { $0.0 == key } }.map(\.okhttp)
        let scope = "the public keys of the \(inTrust.countText) in the trust (the chain built in step 2\(evaluation.isValid ? "" : ", partial because the evaluation failed"))"
        guard let first = matched.first else {
            record.step("step 6, public key pinning over \(scope)", "reject: no key equals a pinned key")
            return .reject
        }
        let weakness: Weakness? = evaluation.isValid ? nil : .publicKeyWithoutRevalidation
        record.step("step 6, public key pinning over \(scope)",
                    "accept: pinned key \(first.0.okhttp) matched certificate #\(first.1) (\(ChainSummary.name(of: inTrust[first.1])))" +
                    (evaluation.isValid ? "" : " of a chain that failed validation; nothing re-validates it"),
                    weakness: weakness)
        return .accept
    }

    /// Whether the chain would also pass with the host checked, to tell whether CVE-2015-3996
    /// changed the outcome (without a domain there is no host to miss).
    private func evaluationWithHostIsValid(_ call: Call) -> Bool {
        guard let domain = call.domain else { return true }
        return call.evaluate(.ssl(host: domain, platform: .apple), anchors: .device(call.store)).isValid
    }
}

func yes(_ value: Bool) -> String { value ? "YES" : "NO" }
