internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// Builds and validates a presented chain the way one platform does: the `SecTrustEvaluate`
/// of this harness, one ``VerifierProfile`` per platform.
///
/// OpenSSL builds the chain from the leaf through the presented certificates (in any order,
/// extras allowed) to one of the given anchors, and verifies the signatures; any anchor ends
/// the chain, self-signed or not (`X509_V_FLAG_PARTIAL_CHAIN`), as
/// `SecTrustSetAnchorCertificates`, Android and Java trust anchors behave — a pinned leaf is
/// its own anchor. OpenSSL's strict mode is never on: no platform is that strict (it refuses
/// certificates without key identifiers, CAs without keyUsage, empty subjectAltNames).
/// Then the profile's policies judge the built chain: validity at an explicit time, issuer
/// constraints, the leaf's key usages for the SSL policy (``TrustPolicy``), the host, name
/// constraints, the algorithm floor. For curl, OpenSSL's own verification with the settings
/// curl gives it (purpose TLS server, libssl's default security level) is the platform's, and everything it
/// reports counts; curl then checks the host itself.
///
/// It never stops at the first error: every error is recorded and the
/// evaluation goes on, so the result names all failures and carries the chain
/// as far as it could be built.
public enum TrustEvaluator {
    /// Evaluates `presentedChain` (leaf first) under `policy` at `time`.
    public static func evaluate(
        _ presentedChain: [Certificate], policy: TrustPolicy, at time: Date, anchors: TrustAnchors
    ) -> TrustEvaluation {
        func failed(_ detail: String) -> TrustEvaluation {
            TrustEvaluation(
                isValid: false,
                failures: [TrustFailure(kind: .other, code: -1, depth: 0, detail: detail)], notes: [],
                builtChain: [], anchor: nil, policy: policy, anchorsSummary: anchors.summary, time: time)
        }
        guard let leaf = presentedChain.first else { return failed("no certificate was presented") }
        let profile = VerifierProfile.of(policy)
        ERR_clear_error()
        defer { ERR_clear_error() }

        guard let store = X509_STORE_new() else { return failed("internal error: X509_STORE_new failed") }
        defer { X509_STORE_free(store) }
        for anchor in anchors.all { _ = X509_STORE_add_cert(store, anchor.pointer) }
        if profile.issuerMatching == .nameAndSignature {
            pp_x509_store_match_issuers_by_signature(store, profile.nullParametersEquivalent ? 1 : 0)
        }

        guard let untrusted = pp_sk_X509_new_null() else { return failed("internal error: out of memory") }
        defer { pp_sk_X509_pop_free(untrusted) }
        for certificate in presentedChain { _ = pp_sk_X509_push_ref(untrusted, certificate.pointer) }

        guard let ctx = X509_STORE_CTX_new() else { return failed("internal error: X509_STORE_CTX_new failed") }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, store, leaf.pointer, untrusted) == 1,
              let param = X509_STORE_CTX_get0_param(ctx) else {
            return failed("internal error: X509_STORE_CTX_init failed")
        }
        X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        X509_VERIFY_PARAM_set_time(param, time_t(time.timeIntervalSince1970.rounded(.down)))
        if profile.isOpenSSLVerification { configureAsCurl(param, policy: policy) }

        guard let log = pp_verify_log_new() else { return failed("internal error: out of memory") }
        defer { pp_verify_log_free(log) }
        let rc = pp_x509_verify_collecting(ctx, log)

        // The chain the evaluator built. OpenSSL keeps it in the context after a
        // failure too, as far as building got: that partial chain is what a
        // client's "certificates in the trust" are, never the presented list.
        var built: [Certificate] = []
        if let stack = X509_STORE_CTX_get1_chain(ctx) {
            for i in 0..<pp_sk_X509_num(stack) {
                if let x = pp_sk_X509_value(stack, i) { built.append(Certificate(borrowing: x)) }
            }
            pp_sk_X509_pop_free(stack)
        }
        if built.isEmpty { built = [leaf] }
        // An anchor ends the chain. OpenSSL matches a trusted leaf only as a last
        // resort, after it appended presented issuers; nothing above the anchor
        // is part of what the client trusts.
        let anchorSet = anchors.all
        if let end = built.firstIndex(where: { anchorSet.contains($0) }) {
            built = Array(built[...end])
        }
        let anchor = anchors.kind(of: built.last!)

