internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// What a policy is shown: the chain one platform built, from the leaf to where it ended.
struct VerificationContext {
    /// Leaf first; ends at the first anchor when ``endsAtAnchor``.
    let chain: [Certificate]
    /// Where the chain ended, when its last certificate is an anchor.
    let anchor: AnchorKind?
    let policy: TrustPolicy
    let time: Date
    /// What building the chain found (unknown issuer, bad signature, name constraints...).
    let buildingFailures: [TrustFailure]
    /// Every certificate the server sent, in its order (extras included).
    var presented: [Certificate] = []

    var endsAtAnchor: Bool { anchor != nil }

    /// The JDK validated no path: the leaf itself is a trust anchor. `PKIXValidator.engineValidate`
    /// then answers with the leaf alone, and `Validator.validate` runs its `EndEntityChecker` only
    /// for a longer chain ("omit EE extension check if EE cert is also trust anchor"), so the
    /// leaf's extendedKeyUsage, keyUsage and Netscape certificate type go unchecked. Real OkHttp
    /// 3.13.1 on JDK 17 accepts a pinned self-signed leaf whose only EKU is clientAuth, or whose
    /// keyUsage is keyEncipherment alone, that it trusts directly.
    var jdkSkipsEndEntityChecks: Bool { policy.platform == .jvm && endsAtAnchor && chain.count == 1 }

    /// The positions of the chain's issuers, the anchor included only when `includingAnchor`.
    func issuerIndices(includingAnchor: Bool) -> Range<Int> {
        let end = endsAtAnchor && !includingAnchor ? chain.count - 1 : chain.count
        return 1..<max(1, end)
    }

    /// The positions a platform judges, the anchor included only when `includingAnchor`.
    func indices(includingAnchor: Bool) -> Range<Int> {
        0..<(endsAtAnchor && !includingAnchor ? chain.count - 1 : chain.count)
    }

    func failure(_ code: Int32, at depth: Int) -> TrustFailure {
        TrustEvaluator.describe(code: Int(code), depth: depth, chain: chain, policy: policy, time: time)
    }
}

/// One rule a built chain must meet on a platform — swift-certificates' `VerifierPolicy`:
/// small values composed into a ``VerifierProfile``, each saying what it checks.
protocol VerifierPolicy: Sendable {
    /// Every way the chain fails this rule; empty when it meets it.
    func failures(_ context: VerificationContext) -> [TrustFailure]
    /// What the rule let pass that another platform would refuse, in plain words.
    func notes(_ context: VerificationContext) -> [String]
}

extension VerifierPolicy {
    func notes(_ context: VerificationContext) -> [String] { [] }
}

/// Every certificate is within its validity period at the evaluation time — the anchor too,
/// or not: the JDK's PKIX (`PKIXCertPathValidator` treats a `TrustAnchor` as a name and a key)
/// and Android never look at an anchor's dates; Apple and OpenSSL do.
struct ValidityPeriods: VerifierPolicy {
    let includesAnchor: Bool

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        context.indices(includingAnchor: includesAnchor).compactMap { index in
            let certificate = context.chain[index]
            if context.time < certificate.notBefore { return context.failure(X509_V_ERR_CERT_NOT_YET_VALID, at: index) }
            if context.time > certificate.notAfter { return context.failure(X509_V_ERR_CERT_HAS_EXPIRED, at: index) }
            return nil
        }
    }

    func notes(_ context: VerificationContext) -> [String] {
        guard !includesAnchor, context.endsAtAnchor, let anchor = context.chain.last else { return [] }
        let iso = ISO8601DateFormatter()
        let when = context.time > anchor.notAfter ? "expired on \(iso.string(from: anchor.notAfter))"
            : context.time < anchor.notBefore ? "is valid only from \(iso.string(from: anchor.notBefore))" : nil
        guard let when else { return [] }
        return ["the anchor \(ChainSummary.name(of: anchor)) \(when), which \(context.policy.platform.validatorName) does not check"]
    }
}

/// Every issuer is a CA (basicConstraints cA, or a version-1 self-signed anchor), no
/// pathLenConstraint is exceeded, and an issuer that has a keyUsage extension allows
/// keyCertSign. A CA without keyUsage passes, and so does one with a pathLenConstraint but
/// no keyUsage (what OkHttp's `HeldCertificate` mints): only OpenSSL's strict mode refuses
/// those, and no platform runs it. JDK and Android skip the anchor (a name and a key).
struct IssuerConstraints: VerifierPolicy {
    let includesAnchor: Bool

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        var failures: [TrustFailure] = []
        for index in context.issuerIndices(includingAnchor: includesAnchor) {
            let issuer = context.chain[index].pointer
            let flags = X509_get_extension_flags(issuer)
            let isAnchor = context.endsAtAnchor && index == context.chain.count - 1
            let isCA = (flags & UInt32(EXFLAG_CA)) != 0 || (isAnchor && X509_check_ca(issuer) != 0)
            if !isCA { failures.append(context.failure(X509_V_ERR_INVALID_CA, at: index)); continue }
            let pathLength = X509_get_pathlen(issuer)
            if pathLength >= 0 && index - 1 > pathLength {
                failures.append(context.failure(X509_V_ERR_PATH_LENGTH_EXCEEDED, at: index))
            }
            if (flags & UInt32(EXFLAG_KUSAGE)) != 0 && (X509_get_key_usage(issuer) & UInt32(KU_KEY_CERT_SIGN)) == 0 {
                failures.append(context.failure(X509_V_ERR_KEYUSAGE_NO_CERTSIGN, at: index))
            }
        }
        return failures
    }
}

