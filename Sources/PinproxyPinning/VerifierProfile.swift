internal import COpenSSL
import Foundation
import PinproxyCertificates

/// How one platform validates a chain: how it finds each certificate's issuer, and the
/// ``VerifierPolicy`` values the chain it built must meet.
///
/// There is no "strict profile with exceptions": each platform lists what its own validator
/// checks, with the source in the doc of each policy and in docs/policies.md. OpenSSL builds
/// every chain (candidates from the presented certificates and the anchors, trusted issuers
/// first, valid ones preferred) and verifies the signatures; what else counts is the profile's:
///
/// | | Apple (SecTrust) | JDK (PKIX) | Android (Conscrypt) | curl (OpenSSL) |
/// |---|---|---|---|---|
/// | issuer | name and key identifiers | name and signature | name and signature | name and key identifiers |
/// | absent vs NULL signature parameters | equal | equal | different: refused | different: refused |
/// | anchor's validity | checked | not checked | not checked | checked |
/// | anchor's CA constraints | checked | not checked | not checked | checked |
/// | EKU of CAs | not judged | not judged | not judged | serverAuth or none |
/// | anchor's name constraints | applied | not applied | not applied | applied |
/// | wildcard SAN against name constraints | every name it matches | every name it matches | every name it matches | literally (OpenSSL) |
/// | leaf keyUsage, when present | digitalSignature | digitalSignature | digitalSignature | a TLS use |
/// | algorithms | ``AlgorithmFloor`` | ``AlgorithmFloor`` | ``AlgorithmFloor`` | libssl's default security level (``CurlSecurityLevel``) |
/// | host | SAN only | SAN only (`OkHostnameVerifier`) | SAN only (`OkHostnameVerifier`) | SAN, else the CN (curl's `hostmatch`) |
///
/// On every platform but curl an anchor ends the chain, wherever it stands: nothing above
/// a pinned leaf or an anchored intermediate is judged (Apple's evaluation stops at an anchor;
/// the JDK's `PKIXValidator` validates up to the first trusted certificate; Conscrypt's
/// `TrustManagerImpl` looks the leaf and each issuer up among the anchors first). curl keeps
/// what OpenSSL itself reports.
struct VerifierProfile: Sendable {
    /// How a certificate's issuer is recognised while the chain is built.
    enum IssuerMatching: Sendable {
        /// OpenSSL's rule: the names chain and the authorityKeyIdentifier, when present, names
        /// the issuer's key; the signature is verified afterwards.
        case nameAndKeyIdentifier
        /// The issuer's subject is the certificate's issuer name and its key verifies the
        /// signature; key identifiers play no part (JDK `PKIXValidator`/`BasicChecker`,
        /// Conscrypt `TrustedCertificateIndex.findByIssuerAndSignature`).
        case nameAndSignature
    }

    let platform: TrustPlatform
    let issuerMatching: IssuerMatching
    /// Whether a certificate whose outer and inner signatureAlgorithm differ only in an absent
    /// versus a NULL parameter still verifies (Apple; the JDK's `AlgorithmId` reads a NULL
    /// parameter as absent). OpenSSL and BoringSSL (Conscrypt) compare them and refuse.
    let nullParametersEquivalent: Bool
    /// curl: OpenSSL's own verification, as curl configures it, is the platform's validator,
    /// so everything it reports counts.
    let isOpenSSLVerification: Bool
    /// Whether the validator takes a trust anchor as a name and a key (the JDK's and Android's
    /// PKIX): the anchor certificate's own nameConstraints bind nothing
    /// (``NameConstraintsBelowAnchor``) and its unknown critical extensions are never read.
    /// Apple and OpenSSL judge the anchor certificate as they judge the others.
    let anchorIsNameAndKey: Bool
    let policies: [any VerifierPolicy]

    /// The profile of `policy`'s platform.
    static func of(_ policy: TrustPolicy) -> VerifierProfile {
        switch policy.platform {
        case .apple:
            return VerifierProfile(
                platform: .apple, issuerMatching: .nameAndKeyIdentifier, nullParametersEquivalent: true, isOpenSSLVerification: false,
                anchorIsNameAndKey: false,
                policies: [ValidityPeriods(includesAnchor: true), IssuerConstraints(includesAnchor: true), ServerAuthentication(), LeafSignatureKeyUsage(),
                           SubjectAltNameHost(), WildcardNameConstraints(includesAnchor: true), PlatformAlgorithmFloor(), EmptySubjectNames()])
        case .jvm:
            return pkix(.jvm, nullParametersEquivalent: true)
        case .android:
            return pkix(.android, nullParametersEquivalent: false)
        case .curl:
            return VerifierProfile(
                platform: .curl, issuerMatching: .nameAndKeyIdentifier, nullParametersEquivalent: false, isOpenSSLVerification: true,
                anchorIsNameAndKey: false, policies: [CurlHost(), HandshakeLeafKey()])
        }
    }

    /// The JDK's PKIX and Android's (libcore's PKIX under Conscrypt's trust manager): a trust
    /// anchor is a name and a key, so nothing of the anchor certificate but its key is judged.
    private static func pkix(_ platform: TrustPlatform, nullParametersEquivalent: Bool) -> VerifierProfile {
        let jdkChecks: [any VerifierPolicy] = platform == .jvm
            ? [JDKTrustAnchorCheck(), HandshakeLeafKey(), JDKIssuerCurves(), EmptySubjectNames(), JDKCertificatePolicies(), JDKCriticalExtensions(),
               JDKTLS13CertificateSignatures(), JDKSubjectAltNames()]
            : []
        return VerifierProfile(
            platform: platform, issuerMatching: .nameAndSignature, nullParametersEquivalent: nullParametersEquivalent,
            isOpenSSLVerification: false, anchorIsNameAndKey: true,
            policies: [ValidityPeriods(includesAnchor: false), IssuerConstraints(includesAnchor: false), ServerAuthentication(), LeafSignatureKeyUsage(),
                       SubjectAltNameHost(), NameConstraintsBelowAnchor(jdk: platform == .jvm), WildcardNameConstraints(includesAnchor: false),
                       PlatformAlgorithmFloor()]
                + jdkChecks)
    }
}

/// curl's host check (`Curl_ossl_verifyhost`, lib/vtls/openssl.c), done by curl itself rather
/// than by OpenSSL: the DNS subjectAltNames for a name, the IP ones for an address, each DNS entry
/// by `Curl_cert_hostcheck` (``CurlHostCheck``: trailing dots ignored on both sides, so a
/// certificate for `api.example.com.` serves `api.example.com`); the last subject CN only when
/// the leaf has no DNS or IP subjectAltName at all.
struct CurlHost: VerifierPolicy {
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        guard let host = context.policy.host, let leaf = context.chain.first else { return [] }
        if CurlHostCheck.fallsBackToCommonName(leaf) {
            return TrustEvaluator.commonNameMismatch(leaf: leaf, host: host).map { [$0] } ?? []
        }
        let matched = leaf.subjectAlternativeNames.contains { entry in
            switch (entry, host) {
            case (.dns(let pattern), .dns): return CurlHostCheck.matches(pattern: pattern, host: host)
            case (.ipAddress(let address), .ipv4(let bytes)), (.ipAddress(let address), .ipv6(let bytes)): return address == bytes
            default: return false
            }
        }
        if matched { return [] }
        return [context.failure(host.isIPAddress ? X509_V_ERR_IP_ADDRESS_MISMATCH : X509_V_ERR_HOSTNAME_MISMATCH, at: 0)]
    }
}
