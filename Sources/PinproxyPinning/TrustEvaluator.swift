internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// Builds and validates a presented chain on OpenSSL: the `SecTrustEvaluate` of this harness.
///
/// What it checks, with the choices that differ from OpenSSL's defaults:
/// - chain building from the leaf through the presented certificates (in any
///   order, extras allowed) to one of the given anchors;
/// - strict X.509 (`X509_V_FLAG_X509_STRICT`); purpose TLS server for the SSL policy
///   (serverAuth in the leaf's extended key usage when it has one), no purpose for basic
///   X.509 (see ``TrustPolicy``);
/// - any anchor ends the chain, self-signed or not (`X509_V_FLAG_PARTIAL_CHAIN`),
///   as `SecTrustSetAnchorCertificates`, Android and Java trust anchors behave —
///   a pinned leaf is its own anchor;
/// - the host against subjectAltName entries only, with no partial-label wildcards, IP
///   literals against IP SANs — except on curl, which falls back to the subject CN when the
///   leaf has no DNS or IP SAN at all (``CurlHostCheck``);
/// - validity at an explicit time;
/// - after OpenSSL: every name a wildcard SAN can match against the CAs' name constraints
///   (``WildcardConstraints``), and the platform's algorithm floor (``AlgorithmFloor``; for
///   curl, OpenSSL's security level 1 during the verification, as curl's `SSL_CTX` sets it
///   through `ssl_verify_cert_chain`).
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
                failures: [TrustFailure(kind: .other, code: -1, depth: 0, detail: detail)],
                builtChain: [], anchor: nil, policy: policy, anchorsSummary: anchors.summary, time: time)
        }
        guard let leaf = presentedChain.first else { return failed("no certificate was presented") }
        ERR_clear_error()
        defer { ERR_clear_error() }

        guard let store = X509_STORE_new() else { return failed("internal error: X509_STORE_new failed") }
        defer { X509_STORE_free(store) }
        for anchor in anchors.all { _ = X509_STORE_add_cert(store, anchor.pointer) }

        guard let untrusted = pp_sk_X509_new_null() else { return failed("internal error: out of memory") }
        defer { pp_sk_X509_pop_free(untrusted) }
        for certificate in presentedChain { _ = pp_sk_X509_push_ref(untrusted, certificate.pointer) }

        guard let ctx = X509_STORE_CTX_new() else { return failed("internal error: X509_STORE_CTX_new failed") }
        defer { X509_STORE_CTX_free(ctx) }
        guard X509_STORE_CTX_init(ctx, store, leaf.pointer, untrusted) == 1,
              let param = X509_STORE_CTX_get0_param(ctx) else {
            return failed("internal error: X509_STORE_CTX_init failed")
        }
        X509_VERIFY_PARAM_set_flags(param, UInt(X509_V_FLAG_X509_STRICT | X509_V_FLAG_PARTIAL_CHAIN))
        X509_VERIFY_PARAM_set_time(param, time_t(time.timeIntervalSince1970.rounded(.down)))
        if policy.kind == .ssl {
            _ = X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER)
        }
        if policy.platform == .curl {
            // OpenSSL 3's default security level, which curl's SSL_CTX keeps: SHA-1 and MD5
            // signatures (below anchors) and keys under 80 bits of security are refused.
            X509_VERIFY_PARAM_set_auth_level(param, 1)
        }
        // The host goes to OpenSSL's subjectAltName check, unless curl compares the CN instead
        // (checked after the verification, below).
        let commonNameHost = policy.platform == .curl && CurlHostCheck.fallsBackToCommonName(leaf) ? policy.host : nil
        let subjectAltNameHost = commonNameHost == nil ? policy.host : nil
        switch subjectAltNameHost {
        case nil:
            break
        case .dns(let name)?:
            X509_VERIFY_PARAM_set_hostflags(
                param, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT))
            guard X509_VERIFY_PARAM_set1_host(param, name, 0) == 1 else {
                return failed("internal error: cannot set the host name \(name)")
            }
        case .ipv4(let bytes)?, .ipv6(let bytes)?:
            guard X509_VERIFY_PARAM_set1_ip(param, bytes, bytes.count) == 1 else {
                return failed("internal error: cannot set the IP address")
            }
        }

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

        var failures: [TrustFailure] = []
        for i in 0..<pp_verify_log_count(log) {
            let code = Int(pp_verify_log_code(log, i))
            let depth = Int(pp_verify_log_depth(log, i))
            failures.append(describe(code: code, depth: depth, chain: built, policy: policy, time: time))
        }
        if rc <= 0 && failures.isEmpty {
            let errors = OpenSSL.drainErrors().joined(separator: "; ")
            failures.append(TrustFailure(kind: .other, code: -1, depth: 0,
                                         detail: "the evaluation could not run" + (errors.isEmpty ? "" : " (\(errors))")))
        }
        // pinproxy's own steps after OpenSSL's.
        if let host = commonNameHost, let failure = commonNameMismatch(leaf: leaf, host: host) {
            failures.append(failure)
        }
        if !failures.contains(where: { $0.kind == .nameConstraints && $0.depth == 0 }) {
            failures += WildcardConstraints.failures(chain: built)
        }
        failures += AlgorithmFloor.of(policy)?.failures(chain: built, anchor: anchor) ?? []
        return TrustEvaluation(
            isValid: failures.isEmpty && rc == 1,
            failures: failures,
            builtChain: built,
            anchor: anchor,
            policy: policy,
            anchorsSummary: anchors.summary,
            time: time)
    }

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