/// The SSL policy's demand on the leaf: an extendedKeyUsage, when present, holds serverAuth or
/// anyExtendedKeyUsage (Apple's `set_ssl_ekus` in SecPolicy.c, the JDK's
/// `EndEntityChecker.checkTLSServer`, Conscrypt's `ExtendedKeyUsagePKIXCertPathChecker`).
/// Issuers' EKUs are not judged: a root whose only EKU is anyExtendedKeyUsage passes (OpenSSL,
/// and so curl, refuses it). The leaf's keyUsage is ``LeafSignatureKeyUsage``'s: Apple's SSL
/// policy itself has none (`SecPolicyCreateSSL` passes `kSecKeyUsageUnspecified`).
///
/// The JDK also reads a Netscape certificate type (`EndEntityChecker.checkTLSServer`,
/// `NSCT_SSL_SERVER`): a leaf whose nsCertType does not name an SSL server is refused ("Netscape
/// cert type does not permit use for SSL server", real OkHttp on JDK 17).
///
/// None of it on the JDK for a leaf that is itself the anchor (``VerificationContext/jdkSkipsEndEntityChecks``).
struct ServerAuthentication: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard context.policy.kind == .ssl, !context.jdkSkipsEndEntityChecks, let certificate = context.chain.first else { return [] }
        let leaf = certificate.pointer
        var failures: [TrustFailure] = []
        if (X509_get_extension_flags(leaf) & UInt32(EXFLAG_XKUSAGE)) != 0,
           (X509_get_extended_key_usage(leaf) & UInt32(XKU_SSL_SERVER | XKU_ANYEKU | XKU_SGC)) == 0 {
            failures.append(context.failure(X509_V_ERR_INVALID_PURPOSE, at: 0))
        }
        if context.policy.platform == .jvm, pp_x509_netscape_cert_type(leaf, 1) == 0 {
            failures.append(TrustFailure(kind: .wrongPurpose, code: Int(X509_V_ERR_INVALID_PURPOSE), depth: 0,
                                         detail: "not valid for TLS server authentication: certificate #0 (\(ChainSummary.name(of: certificate))) has a "
                                            + "Netscape certificate type without SSL server, which the JDK refuses (EndEntityChecker: "
                                            + "\"Netscape cert type does not permit use for SSL server\")"))
        }
        return failures
    }
}

/// The leaf's key must be one the client's TLS stack can take a handshake signature from: an EC
/// key only on P-256, P-384 or P-521. OpenSSL 3.0 (curl) has TLS 1.3 signature schemes for those
/// curves only (brainpool's came in 3.2) and offers no other curve for TLS 1.2; the JDK 17 dropped
/// secp256k1 and the brainpool curves from SunEC. Real curl and OkHttp both fail the handshake with
/// a secp256k1 or brainpoolP256r1 leaf, before any certificate check. (Apple's and Android's
/// BoringSSL are not modelled here.)
struct HandshakeLeafKey: VerifierPolicy {
    static let curves: Set<String> = ["prime256v1", "secp384r1", "secp521r1"]

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard let leaf = context.chain.first, let curve = leaf.ecCurveName, !Self.curves.contains(curve) else { return [] }
        let stack = context.policy.platform == .curl ? "curl's OpenSSL" : "the JDK"
        return [TrustFailure(kind: .weakAlgorithm, code: Int(X509_V_ERR_EE_KEY_TOO_SMALL), depth: 0,
                             detail: "unsupported key: certificate #0 (\(ChainSummary.name(of: leaf))) has an EC key on \(curve), which \(stack) "
                                + "cannot take a TLS handshake signature from (P-256, P-384 and P-521 only): the handshake fails before any certificate check")]
    }
}

