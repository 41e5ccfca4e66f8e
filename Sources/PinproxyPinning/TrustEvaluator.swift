internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// Builds and validates a presented chain on OpenSSL: the `SecTrustEvaluate` of this harness.
///
/// What it checks, with the choices that differ from OpenSSL's defaults:
/// - chain building from the leaf through the presented certificates (in any
///   order, extras allowed) to one of the given anchors;
/// - strict X.509 (`X509_V_FLAG_X509_STRICT`), purpose TLS server;
/// - any anchor ends the chain, self-signed or not (`X509_V_FLAG_PARTIAL_CHAIN`),
///   as `SecTrustSetAnchorCertificates`, Android and Java trust anchors behave —
///   a pinned leaf is its own anchor;
/// - the host against subjectAltName entries only, never the subject CN (iOS 13+
///   and Chrome), with no partial-label wildcards; IP literals against IP SANs;
/// - validity at an explicit time.
///
/// It never stops at the first error: every error is recorded and the
/// evaluation goes on, so the result names all failures and carries the chain
/// as far as it could be built.
public enum TrustEvaluator {
    /// Evaluates `presentedChain` (leaf first) for `host` (nil: basic X.509, no name check) at `time`.
    public static func evaluate(
        _ presentedChain: [Certificate], host: HostName?, at time: Date, anchors: TrustAnchors
    ) -> TrustEvaluation {
        func failed(_ detail: String) -> TrustEvaluation {
            TrustEvaluation(
                isValid: false,
                failures: [TrustFailure(kind: .other, code: -1, depth: 0, detail: detail)],
                builtChain: [], anchor: nil, host: host, anchorsSummary: anchors.summary, time: time)
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
        _ = X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER)
        switch host {
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

        var failures: [TrustFailure] = []
        for i in 0..<pp_verify_log_count(log) {
            let code = Int(pp_verify_log_code(log, i))
            let depth = Int(pp_verify_log_depth(log, i))
            failures.append(describe(code: code, depth: depth, chain: built, host: host, time: time))
        }
        if rc <= 0 && failures.isEmpty {
            let errors = OpenSSL.drainErrors().joined(separator: "; ")
            failures.append(TrustFailure(kind: .other, code: -1, depth: 0,
                                         detail: "the evaluation could not run" + (errors.isEmpty ? "" : " (\(errors))")))
        }
        let last = built.last!
        return TrustEvaluation(
            isValid: failures.isEmpty && rc == 1,
            failures: failures,
            builtChain: built,
            anchor: anchors.kind(of: last),
            host: host,
            anchorsSummary: anchors.summary,
            time: time)
    }

    // MARK: - plain words

    static func describe(code: Int, depth: Int, chain: [Certificate], host: HostName?, time: Date) -> TrustFailure {
        let certificate = depth < chain.count ? chain[depth] : nil
        let which = certificate.map { "certificate #\(depth) (\(ChainSummary.name(of: $0)))" } ?? "certificate #\(depth)"
        let iso = ISO8601DateFormatter()
        let kind: TrustFailure.Kind
        let detail: String
        switch Int32(code) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
            kind = .expired
            detail = "expired: \(which) expired on \(certificate.map { iso.string(from: $0.notAfter) } ?? "?") (evaluated at \(iso.string(from: time)))"
        case X509_V_ERR_CERT_NOT_YET_VALID:
            kind = .notYetValid
            detail = "not yet valid: \(which) is valid from \(certificate.map { iso.string(from: $0.notBefore) } ?? "?") (evaluated at \(iso.string(from: time)))"
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH, X509_V_ERR_EMAIL_MISMATCH:
            kind = .hostMismatch
            let names = certificate?.subjectAlternativeNames.map(\.description) ?? []
            detail = "host mismatch: \(which) is not valid for \(host?.description ?? "the host") (its subjectAltName: \(names.isEmpty ? "none" : names.joined(separator: ", ")); the CN is never used)"
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            kind = .unknownIssuer
            detail = "unknown issuer: no trusted certificate issued \(which), whose issuer is \(certificate.map { ChainSummary.quote($0.issuer) } ?? "?")"
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            kind = .selfSigned
            detail = "self-signed: \(which) is signed by its own key and is not an anchor"
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            kind = .selfSigned
            detail = "self-signed: the chain ends at \(which), a self-signed certificate that is not an anchor"
        case X509_V_ERR_INVALID_CA, X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
            kind = .notACA
            detail = "not a CA: \(which) issued another certificate but is not a CA (\(openSSLText(code)))"
        case X509_V_ERR_PATH_LENGTH_EXCEEDED:
            kind = .pathLength
            detail = "path length exceeded: \(which) has a pathLenConstraint the chain below it exceeds"
        case X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION, X509_V_ERR_SUBTREE_MINMAX,
             X509_V_ERR_UNSUPPORTED_CONSTRAINT_TYPE, X509_V_ERR_UNSUPPORTED_CONSTRAINT_SYNTAX,
             X509_V_ERR_UNSUPPORTED_NAME_SYNTAX:
            kind = .nameConstraints
            detail = "name constraints violated: \(which) (\(openSSLText(code)))"
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
             X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
            kind = .badSignature
            detail = "bad signature: the signature on \(which) does not verify with its issuer's key"
        case X509_V_ERR_INVALID_PURPOSE:
            kind = .wrongPurpose
            detail = "not valid for TLS server authentication: \(which) (its key usage or extended key usage forbids it)"
        case X509_V_ERR_CERT_UNTRUSTED, X509_V_ERR_CERT_REJECTED:
            kind = .untrusted
            detail = "untrusted: \(which) (\(openSSLText(code)))"
        case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD,
             X509_V_ERR_INVALID_EXTENSION, X509_V_ERR_INVALID_NON_CA, X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION:
            kind = .malformed
            detail = "malformed certificate: \(which) (\(openSSLText(code)))"
        default:
            kind = .other
            detail = "\(openSSLText(code)): \(which)"
        }
        return TrustFailure(kind: kind, code: code, depth: depth, detail: detail)
    }

    static func openSSLText(_ code: Int) -> String {
        guard let text = X509_verify_cert_error_string(code) else { return "error \(code)" }
        return String(cString: text)
    }
}
