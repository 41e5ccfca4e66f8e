import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// The leaf's key size, key usage and extended key usage as each platform judges them.
///
/// EC keys: Apple's SSL policy wants P-256 or larger (`SecPolicyAddStrongKeySizeOptions`),
/// its basic X.509 policy 160 bits (`SecCertificateIsWeakKey`); Conscrypt 160 bits
/// (`ChainStrengthAnalyzer`, `MIN_EC_FIELD_SIZE_BITS`); the JDK refuses `EC keySize < 224`
/// (`jdk.certpath.disabledAlgorithms`); curl on OpenSSL at security level 1 wants 80 bits of
/// security (P-192 has 96). Extended key usage: a leaf whose only EKU is anyExtendedKeyUsage
/// passes Apple's SSL policy (`set_ssl_ekus`), the JDK (`EndEntityChecker.checkEKU`) and
/// Conscrypt (`ExtendedKeyUsagePKIXCertPathChecker`); OpenSSL's `X509_PURPOSE_SSL_SERVER`
/// wants serverAuth, so curl refuses it. Key usage: TLS 1.3 signs with the leaf's key, so
/// BoringSSL (Apple, Android) and the JDK want digitalSignature; OpenSSL any TLS use.
@Suite("Leaf key sizes, key usage and extended key usage per platform")
struct LeafKeyAndUsageTests {
    let pki = PKI.shared