/// A certificate with an empty subject must carry its names in a critical subjectAltName
/// extension (RFC 5280 4.1.2.6, 4.2.1.6).
///
/// - The JDK cannot even parse one that does not (`X509CertInfo.verifyCert`: "SubjectAlternativeName
///   extension MUST be marked critical when subject field is empty"; a version 1 certificate with
///   an empty subject likewise): any such certificate the server sends, an extra one included,
///   fails the handshake ("Failed to parse server certificates", real OkHttp on JDK 17).
/// - Apple's `SecPolicyCheckNonEmptySubject` (SecPolicyServer.c, one of the basic certificate
///   checks, so in every policy mode) refuses a CA with an empty subject, and a leaf with one unless
///   it is not a CA and its subjectAltName is critical.
/// OpenSSL (curl) and Android's Conscrypt take either.
struct EmptySubjectNames: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        switch context.policy.platform {
        case .jvm:
            return context.presented.enumerated().compactMap { index, certificate in
                guard certificate.hasEmptySubject else { return nil }
                let why = X509_get_version(certificate.pointer) < 2 ? "a version 1 certificate with an empty subject"
                    : certificate.hasCriticalSubjectAltName ? nil : "an empty subject and no critical subjectAltName"
                guard let why else { return nil }
                return TrustFailure(kind: .malformed, code: Int(X509_V_ERR_INVALID_EXTENSION), depth: index,
                                    detail: "malformed certificate: presented certificate #\(index) (\(ChainSummary.name(of: certificate))) has \(why), "
                                        + "which the JDK cannot parse (X509CertInfo: \"SubjectAlternativeName extension MUST be marked critical when "
                                        + "subject field is empty\"): the handshake fails before any check")
            }
        case .apple:
            return context.chain.enumerated().compactMap { index, certificate in
                guard certificate.hasEmptySubject else { return nil }
                if index == 0 && !certificate.isCA && certificate.hasCriticalSubjectAltName { return nil }
                return TrustFailure(kind: .malformed, code: Int(X509_V_ERR_INVALID_EXTENSION), depth: index,
                                    detail: "malformed certificate: certificate #\(index) (\(ChainSummary.name(of: certificate))) has an empty subject"
                                        + (index == 0 && !certificate.isCA ? " and no critical subjectAltName" : " and is a CA")
                                        + ", which Apple refuses (SecPolicyCheckNonEmptySubject)")
            }
        case .android, .curl:
            return []
        }
    }
}

extension Certificate {
    /// Whether the subject has no attribute at all.
    var hasEmptySubject: Bool { X509_NAME_entry_count(X509_get_subject_name(pointer)) == 0 }

    /// Whether the subjectAltName extension is present and marked critical.
    var hasCriticalSubjectAltName: Bool {
        let index = X509_get_ext_by_NID(pointer, NID_subject_alt_name, -1)
        guard index >= 0, let ext = X509_get_ext(pointer, index) else { return false }
        return X509_EXTENSION_get_critical(ext) == 1
    }
}

/// The JDK's certificate-policy processing (`PolicyChecker`, RFC 5280 6.1 with the initial policy
/// anyPolicy), on the path below the anchor: once a CA's policyConstraints requireExplicitPolicy
/// comes due, a policy valid from the top of the path down to the leaf must exist — every
/// certificate from there carrying a certificatePolicies that continues it (the same OID, or
/// anyPolicy while inhibitAnyPolicy allows). Real OkHttp on JDK 17 refuses a chain without one
/// ("non-null policy tree required and policy tree is null") and accepts one whose intermediate
/// and leaf name the same policy. A chain with policyMappings is not judged (mappings are not
/// modelled); Apple, Android and curl (which never asks OpenSSL for policy checks) are taken not to
/// refuse for policies.
struct JDKCertificatePolicies: VerifierPolicy {
    static let anyPolicy = "2.5.29.32.0"

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        let path = Array(context.chain.prefix(context.endsAtAnchor ? context.chain.count - 1 : context.chain.count).reversed())
        guard !path.isEmpty, path.allSatisfy({ X509_get_ext_by_NID($0.pointer, NID_policy_mappings, -1) < 0 }) else { return [] }
        let n = path.count
        var explicitPolicy = n + 1
        var inhibitAnyPolicy = n + 1
        var valid: Set<String>? = [Self.anyPolicy]
        for (position, certificate) in path.enumerated() {
            let isLeaf = position == n - 1
            let selfIssued = (X509_get_extension_flags(certificate.pointer) & UInt32(EXFLAG_SI)) != 0
            if let policies = Self.policies(of: certificate), let current = valid {
                var next = Set(policies.filter { $0 != Self.anyPolicy && (current.contains($0) || current.contains(Self.anyPolicy)) })
                if policies.contains(Self.anyPolicy) && (inhibitAnyPolicy > 0 || (!isLeaf && selfIssued)) {
                    next.formUnion(current)
                }
                valid = next.isEmpty ? nil : next
            } else {
                valid = nil
            }
            if isLeaf {
                if explicitPolicy > 0 { explicitPolicy -= 1 }
                if pp_x509_require_explicit_policy(certificate.pointer) == 0 { explicitPolicy = 0 }
            } else {
                if !selfIssued {
                    if explicitPolicy > 0 { explicitPolicy -= 1 }
                    if inhibitAnyPolicy > 0 { inhibitAnyPolicy -= 1 }
                }
                let required = pp_x509_require_explicit_policy(certificate.pointer)
                if required >= 0 && required < explicitPolicy { explicitPolicy = Int(required) }
                let inhibit = pp_x509_inhibit_any_policy(certificate.pointer)
                if inhibit >= 0 && inhibit < inhibitAnyPolicy { inhibitAnyPolicy = Int(inhibit) }
            }
            if explicitPolicy == 0 && valid == nil {
                let depth = n - 1 - position
                return [TrustFailure(kind: .other, code: Int(X509_V_ERR_NO_EXPLICIT_POLICY), depth: depth,
                                     detail: "no valid certificate policy: a CA of the chain requires an explicit policy (policyConstraints "
                                        + "requireExplicitPolicy) and none holds from the top of the path down to certificate #\(depth) "
                                        + "(\(ChainSummary.name(of: certificate))), which the JDK refuses (\"non-null policy tree required and policy tree is null\")")]
            }
        }
        return []
    }

    /// The policy OIDs of `certificate`'s certificatePolicies, nil without the extension. The
    /// shim writes whole lines only, as many as fit; a list longer than the buffer is read again
    /// into a larger one, so that no policy is lost (a certificate is at most a few hundred KiB).
    static func policies(of certificate: Certificate, startingCapacity: Int = 4096) -> [String]? {
        var capacity = max(startingCapacity, 1)
        while true {
            var buffer = [CChar](repeating: 0, count: capacity)
            let count = pp_x509_policy_oids(certificate.pointer, &buffer, Int32(buffer.count))
            guard count >= 0 else { return nil }
            let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let oids = text.split(separator: "\n").map(String.init)
            if oids.count >= count || capacity >= 1 << 24 { return oids }
            capacity *= 4
        }
    }
}

