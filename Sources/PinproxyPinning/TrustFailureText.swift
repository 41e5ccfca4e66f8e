internal import COpenSSL
import Foundation
import PinproxyCertificates

/// OpenSSL's verification errors in plain words.
extension TrustEvaluator {
    /// The failure OpenSSL reported as `code` at `depth` of `chain`, named for `policy`'s platform.
    static func describe(code: Int, depth: Int, chain: [Certificate], policy: TrustPolicy, time: Date) -> TrustFailure {
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
            let commonName = policy.platform == .curl
                ? "curl compares the CN only when there is no DNS or IP subjectAltName"
                : "the CN is never used"
            detail = "host mismatch: \(which) is not valid for \(policy.host?.description ?? "the host") (its subjectAltName: \(names.isEmpty ? "none" : names.joined(separator: ", ")); \(commonName))"
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
        case X509_V_ERR_CA_MD_TOO_WEAK:
            kind = .weakAlgorithm
            let digest = certificate?.signatureDigestNID.flatMap { AlgorithmFloor.sha1AndOlder[$0] } ?? certificate?.signatureDigestName ?? "a weak digest"
            detail = "weak algorithm: \(which) is signed with \(digest), which curl on OpenSSL 3 refuses at security level \(CurlSecurityLevel.current) (\(CurlSecurityLevel.bits) bits of security; libssl's default here; anchors' own signatures are not judged)"
        case X509_V_ERR_EE_KEY_TOO_SMALL, X509_V_ERR_CA_KEY_TOO_SMALL:
            kind = .weakAlgorithm
            let bits = certificate?.publicKeySize.map { "a \($0.bits)-bit key" } ?? "a small key"
            detail = "weak algorithm: \(which) has \(bits), under the \(CurlSecurityLevel.bits) bits of security curl on OpenSSL 3 wants at security level \(CurlSecurityLevel.current) (libssl's default here)"
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