        var reported: [TrustFailure] = []
        for i in 0..<pp_verify_log_count(log) {
            let code = Int(pp_verify_log_code(log, i))
            let depth = Int(pp_verify_log_depth(log, i))
            reported.append(describe(code: code, depth: depth, chain: built, policy: policy, time: time))
        }
        if rc <= 0 && reported.isEmpty {
            let errors = OpenSSL.drainErrors().joined(separator: "; ")
            reported.append(TrustFailure(kind: .other, code: -1, depth: 0,
                                         detail: "the evaluation could not run" + (errors.isEmpty ? "" : " (\(errors))")))
        }
        let building = profile.isOpenSSLVerification ? reported : buildingFailures(reported, chain: built, anchor: anchor, profile: profile)
        let context = VerificationContext(chain: built, anchor: anchor, policy: policy, time: time, buildingFailures: building,
                                          presented: presentedChain)
        let failures = building + profile.policies.flatMap { $0.failures(context) }
        return TrustEvaluation(
            isValid: failures.isEmpty && rc == 1,
            failures: failures,
            notes: profile.policies.flatMap { $0.notes(context) },
            builtChain: built,
            anchor: anchor,
            policy: policy,
            anchorsSummary: anchors.summary,
            time: time)
    }

    /// curl's settings for OpenSSL's verification (lib/vtls/openssl.c): purpose TLS server
    /// (libssl's default for a client) and the security level curl's `SSL_CTX` is created with
    /// (``CurlSecurityLevel``: signatures below anchors and keys under its bits of security are
    /// refused). curl checks the host itself, after OpenSSL (``CurlHost``), so OpenSSL is given none.
    static func configureAsCurl(_ param: OpaquePointer, policy: TrustPolicy) {
        if policy.kind == .ssl { _ = X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER) }
        X509_VERIFY_PARAM_set_auth_level(param, Int32(CurlSecurityLevel.current))
    }

    /// What OpenSSL found while building the chain and verifying its signatures — the part of
    /// its report every platform shares; the rest is the profile's policies' to judge. Nothing
    /// above the anchor counts, and a signature that fails only on an absent versus NULL
    /// parameter counts where the platform reads them as equal. Where the platform does not apply
    /// an anchor's own name constraints and the anchor has some, OpenSSL's name-constraint errors
    /// are left to ``NameConstraintsBelowAnchor``.
    static func buildingFailures(_ reported: [TrustFailure], chain: [Certificate], anchor: AnchorKind?, profile: VerifierProfile) -> [TrustFailure] {
        let anchorConstraintsSetAside = anchor != nil && profile.anchorIsNameAndKey && chain.last?.nameConstraints != nil
        return reported.filter { failure in
            guard buildingCodes.contains(Int32(failure.code)) || failure.code == -1 else { return false }
            if anchor != nil && failure.depth >= chain.count { return false }
            if anchorConstraintsSetAside && nameConstraintCodes.contains(Int32(failure.code)) { return false }
            // The JDK reads names its own way: every CA's constraints are checked by ``NameConstraintsBelowAnchor``.
            if profile.platform == .jvm && nameConstraintCodes.contains(Int32(failure.code)) { return false }
            // An anchor that is a name and a key has no extensions to understand.
            if profile.anchorIsNameAndKey && anchor != nil && failure.depth == chain.count - 1
                && Int32(failure.code) == X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION { return false }
            if Int32(failure.code) == X509_V_ERR_CERT_SIGNATURE_FAILURE && profile.nullParametersEquivalent,
               failure.depth < chain.count {
                let certificate = chain[failure.depth]
                let issuer = failure.depth + 1 < chain.count ? chain[failure.depth + 1] : certificate
                if certificate.signatureVerifies(under: issuer, nullParametersEquivalent: true) { return false }
            }
            return true
        }
    }

    /// The errors of chain building, signatures, name constraints, trust settings and
    /// unreadable or critical-but-unknown extensions: every platform refuses those.
    static let buildingCodes: Set<Int32> = [
        X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
        X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
        X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_CHAIN_TOO_LONG,
        X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
        X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY,
        X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION, X509_V_ERR_SUBTREE_MINMAX,
        X509_V_ERR_UNSUPPORTED_CONSTRAINT_TYPE, X509_V_ERR_UNSUPPORTED_CONSTRAINT_SYNTAX,
        X509_V_ERR_UNSUPPORTED_NAME_SYNTAX,
        X509_V_ERR_CERT_UNTRUSTED, X509_V_ERR_CERT_REJECTED,
        X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION, X509_V_ERR_INVALID_EXTENSION,
        X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD,
    ]

    /// OpenSSL's name-constraint errors.
    static let nameConstraintCodes: Set<Int32> = [
        X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION, X509_V_ERR_SUBTREE_MINMAX,
        X509_V_ERR_UNSUPPORTED_CONSTRAINT_TYPE, X509_V_ERR_UNSUPPORTED_CONSTRAINT_SYNTAX,
        X509_V_ERR_UNSUPPORTED_NAME_SYNTAX,
    ]

    /// curl's CN comparison for a leaf without DNS or IP SANs; nil when the CN matches.
    static func commonNameMismatch(leaf: Certificate, host: HostName) -> TrustFailure? {
        let commonName = CurlHostCheck.lastCommonName(of: leaf)
        if let commonName, CurlHostCheck.matches(pattern: commonName, host: host) { return nil }
        let which = "certificate #0 (\(ChainSummary.name(of: leaf)))"
        return TrustFailure(
            kind: .hostMismatch, code: Int(X509_V_ERR_HOSTNAME_MISMATCH), depth: 0,
            detail: "host mismatch: \(which) is not valid for \(host): it has no DNS or IP subjectAltName, so curl compared the subject CN " +
                (commonName.map { "'\($0)', which does not match (curl's hostcheck: whole leftmost-label wildcards only)" } ?? "and it has none"))
    }
}