/// The JDK's PKIX refuses a certificate below the anchor with a critical extension none of its
/// checkers handles ("PKIX path validation failed: ... unrecognized critical extension(s)",
/// `PKIXMasterCertPathValidator`): `KeyChecker` takes keyUsage, extendedKeyUsage and
/// subjectAltName, `ConstraintsChecker` basicConstraints and nameConstraints, `PolicyChecker`
/// certificatePolicies, policyMappings, policyConstraints and inhibitAnyPolicy; with revocation
/// off (SunJSSE's default) nothing takes the rest. OpenSSL also handles a critical CRL
/// distribution points, OCSP no-check, Netscape cert type, proxyCertInfo and the RFC 3779
/// extensions, so curl accepts what the JDK refuses here (real OkHttp 3.13.1 on JDK 17 against
/// real curl: critical CRL distribution points on the leaf or an intermediate, OCSP no-check on
/// the leaf). The anchor is a name and a key: its extensions are never read.
struct JDKCriticalExtensions: VerifierPolicy {
    /// The extensions the JDK's PKIX checkers resolve.
    static let handled: Set<String> = [
        "2.5.29.15", "2.5.29.37", "2.5.29.17",  // keyUsage, extendedKeyUsage, subjectAltName
        "2.5.29.19", "2.5.29.30",  // basicConstraints, nameConstraints
        "2.5.29.32", "2.5.29.33", "2.5.29.36", "2.5.29.54",  // certificatePolicies, policyMappings, policyConstraints, inhibitAnyPolicy
    ]

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        context.indices(includingAnchor: false).compactMap { index in
            let certificate = context.chain[index]
            // Those OpenSSL does not handle either, chain building reports already.
            let unhandled = certificate.criticalExtensions.filter { $0.openSSLHandles && !Self.handled.contains($0.oid) }
            guard !unhandled.isEmpty else { return nil }
            let names = unhandled.map { $0.name == $0.oid ? $0.oid : "\($0.name) (\($0.oid))" }.joined(separator: ", ")
            return TrustFailure(kind: .malformed, code: Int(X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION), depth: index,
                                detail: "malformed certificate: \(AlgorithmFloor.which(context.chain, index)) has a critical \(names), which "
                                    + "no checker of the JDK's PKIX handles (\"unrecognized critical extension(s)\"; OpenSSL handles it)")
        }
    }
}

extension Certificate {
    /// The extensions marked critical: their dotted OIDs, OpenSSL's long names (the OID again
    /// when OpenSSL has no name for it), and whether OpenSSL's verification handles them.
    var criticalExtensions: [(oid: String, name: String, openSSLHandles: Bool)] {
        (0..<max(0, X509_get_ext_count(pointer))).compactMap { index in
            guard let ext = X509_get_ext(pointer, index), X509_EXTENSION_get_critical(ext) == 1,
                  let object = X509_EXTENSION_get_object(ext) else { return nil }
            var buffer = [CChar](repeating: 0, count: 128)
            let written = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
            guard written > 0 else { return nil }
            let oid = String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let nid = OBJ_obj2nid(object)
            let name = nid == NID_undef ? oid : OBJ_nid2ln(nid).map { String(cString: $0) } ?? oid
            return (oid, name, X509_supported_extension(ext) == 1)
        }
    }
}