    func leaf(keyAlgorithm: String = "ec", eku: String = "serverAuth", keyUsage: String? = nil) throws -> Certificate {
        var extensions = OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"], eku: eku)
        if let keyUsage { extensions = extensions.map { $0.hasPrefix("keyUsage=") ? "keyUsage=critical,\(keyUsage)" : $0 } }
        return try OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: extensions,
                                      issuer: pki.intermediate, issuerKey: pki.intermediateKey, keyAlgorithm: keyAlgorithm)
    }

    /// The platforms that accept `leaf` under the PKI intermediate, for api.example.com.
    func accepting(_ leaf: Certificate) throws -> [String] {
        let trust = ServerTrust(presentedChain: [leaf, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store())
        // A pattern for another host: OkHttp then decides on its platform's trust manager alone.
        let unpinned = [try OkHttpPolicy.Pin(pattern: "other.example.com", pin: pki.root.spkiPin.okhttp)]
        let policies: [(String, any PinningPolicy)] = [
            ("apple-ssl", AFNetworkingPolicy()),
            ("apple-basic", AFNetworkingPolicy(validatesDomainName: false)),
            ("android", OkHttpPolicy(pins: unpinned, platform: .android)),
            ("jvm", OkHttpPolicy(pins: unpinned, platform: .jvm)),
            ("curl", CurlPolicy(pinnedPublicKeys: [leaf.spkiPin])),
        ]
        return policies.filter { $0.1.evaluate(trust).decision == .accept }.map(\.0)
    }

    @Test("a P-192 leaf key is refused by Apple's SSL policy and by the JDK")
    func aP192LeafKey() throws {
        let weak = try leaf(keyAlgorithm: "ec:P-192")
        // curl takes P-192 (96 bits of security) at OpenSSL's level 1, not at level 2 (Debian's and Ubuntu's default).
        #expect(try accepting(weak) == ["apple-basic", "android"] + (CurlSecurityLevel.current <= 1 ? ["curl"] : []))
        let jvm = OkHttpPolicy(pins: [], platform: .jvm).evaluate(
            ServerTrust(presentedChain: [weak, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store()))
        #expect(jvm.steps.first?.outcome.contains("EC 192-bit key") == true, "\(jvm.steps)")
        #expect(jvm.steps.first?.outcome.contains("at least 224 bits") == true, "\(jvm.steps)")
    }

    @Test("a P-224 leaf key is refused by Apple's SSL policy, and the JDK and curl cannot handshake with it")
    func aP224LeafKey() throws {
        let weak = try leaf(keyAlgorithm: "ec:P-224")
        // No TLS signature scheme of the JDK's or OpenSSL 3.0's names P-224 (real OkHttp and curl fail the handshake).
        #expect(try accepting(weak) == ["apple-basic", "android"])
        let jvm = OkHttpPolicy(pins: [], platform: .jvm).evaluate(
            ServerTrust(presentedChain: [weak, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store()))
        #expect(jvm.steps.contains { $0.outcome.contains("EC key on secp224r1") && $0.outcome.contains("the handshake fails") }, "\(jvm.steps)")
        let apple = AFNetworkingPolicy().evaluate(
            ServerTrust(presentedChain: [weak, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store()))
        #expect(apple.steps.contains { $0.outcome.contains("EC 224-bit key") && $0.outcome.contains("at least 256 bits") }, "\(apple.steps)")
    }

    @Test("a leaf whose only extended key usage is anyExtendedKeyUsage passes every SSL policy but curl's")
    func anyExtendedKeyUsageOnTheLeaf() throws {
        let any = try leaf(eku: "anyExtendedKeyUsage")
        #expect(try accepting(any) == ["apple-ssl", "apple-basic", "android", "jvm"])
        let control = try leaf()
        #expect(try accepting(control) == ["apple-ssl", "apple-basic", "android", "jvm", "curl"])
    }

    @Test("Apple's SSL policy does not judge the signature of a user-installed anchor")
    func aUserInstalledAnchorsOwnSHA1SignatureIsNotJudged() throws {
        // An issuing CA signed with SHA-1 under the public root, installed by the user as an anchor
        // (SecPolicyCheckSignatureHashAlgorithms skips a user-trusted anchor).
        let (sha1CA, sha1CAKey) = try OpenSSLIssued.leafWithKey(
            subject: "/CN=SHA-1 Issuing CA",
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"],
            issuer: pki.root, issuerKey: pki.rootKey, digest: "sha1")
        let leaf = try OpenSSLIssued.leaf(subject: "/CN=api.example.com",
                                          extensions: OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"]),
                                          issuer: sha1CA, issuerKey: sha1CAKey)
        let time = Date().addingTimeInterval(5)
        let asUserAnchor = ServerTrust(presentedChain: [leaf, sha1CA], host: pki.host, time: time,
                                       store: TrustStore(systemAnchors: [pki.root], userAnchors: [sha1CA]))
        let accepted = AFNetworkingPolicy().evaluate(asUserAnchor)
        #expect(accepted.decision == .accept, "\(accepted.steps)")
        // Below the public root instead, the same SHA-1 signature is judged and refused.
        let belowTheRoot = ServerTrust(presentedChain: [leaf, sha1CA], host: pki.host, time: time, store: pki.store())
        let refused = AFNetworkingPolicy().evaluate(belowTheRoot)
        #expect(refused.decision == .reject)
        #expect(refused.steps.contains { $0.outcome.contains("signed with SHA-1") }, "\(refused.steps)")
    }

    @Test("Apple's SSL policy does not judge the key size of a leaf the user installed as an anchor")
    func aUserAnchoredLeafsKeySizeIsNotJudged() throws {
        let dir = try TemporaryDirectory()
        let keyFile = (dir.path as NSString).appendingPathComponent("rsa1024.key")
        let generated = try run("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", keyFile])
        #expect(generated.status == 0, "\(generated.stderr)")
        let key = try PrivateKey(pemEncoded: try String(contentsOfFile: keyFile, encoding: .utf8))
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400)),
                                         subjectKey: key, signer: .selfSigned(key))
        // SecPolicyCheckKeySize returns early for a user-anchored leaf.
        let userAnchored = ServerTrust(presentedChain: [leaf], host: pki.host, time: pki.now,
                                       store: TrustStore(systemAnchors: [pki.root], userAnchors: [leaf]))
        let accepted = AFNetworkingPolicy().evaluate(userAnchored)
        #expect(accepted.decision == .accept, "\(accepted.steps)")
        // The same certificate in the system store is judged: RSA 1024 is under the SSL policy's 2048 bits.
        let systemAnchored = ServerTrust(presentedChain: [leaf], host: pki.host, time: pki.now,
                                         store: TrustStore(systemAnchors: [pki.root, leaf], userAnchors: []))
        let refused = AFNetworkingPolicy().evaluate(systemAnchored)
        #expect(refused.decision == .reject)
        #expect(refused.steps.contains { $0.outcome.contains("RSA 1024-bit key") }, "\(refused.steps)")
    }

    @Test("an anchor whose keyUsage lacks keyCertSign is refused on Apple and by the JDK, not by Android")
    func anAnchorWithoutKeyCertSign() throws {
        // Apple judges every issuer, the anchor included; the JDK checks the anchor it validated up to
        // (PKIXValidator.verifyTrustAnchor); Android's PKIX takes an anchor as a name and a key.
        let (ca, caKey) = try OpenSSLIssued.leafWithKey(
            subject: "/CN=Issuing CA Without keyCertSign",
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature"],
            issuer: pki.root, issuerKey: pki.rootKey)
        let leaf = try OpenSSLIssued.leaf(subject: "/CN=api.example.com",
                                          extensions: OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"]),
                                          issuer: ca, issuerKey: caKey)
        let trust = ServerTrust(presentedChain: [leaf, ca], host: pki.host, time: Date().addingTimeInterval(5),
                                store: TrustStore(systemAnchors: [ca], userAnchors: []))
        let unpinned = [try OkHttpPolicy.Pin(pattern: "other.example.com", pin: pki.root.spkiPin.okhttp)]
        #expect(AFNetworkingPolicy().evaluate(trust).decision == .reject)
        #expect(AFNetworkingPolicy(validatesDomainName: false).evaluate(trust).decision == .reject)
        #expect(OkHttpPolicy(pins: unpinned, platform: .android).evaluate(trust).decision == .accept)
        let jvm = OkHttpPolicy(pins: unpinned, platform: .jvm).evaluate(trust)
        #expect(jvm.decision == .reject)
        #expect(jvm.steps.contains { $0.outcome.contains("trust anchor and its keyUsage lacks keyCertSign") }, "\(jvm.steps)")
    }

    @Test("a leaf whose keyUsage lacks digitalSignature is refused everywhere but curl, in either Apple policy mode")
    func aLeafKeyUsageWithoutDigitalSignature() throws {
        for usage in ["keyEncipherment", "keyAgreement", "keyEncipherment,keyAgreement"] {
            let leaf = try leaf(keyAlgorithm: "rsa:2048", keyUsage: usage)
            #expect(try accepting(leaf) == ["curl"], "\(usage)")
        }
        let refused = try leaf(keyAlgorithm: "rsa:2048", keyUsage: "keyEncipherment")
        let trust = ServerTrust(presentedChain: [refused, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store())
        let apple = AFNetworkingPolicy(validatesDomainName: false).evaluate(trust)
        #expect(apple.steps.contains { $0.outcome.contains("keyUsage of keyEncipherment without digitalSignature") && $0.outcome.contains("Apple's TLS stack") },
                "\(apple.steps)")
        // No TLS use at all: curl refuses it too (OpenSSL's purpose check).
        #expect(try accepting(leaf(keyUsage: "nonRepudiation")) == [])
        // digitalSignature alone is enough everywhere.
        #expect(try accepting(leaf(keyUsage: "digitalSignature")) == ["apple-ssl", "apple-basic", "android", "jvm", "curl"])
    }

    @Test("an empty subject: Apple and the JDK want a critical subjectAltName on the leaf; Apple refuses a CA without a subject")
    func emptySubjects() throws {
        func leafWithEmptySubject(critical: Bool) throws -> Certificate {
            try OpenSSLIssued.leaf(subject: "/", extensions: ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature",
                                                              "extendedKeyUsage=serverAuth", "subjectAltName=\(critical ? "critical," : "")DNS:api.example.com"],
                                   issuer: pki.intermediate, issuerKey: pki.intermediateKey)
        }
        #expect(try accepting(leafWithEmptySubject(critical: true)) == ["apple-ssl", "apple-basic", "android", "jvm", "curl"])
        #expect(try accepting(leafWithEmptySubject(critical: false)) == ["android", "curl"])
        // A CA without a subject, issuing a well-formed leaf.
        let (anonymous, anonymousKey) = try OpenSSLIssued.leafWithKey(subject: "/", extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
                                                                                                "subjectAltName=critical,DNS:ca.example.com"],
                                                                      issuer: pki.root, issuerKey: pki.rootKey)
        let leaf = try OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"]),
                                          issuer: anonymous, issuerKey: anonymousKey)
        let trust = ServerTrust(presentedChain: [leaf, anonymous], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store())
        let apple = AFNetworkingPolicy(validatesDomainName: false).evaluate(trust)
        #expect(apple.decision == .reject)
        #expect(apple.steps.contains { $0.outcome.contains("empty subject and is a CA") }, "\(apple.steps)")
    }

    @Test("a critical extension the JDK's PKIX has no checker for is refused below the anchor on the JVM alone")
    func criticalExtensionsTheJDKDoesNotHandle() throws {
        let server = OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"])
        func leaf(_ extra: String, issuer: Certificate? = nil, issuerKey: PrivateKey? = nil) throws -> Certificate {
            try OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: server + [extra],
                                   issuer: issuer ?? pki.intermediate, issuerKey: issuerKey ?? pki.intermediateKey)
        }
        // OpenSSL handles both (curl accepts); the JDK refuses ("unrecognized critical extension(s)",
        // real OkHttp 3.13.1 on JDK 17).
        let crlDistributionPoints = try leaf("crlDistributionPoints=critical,URI:http://crl.example.com/ca.crl")
        #expect(try accepting(crlDistributionPoints) == ["apple-ssl", "apple-basic", "android", "curl"])
        let ocspNoCheck = try leaf("noCheck=critical,ignored")
        #expect(try accepting(ocspNoCheck) == ["apple-ssl", "apple-basic", "android", "curl"])
        let jvm = OkHttpPolicy(pins: [], platform: .jvm).evaluate(
            ServerTrust(presentedChain: [crlDistributionPoints, pki.intermediate], host: pki.host, time: Date().addingTimeInterval(5), store: pki.store()))
        #expect(jvm.steps.first?.outcome.contains("certificate #0 (CN=api.example.com) has a critical X509v3 CRL Distribution Points (2.5.29.31)") == true, "\(jvm.steps)")
        // Those the JDK's checkers take pass, marked critical or not.
        #expect(try accepting(leaf("certificatePolicies=critical,1.2.3.4")).contains("jvm"))
        // On an intermediate too; on the anchor it is never read (a name and a key).
        let (intermediate, intermediateKey) = try OpenSSLIssued.leafWithKey(
            subject: "/CN=Critical CRL Intermediate",
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
                         "crlDistributionPoints=critical,URI:http://crl.example.com/root.crl"],
            issuer: pki.root, issuerKey: pki.rootKey)
        let below = try OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: server, issuer: intermediate, issuerKey: intermediateKey)
        let chain = [below, intermediate]
        let trust = { (anchor: Certificate) in
            ServerTrust(presentedChain: chain, host: self.pki.host, time: Date().addingTimeInterval(5), store: TrustStore(systemAnchors: [anchor]))
        }
        #expect(OkHttpPolicy(pins: [], platform: .jvm).evaluate(trust(pki.root)).decision == .reject)
        #expect(OkHttpPolicy(pins: [], platform: .jvm).evaluate(trust(intermediate)).decision == .accept)
    }

    @Test("a trusted self-signed leaf that carries name constraints is judged like any trusted leaf")
    func aTrustedLeafWithNameConstraints() throws {
        // Nothing lies below it for its constraints to bind, on any platform.
        let key = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400)),
                                         subjectKey: key, signer: .selfSigned(key))
        let constrained = try OpenSSLIssued.root(commonName: "api.example.com", digest: "sha256",
                                                 extensions: ["nameConstraints=critical,permitted;DNS:example.com", "subjectAltName=DNS:api.example.com",
                                                              "extendedKeyUsage=serverAuth"]).0
        for certificate in [leaf, constrained] {
            for platform in TrustPlatform.allCases {
                let evaluation = TrustEvaluator.evaluate([certificate], policy: .ssl(host: pki.host, platform: platform), at: pki.now,
                                                         anchors: TrustAnchors(system: [certificate]))
                #expect(evaluation.builtChain == [certificate], "\(platform)")
            }
        }
    }
}