/// In a TLS 1.3 handshake the JDK checks every signature below the anchor against the
/// signature schemes TLS 1.3 allows for certificates (`X509TrustManagerImpl` builds its
/// `SSLAlgorithmConstraints` from the session's local signature algorithms): ECDSA and RSA
/// PKCS#1 with SHA-256, SHA-384, SHA-512 or SHA-1, RSA-PSS, Ed25519 and Ed448. DSA and SHA-224
/// are TLS 1.2 schemes only, so real OkHttp on JDK 17 refuses a chain signed with them
/// ("Algorithm constraints check failed on signature algorithm: SHA256withDSA",
/// `unsupported_certificate`), where curl takes them. MD5 and older are the algorithm
/// floor's (``PlatformAlgorithmFloor``). pinproxy judges the TLS 1.3 handshake a current
/// server negotiates; under TLS 1.2 the JDK would take these.
struct JDKTLS13CertificateSignatures: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        context.indices(includingAnchor: false).compactMap { index in
            guard let name = Self.refusedSignature(of: context.chain[index]) else { return nil }
            return TrustFailure(kind: .weakAlgorithm, code: Int(X509_V_ERR_CA_MD_TOO_WEAK), depth: index,
                                detail: "weak algorithm: \(AlgorithmFloor.which(context.chain, index)) is signed with \(name), which no TLS 1.3 "
                                    + "signature scheme for certificates names, so the JDK refuses it in a TLS 1.3 handshake (\"Algorithm "
                                    + "constraints check failed on signature algorithm: \(name)\")")
        }
    }

    /// The certificate's signature algorithm as the JDK names it (`SHA224withECDSA`) when TLS 1.3
    /// does not allow it for certificates; nil when it does, or when it is the floor's to refuse.
    static func refusedSignature(of certificate: Certificate) -> String? {
        var digest: Int32 = 0
        var key: Int32 = 0
        guard X509_get_signature_info(certificate.pointer, &digest, &key, nil, nil) == 1 else { return nil }
        let allowedDigests: Set<Int32> = [NID_sha1, NID_sha256, NID_sha384, NID_sha512]
        let keyName: String
        switch key {
        case NID_rsaEncryption: keyName = "RSA"
        case NID_X9_62_id_ecPublicKey: keyName = "ECDSA"
        case NID_dsa: keyName = "DSA"
        // RSA-PSS (any digest: the JDK compares the name RSASSA-PSS), Ed25519, Ed448 and what this does not know.
        default: return nil
        }
        if AlgorithmFloor.md5AndOlder[digest] != nil { return nil }
        if key != NID_dsa && allowedDigests.contains(digest) { return nil }
        let digestName = OBJ_nid2sn(digest).map { String(cString: $0).replacingOccurrences(of: "-", with: "") } ?? "an unknown digest "
        return "\(digestName)with\(keyName)"
    }
}

/// JDK 17's SunEC verifies ECDSA on P-256, P-384 and P-521 only (JDK 16 removed the native library
/// with the other curves): a signature by an issuer's EC key on another curve — secp256k1,
/// brainpool, P-224 — never verifies, the anchor's key included ("signature check failed", real
/// OkHttp on JDK 17). The leaf's own key is ``HandshakeLeafKey``'s.
struct JDKIssuerCurves: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        context.chain.enumerated().dropFirst().compactMap { index, issuer in
            guard let curve = issuer.ecCurveName, !HandshakeLeafKey.curves.contains(curve) else { return nil }
            let signed = context.chain[index - 1]
            return TrustFailure(kind: .badSignature, code: Int(X509_V_ERR_CERT_SIGNATURE_FAILURE), depth: index - 1,
                                detail: "bad signature: the signature on certificate #\(index - 1) (\(ChainSummary.name(of: signed))) is made by an EC key on "
                                    + "\(curve) (certificate #\(index), \(ChainSummary.name(of: issuer))), which the JDK 17 cannot verify (SunEC: P-256, "
                                    + "P-384 and P-521 only; \"signature check failed\")")
        }
    }
}

/// The JDK's `PKIXValidator.verifyTrustAnchor`, run on the anchor a chain was validated up to
/// (not on a leaf that is itself trusted): a version 3 anchor must be a CA (basicConstraints cA)
/// and, when it has a keyUsage, allow keyCertSign ("TrustAnchor with subject ... is not a CA
/// certificate", real OkHttp on JDK 17). Android's Conscrypt has no such check, nor does the
/// JDK's PKIX for the certificates below the anchor (``IssuerConstraints`` judges those).
struct JDKTrustAnchorCheck: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard context.endsAtAnchor, context.chain.count > 1, let anchor = context.chain.last,
              X509_get_version(anchor.pointer) >= 2 else { return [] }
        let index = context.chain.count - 1
        let which = "certificate #\(index) (\(ChainSummary.name(of: anchor)))"
        if !anchor.isCA {
            return [TrustFailure(kind: .notACA, code: Int(X509_V_ERR_INVALID_CA), depth: index,
                                 detail: "not a CA: \(which) is the trust anchor but not a CA certificate, which the JDK refuses "
                                    + "(PKIXValidator.verifyTrustAnchor: \"TrustAnchor with subject ... is not a CA certificate\")")]
        }
        if (X509_get_extension_flags(anchor.pointer) & UInt32(EXFLAG_KUSAGE)) != 0,
           (X509_get_key_usage(anchor.pointer) & UInt32(KU_KEY_CERT_SIGN)) == 0 {
            return [TrustFailure(kind: .notACA, code: Int(X509_V_ERR_KEYUSAGE_NO_CERTSIGN), depth: index,
                                 detail: "not a CA: \(which) is the trust anchor and its keyUsage lacks keyCertSign, which the JDK refuses "
                                    + "(PKIXValidator.verifyTrustAnchor)")]
        }
        return []
    }
}

/// A leaf with a keyUsage extension must allow digitalSignature: in TLS 1.3 the server signs
/// the handshake (CertificateVerify) with the leaf's key, and the client's TLS stack refuses a
/// key its certificate does not allow to sign, before any trust evaluation or pin runs, so in
/// every policy mode. BoringSSL — Apple's libboringssl under URLSession and Android's
/// Conscrypt — checks it in `tls13_process_certificate` (tls13_both.cc, alert
/// illegal_parameter); the JDK's `EndEntityChecker.checkTLSServer` wants digitalSignature for
/// the auth types "UNKNOWN" (TLS 1.3) and ECDHE_* (real OkHttp 3.13 on JDK 17 answers "KeyUsage
/// does not allow digital signatures" for a leaf with keyEncipherment or keyAgreement only).
/// OpenSSL, and so curl, lets any of digitalSignature, keyEncipherment and keyAgreement pass
/// (`check_purpose_ssl_server`), which its own verification reports. The JDK's check is its
/// `EndEntityChecker`'s, which it skips for a leaf that is itself the anchor
/// (``VerificationContext/jdkSkipsEndEntityChecks``); its TLS layer does not check the bit itself.
struct LeafSignatureKeyUsage: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard !context.jdkSkipsEndEntityChecks, let leaf = context.chain.first,
              (X509_get_extension_flags(leaf.pointer) & UInt32(EXFLAG_KUSAGE)) != 0 else { return [] }
        let usage = X509_get_key_usage(leaf.pointer)
        guard (usage & UInt32(KU_DIGITAL_SIGNATURE)) == 0 else { return [] }
        let names = Self.names(usage)
        let refusedBy: String
        switch context.policy.platform {
        case .apple: refusedBy = "Apple's TLS stack (BoringSSL) refuses it at the handshake, before any trust evaluation"
        case .android: refusedBy = "Conscrypt's BoringSSL refuses it at the handshake, before any trust evaluation"
        case .jvm: refusedBy = "the JDK refuses it (EndEntityChecker: \"KeyUsage does not allow digital signatures\")"
        case .curl: refusedBy = "OpenSSL refuses it"
        }
        let detail = "not valid for TLS server authentication: certificate #0 (\(ChainSummary.name(of: leaf))) has a keyUsage "
            + "of \(names.isEmpty ? "no bits" : names.joined(separator: ", ")) without digitalSignature, and TLS 1.3 signs the "
            + "handshake with the leaf's key: \(refusedBy)"
        return [TrustFailure(kind: .wrongPurpose, code: Int(X509_V_ERR_INVALID_PURPOSE), depth: 0, detail: detail)]
    }

    /// The keyUsage bits set, by their RFC 5280 names.
    static func names(_ usage: UInt32) -> [String] {
        let bits: [(Int32, String)] = [
            (KU_DIGITAL_SIGNATURE, "digitalSignature"), (KU_NON_REPUDIATION, "nonRepudiation"),
            (KU_KEY_ENCIPHERMENT, "keyEncipherment"), (KU_DATA_ENCIPHERMENT, "dataEncipherment"),
            (KU_KEY_AGREEMENT, "keyAgreement"), (KU_KEY_CERT_SIGN, "keyCertSign"), (KU_CRL_SIGN, "cRLSign"),
            (KU_ENCIPHER_ONLY, "encipherOnly"), (KU_DECIPHER_ONLY, "decipherOnly"),
        ]
        return bits.filter { usage & UInt32($0.0) != 0 }.map(\.1)
    }
}

/// The host against the leaf's subjectAltName entries only; the subject CN is never consulted.
/// Apple matches as `SecDNSMatch` does (``AppleHostMatch``); the JDK and Android as OkHttp's
/// `OkHostnameVerifier` does (``OkHostnameVerifier``).
struct SubjectAltNameHost: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard let host = context.policy.host, let leaf = context.chain.first else { return [] }
        let code = host.isIPAddress ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH
        switch context.policy.platform {
        case .jvm, .android:
            if context.policy.platform == .jvm, let entry = JDKSubjectAltNames.unreadableEntry(of: leaf) {
                // Critical: the certificate does not parse at all (``JDKSubjectAltNames``).
                guard !leaf.hasCriticalSubjectAltName else { return [] }
                let failure = context.failure(code, at: 0)
                return [TrustFailure(kind: failure.kind, code: failure.code, depth: 0, detail: failure.detail
                    + " — the JDK cannot read the subjectAltName's \(entry), so it lists no name at all and OkHttp matches against none")]
            }
            if OkHostnameVerifier.verify(host, leaf: leaf, platform: context.policy.platform) { return [] }
            guard case .ipv6(let bytes) = host, leaf.subjectAlternativeNames.contains(.ipAddress(bytes)) else {
                return [context.failure(code, at: 0)]
            }
            let failure = context.failure(code, at: 0)
            return [TrustFailure(kind: failure.kind, code: failure.code, depth: 0, detail: failure.detail
                + " — the address is there, but OkHttp 3.13 compares it as text: '\(OkHostnameVerifier.hostText(bytes))' against the JDK's '\(OkHostnameVerifier.javaText(bytes))'")]
        case .apple:
            return AppleHostMatch.verify(host, leaf: leaf) ? [] : [context.failure(code, at: 0)]
        case .curl:
            return CurlHost().failures(context)
        }
    }
}

/// Every name a wildcard subjectAltName can stand for lies inside the CAs' name constraints
/// (``WildcardConstraints``) — the anchor's too, unless it is only a name and a key.
struct WildcardNameConstraints: VerifierPolicy {
    let includesAnchor: Bool

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        // A leaf already outside the constraints is reported once.
        if context.buildingFailures.contains(where: { $0.kind == .nameConstraints && $0.depth == 0 }) { return [] }
        return WildcardConstraints.failures(chain: context.chain, excludingLast: !includesAnchor && context.endsAtAnchor)
    }
}

/// The name constraints of the CAs below the anchor, on every certificate below each — for the
/// PKIX validators that take a trust anchor as a name and a key and so never read the anchor
/// certificate's own nameConstraints: the JDK (`PKIXValidator` makes `new TrustAnchor(cert,
/// null)`; `PKIXCertPathValidator` runs `ConstraintsChecker` on the path below the anchor) and
/// Android (Conscrypt's `TrustedCertificateIndex` makes the same anchors, and the PKIX
/// `CertPathValidator` starts from empty subtrees, RFC 5280 6.1.1, and reads the extension of
/// the certificates of the path only). Real OkHttp on JDK 17 accepts a leaf outside its root's
/// permitted subtree. Where the anchor carries no constraints OpenSSL's own report stands;
/// where it does, its name-constraint errors are set aside
/// (``TrustEvaluator/buildingFailures(_:chain:anchor:profile:)``) and the CAs below it are
/// checked here, with OpenSSL's `NAME_CONSTRAINTS_check` as `X509_verify_cert` calls it.
///
/// The JDK (`jdk`) reads a certificate's names its own way (`NameConstraintsExtension.verify`),
/// so for it every CA below the anchor is checked here, OpenSSL's own report set aside: the
/// subject's emailAddress counts as an rfc822 name only when the certificate has no
/// subjectAltName extension (OpenSSL always counts it), and the last CN counts as an IP address
/// when it is one and the certificate has no IP subjectAltName (OpenSSL never), else as a DNS
/// name when the certificate has no DNS subjectAltName and the CN is a host name, a leading
/// `*.` allowed, dots not needed (`localhost`) — real OkHttp on JDK 17 refuses a leaf with a
/// DNS subjectAltName inside the constraints and CN=127.0.0.1 outside its CA's IP ranges, and
/// accepts one whose subject e-mail lies outside them beside a subjectAltName.
struct NameConstraintsBelowAnchor: VerifierPolicy {
    /// The JDK's reading of names, and its CAs checked whether or not the anchor has constraints.
    var jdk = false

    func failures(_ context: VerificationContext) -> [TrustFailure] {
        // A trusted leaf constrains nothing below it.
        guard context.chain.count > 1 else { return [] }
        if jdk {
            return violations(context.chain, constrainingCAs: 1..<(context.endsAtAnchor ? context.chain.count - 1 : context.chain.count), context: context)
        }
        guard context.endsAtAnchor, let anchor = context.chain.last, anchor.nameConstraints != nil else { return [] }
        return violations(context.chain, constrainingCAs: 1..<(context.chain.count - 1), context: context)
    }

    func notes(_ context: VerificationContext) -> [String] {
        guard context.endsAtAnchor, context.chain.count > 1, let anchor = context.chain.last, anchor.nameConstraints != nil else { return [] }
        let anchorIndex = context.chain.count - 1
        guard let broken = violations(context.chain, constrainingCAs: anchorIndex..<context.chain.count, context: context).first else { return [] }
        return ["\(AlgorithmFloor.which(context.chain, broken.depth)) lies outside the name constraints of the anchor "
                + "\(ChainSummary.name(of: anchor)), which \(context.policy.platform.validatorName) does not apply (a trust anchor is a name and a key)"]
    }

    /// Each certificate below a CA of `constrainingCAs` checked against that CA's constraints
    /// (self-issued CAs skipped, as OpenSSL and the JDK do): the first violation per certificate.
    private func violations(_ chain: [Certificate], constrainingCAs: Range<Int>, context: VerificationContext) -> [TrustFailure] {
        var found: [TrustFailure] = []
        guard !constrainingCAs.isEmpty else { return [] }
        for depth in 0..<(constrainingCAs.upperBound) {
            let certificate = chain[depth]
            if depth != 0 && (X509_get_extension_flags(certificate.pointer) & UInt32(EXFLAG_SI)) != 0 { continue }
            for caIndex in constrainingCAs where caIndex > depth {
                let rc = jdk ? pp_x509_check_name_constraints_jdk(chain[caIndex].pointer, certificate.pointer)
                             : pp_x509_check_name_constraints_of_chain(chain[caIndex].pointer, certificate.pointer, depth == 0 ? 1 : 0)
                if rc != X509_V_OK {
                    found.append(context.failure(rc, at: depth))
                    break
                }
                if jdk, let failure = JDKCommonNameConstraint.violation(chain, depth: depth, caIndex: caIndex) {
                    found.append(failure)
                    break
                }
            }
        }
        return found
    }
}

/// The JDK's use of a certificate's last CN under name constraints (`NameConstraintsExtension.verify`):
/// an IPv4 or IPv6 literal is an IP address when the certificate has no IP subjectAltName; any
/// other CN a DNS name when it has no DNS subjectAltName and `DNSName` takes it (letters, digits
/// and hyphens, labels starting with a letter or digit, a first label `*`); neither, ignored.
enum JDKCommonNameConstraint {
    static func violation(_ chain: [Certificate], depth: Int, caIndex: Int) -> TrustFailure? {
        let certificate = chain[depth]
        guard let constraints = chain[caIndex].nameConstraints, let cn = CurlHostCheck.lastCommonName(of: certificate) else { return nil }
        let names = certificate.subjectAlternativeNames
        let which = AlgorithmFloor.which(chain, depth), ca = AlgorithmFloor.which(chain, caIndex)
        func failure(_ code: Int32, _ what: String) -> TrustFailure {
            TrustFailure(kind: .nameConstraints, code: Int(code), depth: depth,
                         detail: "name constraints violated: \(which) has the subject CN \(cn), which the JDK checks as \(what)")
        }
        if let address = HostName.parseIPv4(cn) ?? (cn.contains(":") ? HostName.parseIPv6(cn) : nil) {
            guard !names.contains(where: { if case .ipAddress = $0 { return true } else { return false } }) else { return nil }
            if let network = constraints.excludedIP.first(where: { $0.contains(address) }) {
                return failure(X509_V_ERR_EXCLUDED_VIOLATION, "an IP address (the certificate has no IP subjectAltName), inside \(network), which \(ca) excludes")
            }
            if !constraints.permittedIP.isEmpty && !constraints.permittedIP.contains(where: { $0.contains(address) }) {
                return failure(X509_V_ERR_PERMITTED_VIOLATION, "an IP address (the certificate has no IP subjectAltName), outside what \(ca) permits (\(constraints.permittedIP.map(\.description).joined(separator: ", ")))")
            }
            return nil
        }
        guard !names.contains(where: { if case .dns = $0 { return true } else { return false } }), isDNSName(cn) else { return nil }
        let name = cn.lowercased()
        if let subtree = constraints.excludedDNS.first(where: { within(name, $0) }) {
            return failure(X509_V_ERR_EXCLUDED_VIOLATION, "a DNS name (the certificate has no DNS subjectAltName), inside \(subtree), which \(ca) excludes")
        }
        if !constraints.permittedDNS.isEmpty && !constraints.permittedDNS.contains(where: { within(name, $0) }) {
            return failure(X509_V_ERR_PERMITTED_VIOLATION, "a DNS name (the certificate has no DNS subjectAltName), outside what \(ca) permits (\(constraints.permittedDNS.joined(separator: ", ")))")
        }
        return nil
    }

    /// Whether `name` lies in the DNS subtree `subtree`: the name itself, or a name below it
    /// (`.example.com`: only below it); the empty subtree holds every name.
    static func within(_ name: String, _ subtree: String) -> Bool {
        let constraint = subtree.lowercased()
        if constraint.isEmpty || name == constraint { return true }
        guard name.count > constraint.count, name.hasSuffix(constraint) else { return false }
        let before = name[name.index(name.endIndex, offsetBy: -constraint.count - 1)]
        return (before == ".") != constraint.hasPrefix(".")
    }

    /// Whether the JDK's `DNSName` takes `text` (a first label `*` allowed).
    static func isDNSName(_ text: String) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, !labels.contains(where: \.isEmpty) else { return false }
        return labels.enumerated().allSatisfy { index, label in
            if index == 0 && label == "*" && labels.count > 1 { return true }
            guard let first = label.first, first.isASCII, first.isLetter || first.isNumber else { return false }
            return label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
    }
}

/// The platform's weakest accepted signature digests and keys (``AlgorithmFloor``).
struct PlatformAlgorithmFloor: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        AlgorithmFloor.of(context.policy, anchor: context.anchor)?.failures(chain: context.chain, anchor: context.anchor) ?? []
    }
}
