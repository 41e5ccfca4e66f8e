import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import PinproxyTestSupport
import Testing

/// Chains on which the platforms disagree, served on loopback to the REAL library where it
/// runs here (OkHttp 3.13.1 on OpenJDK 17, curl 7.88 on OpenSSL 3.0) and judged by the
/// emulation beside it: both must give the same verdict.
@Suite(.timeLimit(.minutes(10)), .serialized)
struct RealLibraryFindingTests {
    static let day: TimeInterval = 86_400
    static let hostText = "api.platform.test"
    static let host = try! HostName(validating: hostText)

    /// A CA certificate valid from `from` to `to` days from now.
    static func authority(_ name: String, key: PrivateKey, signer: CertificateSigner, from: Double = -30, to: Double = 365) throws -> Certificate {
        try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: name, organization: "Platform Test"),
                                  notBefore: Date().addingTimeInterval(from * day), notAfter: Date().addingTimeInterval(to * day)),
            subjectKey: key, signer: signer)
    }

    static func root(_ name: String, from: Double = -30, to: Double = 3650) throws -> (Certificate, PrivateKey) {
        let key = try PrivateKey.generate(.ecP256)
        return (try authority(name, key: key, signer: .selfSigned(key), from: from, to: to), key)
    }

    static func leaf(signer: CertificateSigner) throws -> (Certificate, PrivateKey) {
        let key = try PrivateKey.generate(.ecP256)
        let spec = CertificateSpec.serverLeaf(names: [host], notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(60 * day))
        return (try Certificate.issue(spec, subjectKey: key, signer: signer), key)
    }

    /// The emulated OkHttp verdict on `platform`, the device trusting `anchors` as the JVM
    /// client's custom trust manager does (user anchors: none of them is a JDK-bundled root).
    static func okHttp(_ chain: [Certificate], pins: [String], anchors: [Certificate], platform: OkHttpPolicy.Platform) throws -> Verdict {
        let policy = OkHttpPolicy(pins: try pins.map { try OkHttpPolicy.Pin(pattern: hostText, pin: $0) }, platform: platform)
        return policy.evaluate(ServerTrust(presentedChain: chain, host: host, store: TrustStore(systemAnchors: [], userAnchors: anchors)))
    }

    static func curl(_ chain: [Certificate], pins: [SPKIPin], anchors: [Certificate]) -> Verdict {
        CurlPolicy(pinnedPublicKeys: pins, caBundle: anchors)
            .evaluate(ServerTrust(presentedChain: chain, host: host, store: TrustStore(systemAnchors: [])))
    }

    /// Real OkHttp and the `jvm` emulation, side by side; returns the shared verdict.
    static func okHttpAgree(_ chain: [Certificate], key: PrivateKey, pins: [String], anchors: [Certificate]) throws -> Bool {
        let server = try ChainServer(chain: chain, key: key)
        let real = try RealClient.okHttp(host: hostText, port: server.port, pins: pins, anchors: anchors)
        let emulated = try okHttp(chain, pins: pins, anchors: anchors, platform: .jvm)
        #expect(real.accepted == emulated.connectionProceeds, "real OkHttp: \(real.output)\nemulation: \(emulated.explained)")
        return real.accepted
    }

    /// Real curl and the emulation, side by side; returns the shared verdict.
    static func curlAgree(_ chain: [Certificate], key: PrivateKey, pins: [SPKIPin], anchors: [Certificate]) throws -> Bool {
        let server = try ChainServer(chain: chain, key: key)
        let real = try RealClient.curl(host: hostText, port: server.port, pins: pins.map(\.curl), anchors: anchors)
        let emulated = curl(chain, pins: pins, anchors: anchors)
        #expect((real.status == 0) == emulated.connectionProceeds, "real curl: exit \(real.status) \(real.output)\nemulation: \(emulated.explained)")
        return real.status == 0
    }

    @Test func anExpiredTrustAnchorIsAcceptedByTheJDKAndAndroidNotByCurl() throws {
        let (root, rootKey) = try Self.root("Expired Root", from: -400, to: -10)
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Self.authority("Issuing CA", key: intermediateKey, signer: .authority(root, rootKey))
        let (leaf, key) = try Self.leaf(signer: .authority(intermediate, intermediateKey))
        let chain = [leaf, intermediate]
        #expect(try Self.okHttpAgree(chain, key: key, pins: [intermediate.spkiPin.okhttp], anchors: [root]))
        // Android does not enforce an anchor's expiry either; Apple does.
        let onAndroid = try Self.okHttp(chain, pins: [intermediate.spkiPin.okhttp], anchors: [root], platform: .android)
        #expect(onAndroid.connectionProceeds && onAndroid.explained.contains("the anchor CN=Expired Root expired on"), "\(onAndroid.explained)")
        let xml = #"<network-security-config><base-config><trust-anchors><certificates src="user"/></trust-anchors></base-config></network-security-config>"#
        let nsc = try NetworkSecurityConfig.parse(Data(xml.utf8), file: "nsc.xml") { _, _ in ("", []) }
        let android = AndroidPolicy(config: nsc).evaluate(ServerTrust(presentedChain: chain, host: Self.host, store: TrustStore(systemAnchors: [], userAnchors: [root])))
        #expect(android.connectionProceeds, "\(android.explained)")
        let apple = CustomAnchorsPolicy(anchorCertificates: [root]).evaluate(ServerTrust(presentedChain: chain, host: Self.host, store: TrustStore(systemAnchors: [])))
        #expect(!apple.connectionProceeds, "\(apple.explained)")
        #expect(!(try Self.curlAgree(chain, key: key, pins: [leaf.spkiPin], anchors: [root])))
    }

    @Test func anAuthorityKeyIdentifierNamingAnotherKeyIsAcceptedByTheJDKNotByCurl() throws {
        let (root, rootKey) = try Self.root("AKI Root")
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Self.authority("AKI Issuing CA", key: intermediateKey, signer: .authority(root, rootKey))
        // Same subject, another key: the leaf's authorityKeyIdentifier names this one's key,
        // while the real intermediate's key signs it.
        let decoy = try Self.authority("AKI Issuing CA", key: try PrivateKey.generate(.ecP256), signer: .authority(root, rootKey))
        let (leaf, key) = try Self.leaf(signer: .authority(decoy, intermediateKey))
        #expect(leaf.authorityKeyIdentifier != intermediate.subjectKeyIdentifier && leaf.isIssued(by: intermediate) == false)
        let chain = [leaf, intermediate]
        #expect(try Self.okHttpAgree(chain, key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]))
        #expect(try Self.okHttp(chain, pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .android).connectionProceeds)
        #expect(!(try Self.curlAgree(chain, key: key, pins: [leaf.spkiPin], anchors: [root])))
    }

    @Test func aSHA1SignedLeafUnderAPrivateRootIsAcceptedByTheJDKNotByAndroidOrCurl() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Private Root", digest: "sha256")
        let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                        issuer: root, issuerKey: rootKey, digest: "sha1")
        #expect(leaf.signatureDigestName == "SHA1")
        #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]))
        // The JDK refuses SHA-1 only up to a root it ships itself (jdkCA): a system anchor here.
        let bundled = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: Self.hostText, pin: leaf.spkiPin.okhttp)], platform: .jvm)
            .evaluate(ServerTrust(presentedChain: [leaf], host: Self.host, store: TrustStore(systemAnchors: [root])))
        #expect(!bundled.connectionProceeds, "\(bundled.explained)")
        let android = try Self.okHttp([leaf], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .android)
        #expect(!android.connectionProceeds && android.explained.contains("SHA-1"), "\(android.explained)")
        #expect(!(try Self.curlAgree([leaf], key: key, pins: [leaf.spkiPin], anchors: [root])))
    }

    @Test func theJVMCleanerEndsAtTheRootOfTheFirstPresentedSignerAndroidAtTheValidPath() throws {
        let (rootA, rootAKey) = try Self.root("Root A")
        let (rootB, rootBKey) = try Self.root("Root B")
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let expiredTwin = try Self.authority("Cross-signed CA", key: intermediateKey, signer: .authority(rootA, rootAKey), from: -400, to: -10)
        let validTwin = try Self.authority("Cross-signed CA", key: intermediateKey, signer: .authority(rootB, rootBKey))
        let (leaf, key) = try Self.leaf(signer: .authority(validTwin, intermediateKey))
        let chain = [leaf, expiredTwin, validTwin]
        let pins = [rootB.spkiPin.okhttp]
        #expect(!(try Self.okHttpAgree(chain, key: key, pins: pins, anchors: [rootA, rootB])))
        let jvm = try Self.okHttp(chain, pins: pins, anchors: [rootA, rootB], platform: .jvm)
        #expect(jvm.explained.contains("cleaned chain (3 certificates ending at CN=Root A, BasicCertificateChainCleaner"), "\(jvm.explained)")
        // Android pins over the path it validated: through the valid twin to root B.
        let android = try Self.okHttp(chain, pins: pins, anchors: [rootA, rootB], platform: .android)
        #expect(android.connectionProceeds && android.matchedPins == pins, "\(android.explained)")
        // Pinning root A instead: the JVM accepts (the cleaned chain ends there), Android refuses.
        #expect(try Self.okHttpAgree(chain, key: key, pins: [rootA.spkiPin.okhttp], anchors: [rootA, rootB]))
        #expect(!(try Self.okHttp(chain, pins: [rootA.spkiPin.okhttp], anchors: [rootA, rootB], platform: .android).connectionProceeds))
    }

    @Test func curlFallsBackToTheCommonNameWhenTheSubjectAltNameExtensionHasNoDNSOrIPEntry() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "SAN Root", digest: "sha256")
        func leaf(commonName: String, san: String) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(commonName)",
                                          extensions: ["basicConstraints=critical,CA:FALSE", "extendedKeyUsage=serverAuth", san],
                                          issuer: root, issuerKey: rootKey)
        }
        // An empty subjectAltName extension (SEQUENCE OF nothing), the CN naming the host.
        let (empty, emptyKey) = try leaf(commonName: Self.hostText, san: "2.5.29.17=DER:3000")
        #expect(empty.subjectAlternativeNames.isEmpty)
        #expect(try Self.curlAgree([empty], key: emptyKey, pins: [empty.spkiPin], anchors: [root]))
        // The same with a CN for another host: the fallback compares it and refuses.
        let (otherName, otherKey) = try leaf(commonName: "other.platform.test", san: "2.5.29.17=DER:3000")
        #expect(!(try Self.curlAgree([otherName], key: otherKey, pins: [otherName.spkiPin], anchors: [root])))
        // Only an e-mail entry: no DNS or IP name, so the CN decides again.
        let (email, emailKey) = try leaf(commonName: Self.hostText, san: "subjectAltName=email:ops@platform.test")
        #expect(try Self.curlAgree([email], key: emailKey, pins: [email.spkiPin], anchors: [root]))
        // An IP entry but no DNS entry: curl does not look at the CN, and the name does not match.
        let (ipOnly, ipKey) = try leaf(commonName: Self.hostText, san: "subjectAltName=IP:192.0.2.7")
        #expect(!(try Self.curlAgree([ipOnly], key: ipKey, pins: [ipOnly.spkiPin], anchors: [root])))
        // Apple and Android never fall back to the CN.
        let apple = CustomAnchorsPolicy(anchorCertificates: [root]).evaluate(ServerTrust(presentedChain: [empty], host: Self.host, store: TrustStore(systemAnchors: [])))
        #expect(!apple.connectionProceeds && apple.explained.contains("host mismatch"), "\(apple.explained)")
    }

    @Test func aNullVersusAbsentSignatureParameterIsAcceptedByTheJDKNotByCurl() throws {
        let rootKey = try PrivateKey.generate(.rsa2048)
        let root = try Self.authority("RSA Root", key: rootKey, signer: .selfSigned(rootKey))
        let (leaf, key) = try Self.leaf(signer: .authority(root, rootKey))
        let stripped = try Certificate(derEncoded: try DERSurgery.withoutOuterSignatureParameters(leaf.derEncoded))
        #expect(try Self.okHttpAgree([stripped], key: key, pins: [stripped.spkiPin.okhttp], anchors: [root]))
        #expect(!(try Self.curlAgree([stripped], key: key, pins: [stripped.spkiPin], anchors: [root])))
    }

    /// curl's `sha256//…` copied into a CertificatePinner: okio decodes the extra `/` as a base64
    /// digit (33 bytes), OkHttp 3.13.1 takes the pin, and it never matches.
    @Test func aCurlStylePinInACertificatePinnerIsTakenAndNeverMatches() throws {
        let (root, rootKey) = try Self.root("Pin Style Root")
        let (leaf, leafKey) = try Self.leaf(signer: .authority(root, rootKey))
        #expect(try !Self.okHttpAgree([leaf, root], key: leafKey, pins: [leaf.spkiPin.curl], anchors: [root]))
        #expect(try Self.okHttpAgree([leaf, root], key: leafKey, pins: [leaf.spkiPin.okhttp], anchors: [root]))
        let verdict = try Self.okHttp([leaf, root], pins: [leaf.spkiPin.curl], anchors: [root], platform: .jvm)
        #expect(verdict.explained.contains("written curl-style"), "\(verdict.explained)")
    }

    @Test func aHeldCertificateStyleTestPKIIsAcceptedByRealOkHttpAndCurlAndTheEmulation() throws {
        // What OkHttp's HeldCertificate mints: CAs with basicConstraints and a path length, no
        // keyUsage, no extended key usage, no key identifiers on any certificate.
        func spec(_ name: String, isCA: Bool, pathLength: Int? = nil, names: [HostName] = []) -> CertificateSpec {
            CertificateSpec(subject: DistinguishedName(commonName: name), notBefore: Date().addingTimeInterval(-Self.day),
                            notAfter: Date().addingTimeInterval(30 * Self.day), subjectAlternativeNames: names, isCA: isCA,
                            pathLength: pathLength, includeKeyIdentifiers: false)
        }
        let rootKey = try PrivateKey.generate(.ecP256)
        let root = try Certificate.issue(spec("root", isCA: true, pathLength: 1), subjectKey: rootKey, signer: .selfSigned(rootKey))
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Certificate.issue(spec("intermediate", isCA: true, pathLength: 0), subjectKey: intermediateKey, signer: .authority(root, rootKey))
        let key = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(spec("leaf", isCA: false, names: [Self.host]), subjectKey: key, signer: .authority(intermediate, intermediateKey))
        #expect(leaf.subjectKeyIdentifier == nil && intermediate.authorityKeyIdentifier == nil)
        let chain = [leaf, intermediate]
        #expect(try Self.okHttpAgree(chain, key: key, pins: [intermediate.spkiPin.okhttp], anchors: [root]))
        #expect(try Self.okHttp(chain, pins: [intermediate.spkiPin.okhttp], anchors: [root], platform: .android).connectionProceeds)
        #expect(try Self.curlAgree(chain, key: key, pins: [leaf.spkiPin], anchors: [root]))
        let apple = CustomAnchorsPolicy(anchorCertificates: [root]).evaluate(ServerTrust(presentedChain: chain, host: Self.host, store: TrustStore(systemAnchors: [])))
        #expect(apple.connectionProceeds, "\(apple.explained)")
    }

    @Test func aRootWhoseOnlyEKUIsAnyExtendedKeyUsageIsAcceptedByTheJDKNotByCurl() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "AnyEKU Root", digest: "sha256", extensions: ["extendedKeyUsage=anyExtendedKeyUsage"])
        let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                        issuer: root, issuerKey: rootKey)
        #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]))
        #expect(!(try Self.curlAgree([leaf], key: key, pins: [leaf.spkiPin], anchors: [root])))
    }

    @Test func aLeafWhoseKeyUsageLacksDigitalSignatureIsRefusedByTheJDKNotByCurl() throws {
        // TLS 1.3 signs the handshake with the leaf's key: the JDK wants digitalSignature; OpenSSL
        // takes any TLS use (keyEncipherment, keyAgreement) as enough.
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "KeyUsage Root", digest: "sha256")
        func leaf(_ usage: String, keyAlgorithm: String) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)",
                                          extensions: ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,\(usage)",
                                                       "extendedKeyUsage=serverAuth", "subjectAltName=DNS:\(Self.hostText)"],
                                          issuer: root, issuerKey: rootKey, keyAlgorithm: keyAlgorithm)
        }
        for (usage, algorithm) in [("keyEncipherment", "rsa:2048"), ("keyAgreement", "ec")] {
            let (refused, key) = try leaf(usage, keyAlgorithm: algorithm)
            #expect(!(try Self.okHttpAgree([refused], key: key, pins: [refused.spkiPin.okhttp], anchors: [root])), "\(usage)")
            #expect(try Self.curlAgree([refused], key: key, pins: [refused.spkiPin], anchors: [root]), "\(usage)")
            let jvm = try Self.okHttp([refused], pins: [refused.spkiPin.okhttp], anchors: [root], platform: .jvm)
            #expect(jvm.explained.contains("keyUsage of \(usage) without digitalSignature"), "\(jvm.explained)")
        }
        // The same leaf with digitalSignature beside keyEncipherment passes both.
        let (signing, key) = try leaf("digitalSignature,keyEncipherment", keyAlgorithm: "rsa:2048")
        #expect(try Self.okHttpAgree([signing], key: key, pins: [signing.spkiPin.okhttp], anchors: [root]))
        #expect(try Self.curlAgree([signing], key: key, pins: [signing.spkiPin], anchors: [root]))
    }

    /// A CA certificate under `issuer` with `constraint` as its nameConstraints (an
    /// `openssl x509` extension value such as `permitted;DNS:example.com`).
    static func constrainedCA(_ name: String, constraint: String, issuer: Certificate, issuerKey: PrivateKey) throws -> (Certificate, PrivateKey) {
        try OpenSSLIssued.leafWithKey(subject: "/CN=\(name)", extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
                                                                        "nameConstraints=critical,\(constraint)"], issuer: issuer, issuerKey: issuerKey)
    }

    static func serverLeaf(_ san: String, commonName: String = hostText, issuer: Certificate, issuerKey: PrivateKey) throws -> (Certificate, PrivateKey) {
        try OpenSSLIssued.leafWithKey(subject: "/CN=\(commonName)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(san)"]),
                                      issuer: issuer, issuerKey: issuerKey)
    }

    @Test func aRootsOwnNameConstraintsAreIgnoredByTheJDKNotByCurlButAnIntermediatesBindBoth() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Constrained Root", digest: "sha256",
                                                     extensions: ["nameConstraints=critical,permitted;DNS:example.com"])
        let (leaf, key) = try Self.serverLeaf(Self.hostText, issuer: root, issuerKey: rootKey)
        #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]))
        #expect(!(try Self.curlAgree([leaf], key: key, pins: [leaf.spkiPin], anchors: [root])))
        let jvm = try Self.okHttp([leaf], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .jvm)
        #expect(jvm.explained.contains("outside the name constraints of the anchor CN=Constrained Root"), "\(jvm.explained)")
        // Android's PKIX takes the anchor as a name and a key as well.
        #expect(try Self.okHttp([leaf], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .android).connectionProceeds)

        // Under the same root, an intermediate's exclusion still binds the JDK.
        let (excluding, excludingKey) = try Self.constrainedCA("Excluding CA", constraint: "excluded;DNS:platform.test", issuer: root, issuerKey: rootKey)
        let (below, belowKey) = try Self.serverLeaf(Self.hostText, issuer: excluding, issuerKey: excludingKey)
        #expect(!(try Self.okHttpAgree([below, excluding], key: belowKey, pins: [below.spkiPin.okhttp], anchors: [root])))
        #expect(!(try Self.curlAgree([below, excluding], key: belowKey, pins: [below.spkiPin], anchors: [root])))
        let refused = try Self.okHttp([below, excluding], pins: [below.spkiPin.okhttp], anchors: [root], platform: .jvm)
        #expect(refused.explained.contains("excluded subtree violation"), "\(refused.explained)")

        // A root excluding the host, issuing a wildcard that can name it: the JDK never reads the
        // root's constraints, and OpenSSL compares the wildcard literally, so both accept.
        let (excludingRoot, excludingRootKey) = try OpenSSLIssued.root(commonName: "Excluding Root", digest: "sha256",
                                                                       extensions: ["nameConstraints=critical,excluded;DNS:\(Self.hostText)"])
        let (wildcard, wildcardKey) = try Self.serverLeaf("*.platform.test", commonName: "wildcard", issuer: excludingRoot, issuerKey: excludingRootKey)
        #expect(try Self.okHttpAgree([wildcard], key: wildcardKey, pins: [wildcard.spkiPin.okhttp], anchors: [excludingRoot]))
        #expect(try Self.curlAgree([wildcard], key: wildcardKey, pins: [wildcard.spkiPin], anchors: [excludingRoot]))
    }

    @Test func anIntermediatesSubtreesBindTheJDKAndCurlAndACommonNameOutsideThemDoesNotCount() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Plain Root", digest: "sha256")
        let (excluding, excludingKey) = try Self.constrainedCA("Excluding CA", constraint: "excluded;DNS:platform.test", issuer: root, issuerKey: rootKey)
        let (excluded, excludedKey) = try Self.serverLeaf(Self.hostText, issuer: excluding, issuerKey: excludingKey)
        #expect(!(try Self.okHttpAgree([excluded, excluding], key: excludedKey, pins: [excluded.spkiPin.okhttp], anchors: [root])))
        #expect(!(try Self.curlAgree([excluded, excluding], key: excludedKey, pins: [excluded.spkiPin], anchors: [root])))
        // A subject CN outside the permitted subtree is not checked when a DNS subjectAltName is present.
        let (permitting, permittingKey) = try Self.constrainedCA("Permitting CA", constraint: "permitted;DNS:platform.test", issuer: root, issuerKey: rootKey)
        let (inside, insideKey) = try Self.serverLeaf(Self.hostText, commonName: "outside.example.org", issuer: permitting, issuerKey: permittingKey)
        #expect(try Self.okHttpAgree([inside, permitting], key: insideKey, pins: [inside.spkiPin.okhttp], anchors: [root]))
        #expect(try Self.curlAgree([inside, permitting], key: insideKey, pins: [inside.spkiPin], anchors: [root]))
    }

    @Test func aCommonNameAndASubjectEmailUnderConstraintsCountAsTheJDKReadsThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Names Root", digest: "sha256")
        // The JDK takes an IP-literal CN as an IP address when there is no IP subjectAltName
        // (OpenSSL never does): outside the CA's IP ranges, refused beside a good DNS subjectAltName.
        for constraint in ["permitted;IP:10.0.0.0/255.0.0.0", "excluded;IP:127.0.0.0/255.0.0.0"] {
            let (ca, caKey) = try Self.constrainedCA("IP CA", constraint: constraint, issuer: root, issuerKey: rootKey)
            let (leaf, key) = try Self.serverLeaf(Self.hostText, commonName: "127.0.0.1", issuer: ca, issuerKey: caKey)
            #expect(!(try Self.okHttpAgree([leaf, ca], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root])), "\(constraint): OkHttp")
            #expect(try Self.curlAgree([leaf, ca], key: key, pins: [leaf.spkiPin], anchors: [root]), "\(constraint): curl")
            let jvm = try Self.okHttp([leaf, ca], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .jvm)
            #expect(jvm.explained.contains("has the subject CN 127.0.0.1, which the JDK checks as an IP address"), "\(jvm.explained)")
        }
        // The subject's emailAddress counts for the JDK only without a subjectAltName extension;
        // OpenSSL counts it always.
        let (emailCA, emailCAKey) = try Self.constrainedCA("Email CA", constraint: "permitted;DNS:platform.test,permitted;email:platform.test",
                                                           issuer: root, issuerKey: rootKey)
        let (withEmail, withEmailKey) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)/emailAddress=someone@evil.example",
                                                                      extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                                      issuer: emailCA, issuerKey: emailCAKey)
        #expect(try Self.okHttpAgree([withEmail, emailCA], key: withEmailKey, pins: [withEmail.spkiPin.okhttp], anchors: [root]))
        #expect(!(try Self.curlAgree([withEmail, emailCA], key: withEmailKey, pins: [withEmail.spkiPin], anchors: [root])))
    }

    @Test func aWildcardThatCanNameAnExcludedHostIsRefusedByTheJDKNotByCurl() throws {
        // OpenSSL 3.0 compares `*.platform.test` with the excluded subtree as a literal string.
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Plain Root", digest: "sha256")
        let (excluding, excludingKey) = try Self.constrainedCA("Excluding API CA", constraint: "excluded;DNS:\(Self.hostText)", issuer: root, issuerKey: rootKey)
        let (wildcard, key) = try Self.serverLeaf("*.platform.test", commonName: "wildcard", issuer: excluding, issuerKey: excludingKey)
        #expect(!(try Self.okHttpAgree([wildcard, excluding], key: key, pins: [wildcard.spkiPin.okhttp], anchors: [root])))
        #expect(try Self.curlAgree([wildcard, excluding], key: key, pins: [wildcard.spkiPin], anchors: [root]))
        // A wildcard wider than the one permitted subtree is refused by both.
        let (permitting, permittingKey) = try Self.constrainedCA("Permitting API CA", constraint: "permitted;DNS:\(Self.hostText)", issuer: root, issuerKey: rootKey)
        let (wide, wideKey) = try Self.serverLeaf("*.platform.test", commonName: "wildcard", issuer: permitting, issuerKey: permittingKey)
        #expect(!(try Self.okHttpAgree([wide, permitting], key: wideKey, pins: [wide.spkiPin.okhttp], anchors: [root])))
        #expect(!(try Self.curlAgree([wide, permitting], key: wideKey, pins: [wide.spkiPin], anchors: [root])))
    }

    @Test func hostNamesAreMatchedAsRealOkHttpAndCurlMatchThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Host Root", digest: "sha256")
        // (subjectAltName entries, host, real OkHttp accepts, real curl accepts)
        let cases: [(san: String, host: String, okHttp: Bool, curl: Bool)] = [
            ("DNS:api.platform.test.", "api.platform.test", true, true),     // both ignore a trailing dot
            ("DNS:*.platform.test.", "api.platform.test", true, true),
            ("DNS:*.test", "platform.test", true, false),                    // curl wants two dots after the star
            ("DNS:API.Platform.Test", "api.platform.test", true, true),
            ("DNS:a*.platform.test", "api.platform.test", false, false),     // no partial-label wildcard
            ("DNS:*.api.platform.test", "api.platform.test", false, false),  // the star stands for one label
            ("DNS:api.platform.test,DNS:*.*.test", "api.platform.test", true, true),
            ("DNS:*.xn--bcher-kva.test", "a.xn--bcher-kva.test", true, true),
            ("DNS:127.0.0.1", "127.0.0.1", false, false),                    // an address only against IP entries
            ("IP:127.0.0.1", "127.0.0.1", true, true),
        ]
        for entry in cases {
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(entry.host)",
                                                            extensions: OpenSSLIssued.serverExtensions(san: entry.san.split(separator: ",").map(String.init)),
                                                            issuer: root, issuerKey: rootKey)
            let server = try ChainServer(chain: [leaf], key: key)
            let host = try HostName(validating: entry.host)
            let realOkHttp = try RealClient.okHttp(host: entry.host, port: server.port, pins: [], anchors: [root])
            let realCurl = try RealClient.curl(host: entry.host, port: server.port, pins: [leaf.spkiPin.curl], anchors: [root])
            let jvm = OkHttpPolicy(pins: [], platform: .jvm)
                .evaluate(ServerTrust(presentedChain: [leaf], host: host, store: TrustStore(systemAnchors: [], userAnchors: [root])))
            let curl = CurlPolicy(pinnedPublicKeys: [leaf.spkiPin], caBundle: [root])
                .evaluate(ServerTrust(presentedChain: [leaf], host: host, store: TrustStore(systemAnchors: [])))
            #expect(realOkHttp.accepted == entry.okHttp, "\(entry.san) for \(entry.host): real OkHttp \(realOkHttp.output)")
            #expect(jvm.connectionProceeds == entry.okHttp, "\(entry.san) for \(entry.host): \(jvm.explained)")
            #expect((realCurl.status == 0) == entry.curl, "\(entry.san) for \(entry.host): real curl \(realCurl.output)")
            #expect(curl.connectionProceeds == entry.curl, "\(entry.san) for \(entry.host): \(curl.explained)")
        }
    }

    @Test func extensionsOfEachCertificateAreJudgedAsRealOkHttpAndCurlJudgeThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Extensions Root", digest: "sha256")
        let caLines = ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"]
        let unknownCritical = "1.2.3.4.5.6.7=critical,ASN1:NULL"
        func ca(_ name: String, _ lines: [String], under issuer: (Certificate, PrivateKey)) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(name)", extensions: lines, issuer: issuer.0, issuerKey: issuer.1)
        }
        func leaf(_ lines: [String] = OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]), keyAlgorithm: String = "ec",
                  under issuer: (Certificate, PrivateKey)) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: lines, issuer: issuer.0, issuerKey: issuer.1, keyAlgorithm: keyAlgorithm)
        }
        let san = OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"])
        let top = (root, rootKey)
        let pathLengthZero = try ca("Path Length 0 CA", ["basicConstraints=critical,CA:TRUE,pathlen:0", "keyUsage=critical,keyCertSign,cRLSign"], under: top)
        let underPathLengthZero = try ca("Under Path Length 0", caLines, under: pathLengthZero)
        let clientAuthCA = try ca("ClientAuth CA", caLines + ["extendedKeyUsage=clientAuth"], under: top)
        let criticalRoot = try OpenSSLIssued.root(commonName: "Critical Extension Root", digest: "sha256", extensions: [unknownCritical])
        let criticalCA = try ca("Critical Extension CA", caLines + [unknownCritical], under: top)
        let noBasicConstraints = try ca("No basicConstraints CA", ["keyUsage=critical,keyCertSign,cRLSign"], under: top)
        let noCertSign = try ca("No keyCertSign CA", ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature"], under: top)
        let rsa1024 = CurlSecurityLevel.current <= 1

        // (what, chain and leaf key, anchors, real OkHttp accepts, real curl accepts)
        var cases: [(String, ([Certificate], PrivateKey), [Certificate], Bool, Bool)] = []
        func add(_ what: String, _ leaf: (Certificate, PrivateKey), _ issuers: [Certificate], anchors: [Certificate], okHttp: Bool, curl: Bool) {
            cases.append((what, ([leaf.0] + issuers, leaf.1), anchors, okHttp, curl))
        }
        // The JDK takes its anchor as a name and a key, but wants it to be a CA with keyCertSign.
        add("an anchor with pathLen 0 above an intermediate", try leaf(under: underPathLengthZero), [underPathLengthZero.0], anchors: [pathLengthZero.0], okHttp: true, curl: false)
        add("a pathLen 0 intermediate above another", try leaf(under: underPathLengthZero), [underPathLengthZero.0, pathLengthZero.0], anchors: [root], okHttp: false, curl: false)
        add("an unknown critical extension in the anchor", try leaf(under: criticalRoot), [], anchors: [criticalRoot.0], okHttp: true, curl: false)
        add("an unknown critical extension in an intermediate", try leaf(under: criticalCA), [criticalCA.0], anchors: [root], okHttp: false, curl: false)
        add("an unknown critical extension in the leaf", try leaf(san + [unknownCritical], under: top), [], anchors: [root], okHttp: false, curl: false)
        add("an anchor without basicConstraints", try leaf(under: noBasicConstraints), [], anchors: [noBasicConstraints.0], okHttp: false, curl: true)
        add("an intermediate without basicConstraints", try leaf(under: noBasicConstraints), [noBasicConstraints.0], anchors: [root], okHttp: false, curl: false)
        add("an anchor whose keyUsage lacks keyCertSign", try leaf(under: noCertSign), [], anchors: [noCertSign.0], okHttp: false, curl: false)
        // CAs' extended key usage: OpenSSL's purpose check looks at every certificate, the JDK at the leaf.
        add("an intermediate for clientAuth only", try leaf(under: clientAuthCA), [clientAuthCA.0], anchors: [root], okHttp: true, curl: false)
        add("an anchor for clientAuth only", try leaf(under: clientAuthCA), [], anchors: [clientAuthCA.0], okHttp: true, curl: false)
        add("a leaf whose nsCertType is client", try leaf(san + ["nsCertType=client"], under: top), [], anchors: [root], okHttp: false, curl: false)
        add("a leaf whose nsCertType is server", try leaf(san + ["nsCertType=server"], under: top), [], anchors: [root], okHttp: true, curl: true)
        add("a leaf for Microsoft SGC", try leaf(OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"], eku: "msSGC"), under: top), [], anchors: [root], okHttp: true, curl: true)
        add("a leaf for Netscape SGC", try leaf(OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"], eku: "nsSGC"), under: top), [], anchors: [root], okHttp: true, curl: true)
        add("a leaf that is a CA", try leaf(["basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature,keyCertSign", "extendedKeyUsage=serverAuth",
                                               "subjectAltName=DNS:\(Self.hostText)"], under: top), [], anchors: [root], okHttp: true, curl: true)
        add("an RSA 1024 leaf", try leaf(keyAlgorithm: "rsa:1024", under: top), [], anchors: [root], okHttp: true, curl: rsa1024)
        // Critical extensions OpenSSL handles and no checker of the JDK's PKIX does (revocation off).
        let criticalCRL = "crlDistributionPoints=critical,URI:http://crl.example.com/ca.crl"
        let criticalCRLCA = try ca("Critical CRL CA", caLines + [criticalCRL], under: top)
        let criticalCRLRoot = try OpenSSLIssued.root(commonName: "Critical CRL Root", digest: "sha256", extensions: [criticalCRL])
        add("a critical CRL distribution points in the leaf", try leaf(san + [criticalCRL], under: top), [], anchors: [root], okHttp: false, curl: true)
        add("a critical CRL distribution points in an intermediate", try leaf(under: criticalCRLCA), [criticalCRLCA.0], anchors: [root], okHttp: false, curl: true)
        add("a critical CRL distribution points in the anchor", try leaf(under: criticalCRLRoot), [], anchors: [criticalCRLRoot.0], okHttp: true, curl: true)
        add("a critical OCSP no-check in the leaf", try leaf(san + ["noCheck=critical,ignored"], under: top), [], anchors: [root], okHttp: false, curl: true)
        add("a critical nsCertType server in the leaf", try leaf(san + ["nsCertType=critical,server"], under: top), [], anchors: [root], okHttp: false, curl: true)
        // An empty subject needs a critical subjectAltName, or the JDK cannot parse the certificate — even an extra one.
        let namedByCriticalSAN = try OpenSSLIssued.leafWithKey(subject: "/", extensions: ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature",
                                                                                       "extendedKeyUsage=serverAuth", "subjectAltName=critical,DNS:\(Self.hostText)"],
                                                               issuer: root, issuerKey: rootKey)
        let namedByPlainSAN = try OpenSSLIssued.leafWithKey(subject: "/", extensions: san, issuer: root, issuerKey: rootKey)
        add("an empty subject with a critical subjectAltName", namedByCriticalSAN, [], anchors: [root], okHttp: true, curl: true)
        add("an empty subject with a non-critical subjectAltName", namedByPlainSAN, [], anchors: [root], okHttp: false, curl: true)
        add("an extra certificate with an empty subject and a non-critical subjectAltName", try leaf(under: top), [namedByPlainSAN.0], anchors: [root],
            okHttp: false, curl: true)

        for (what, served, anchors, okHttp, curl) in cases {
            let (chain, key) = served
            #expect(try Self.okHttpAgree(chain, key: key, pins: [chain[0].spkiPin.okhttp], anchors: anchors) == okHttp, "\(what): OkHttp")
            #expect(try Self.curlAgree(chain, key: key, pins: [chain[0].spkiPin], anchors: anchors) == curl, "\(what): curl")
        }
    }

    @Test func pinnedPublicKeyValuesAreReadAsRealCurlReadsThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Pin Text Root", digest: "sha256")
        let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                        issuer: root, issuerKey: rootKey)
        let server = try ChainServer(chain: [leaf], key: key)
        let pinned = leaf.spkiPin.base64, other = root.spkiPin.base64
        // (the value as written, whether curl connects)
        let values: [(String, Bool)] = [
            ("sha256//\(other);sha256//\(pinned)", true),
            ("sha256//\(other);;sha256//\(pinned)", true),
            ("sha256//\(pinned);", false),
            ("sha256//\(other); sha256//\(pinned)", false),
            ("sha256//\(other);SHA256//\(pinned)", false),
            ("sha256//\(pinned.replacingOccurrences(of: "=", with: ""))", false),
        ]
        for (value, connects) in values {
            let real = try RealClient.curl(host: Self.hostText, port: server.port, pins: [value], anchors: [root])
            #expect((real.status == 0) == connects, "\(value): real curl exit \(real.status) \(real.output)")
            let (pins, neverMatching) = CurlPolicy.readPins(value)
            let emulated = CurlPolicy(pinnedPublicKeys: pins, caBundle: [root], neverMatchingEntries: neverMatching)
                .evaluate(ServerTrust(presentedChain: [leaf], host: Self.host, store: TrustStore(systemAnchors: [])))
            #expect(emulated.connectionProceeds == connects, "\(value): \(emulated.explained)")
        }
    }

    @Test func keyAndSignatureAlgorithmsAreTakenAsRealOkHttpAndCurlTakeThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Algorithms Root", digest: "sha256")
        // Leaf keys: (algorithm, both clients complete the handshake).
        let leafKeys: [(String, Bool)] = [("ec:P-384", true), ("ec:P-521", true), ("ed25519", true), ("rsa-pss", true), ("rsa:3072", true),
                                          ("ec:secp256k1", false), ("ec:brainpoolP256r1", false), ("ec:P-224", false)]
        for (algorithm, accepted) in leafKeys {
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                            issuer: root, issuerKey: rootKey, keyAlgorithm: algorithm)
            #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]) == accepted, "\(algorithm): OkHttp")
            #expect(try Self.curlAgree([leaf], key: key, pins: [leaf.spkiPin], anchors: [root]) == accepted, "\(algorithm): curl")
        }
        // Issuers on curves the JDK 17 cannot verify with: curl takes their signatures, the JDK does not (the anchor's included).
        for curve in ["secp256k1", "brainpoolP256r1", "P-224"] {
            let (ca, caKey) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(curve) CA", extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"],
                                                            issuer: root, issuerKey: rootKey, keyAlgorithm: "ec:\(curve)")
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                            issuer: ca, issuerKey: caKey)
            #expect(!(try Self.okHttpAgree([leaf, ca], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root])), "\(curve) intermediate: OkHttp")
            #expect(try Self.curlAgree([leaf, ca], key: key, pins: [leaf.spkiPin], anchors: [root]), "\(curve) intermediate: curl")
            if curve == "secp256k1" {
                #expect(!(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [ca])), "\(curve) anchor: OkHttp")
            }
        }
        // Signatures TLS 1.3 does not name for certificates (DSA, SHA-224): the JDK refuses them in
        // its TLS 1.3 handshake, curl takes them; SHA-1 with RSA or ECDSA is a TLS 1.3 certificate
        // scheme, so the JDK takes it below a root of its own (curl's level 2 refuses it).
        for (name, algorithm, digest, okHttp) in [("DSA CA", "dsa:2048", "sha256", false), ("RSA SHA-224 CA", "rsa:2048", "sha224", false),
                                                  ("EC SHA-224 CA", "ec", "sha224", false), ("RSA SHA-1 CA", "rsa:2048", "sha1", true)] {
            let (ca, caKey) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(name)", extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"],
                                                            issuer: root, issuerKey: rootKey, keyAlgorithm: algorithm)
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                            issuer: ca, issuerKey: caKey, digest: digest)
            #expect(try Self.okHttpAgree([leaf, ca], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]) == okHttp, "\(name): OkHttp")
            #expect(try Self.curlAgree([leaf, ca], key: key, pins: [leaf.spkiPin], anchors: [root]) == (digest != "sha1" || CurlSecurityLevel.current <= 1),
                    "\(name): curl")
        }
        // Issuers signing with other algorithms: all taken.
        for (name, algorithm, digest) in [("Ed25519 CA", "ed25519", "sha256"), ("RSA-PSS CA", "rsa-pss", "sha256"), ("RSA SHA-512 CA", "rsa:2048", "sha512")] {
            let (ca, caKey) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(name)", extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"],
                                                            issuer: root, issuerKey: rootKey, keyAlgorithm: algorithm)
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]),
                                                            issuer: ca, issuerKey: caKey, digest: digest)
            #expect(try Self.okHttpAgree([leaf, ca], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]), "\(name): OkHttp")
            #expect(try Self.curlAgree([leaf, ca], key: key, pins: [leaf.spkiPin], anchors: [root]), "\(name): curl")
        }
    }

    /// The JDK runs no end-entity checks on a leaf it trusts directly (`Validator.validate` skips
    /// its `EndEntityChecker` for a one-certificate chain): a pinned self-signed server certificate
    /// passes real OkHttp whatever its extendedKeyUsage, keyUsage or Netscape type. The same
    /// leaf under a CA is refused; curl refuses the clientAuth one either way.
    @Test func aLeafTrustedDirectlyIsSparedTheJDKsEndEntityChecks() throws {
        let san = "subjectAltName=DNS:\(Self.hostText)"
        let cases: [(String, [String])] = [
            ("its only EKU clientAuth", OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"], eku: "clientAuth")),
            ("keyEncipherment its only keyUsage", ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,keyEncipherment", "extendedKeyUsage=serverAuth", san]),
            ("a Netscape type of SSL client", OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]) + ["nsCertType=client"]),
        ]
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "End Entity Root", digest: "sha256")
        for (what, lines) in cases {
            let (leaf, key) = try OpenSSLIssued.selfSigned(subject: "/CN=\(Self.hostText)", keyAlgorithm: "rsa:2048", extensions: lines)
            #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [leaf]), "\(what), trusted directly: OkHttp")
            let (issued, issuedKey) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: lines, issuer: root, issuerKey: rootKey,
                                                                    keyAlgorithm: "rsa:2048")
            #expect(try !Self.okHttpAgree([issued], key: issuedKey, pins: [issued.spkiPin.okhttp], anchors: [root]), "\(what), under a CA: OkHttp")
        }
        let (clientOnly, clientKey) = try OpenSSLIssued.selfSigned(subject: "/CN=\(Self.hostText)", keyAlgorithm: "rsa:2048", extensions: cases[0].1)
        #expect(try !Self.curlAgree([clientOnly], key: clientKey, pins: [clientOnly.spkiPin], anchors: [clientOnly]), "curl")
    }

    /// The JDK reads a subjectAltName whole or not at all: one entry it cannot parse beside the
    /// right DNS name, and real OkHttp finds no name (a non-critical extension) or cannot parse
    /// the certificate (a critical one). curl reads the DNS name and accepts.
    @Test func aSubjectAltNameTheJDKCannotReadHidesEveryName() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Unreadable SAN Root", digest: "sha256")
        let dns = "DNS:\(Self.hostText)"
        // (what, the subjectAltName line, real OkHttp accepts, the emulation's reason)
        let cases: [(String, String, Bool, String?)] = [
            ("a URI without a scheme", "subjectAltName=\(dns),URI:foo", false, "lists no name at all"),
            ("an email ending in @", "subjectAltName=\(dns),email:someone@", false, "lists no name at all"),
            ("an IP address entry beside it, the URI unreadable", "subjectAltName=\(dns),IP:127.0.0.1,URI:foo", false, "lists no name at all"),
            ("a critical one with a URI without a scheme", "subjectAltName=critical,\(dns),URI:foo", false, "Failed to parse server certificates"),
            ("a URI with a scheme", "subjectAltName=\(dns),URI:https://\(Self.hostText)/,email:someone@example.test", true, nil),
        ]
        for (what, line, accepted, reason) in cases {
            let lines = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth", line]
            let (leaf, key) = try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)", extensions: lines, issuer: root, issuerKey: rootKey)
            #expect(try Self.okHttpAgree([leaf], key: key, pins: [leaf.spkiPin.okhttp], anchors: [root]) == accepted, "\(what): OkHttp")
            #expect(try Self.curlAgree([leaf], key: key, pins: [leaf.spkiPin], anchors: [root]), "\(what): curl")
            if let reason {
                let verdict = try Self.okHttp([leaf], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .jvm)
                #expect(verdict.explained.contains(reason), "\(what): \(verdict.explained)")
                // Android reads the names with Conscrypt, which takes these entries.
                #expect(try Self.okHttp([leaf], pins: [leaf.spkiPin.okhttp], anchors: [root], platform: .android).connectionProceeds, "\(what): Android")
            }
        }
    }

    @Test func certificatePoliciesAreProcessedAsRealOkHttpProcessesThem() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "Policies Root", digest: "sha256")
        let caLines = ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"]
        let requireNow = "policyConstraints=critical,requireExplicitPolicy:0"
        func ca(_ name: String, _ lines: [String]) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(name)", extensions: caLines + lines, issuer: root, issuerKey: rootKey)
        }
        func leaf(_ policy: String?, under issuer: (Certificate, PrivateKey)) throws -> (Certificate, PrivateKey) {
            try OpenSSLIssued.leafWithKey(subject: "/CN=\(Self.hostText)",
                                          extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.hostText)"]) + (policy.map { ["certificatePolicies=\($0)"] } ?? []),
                                          issuer: issuer.0, issuerKey: issuer.1)
        }
        let withoutPolicies = try ca("Explicit Policy CA", [requireNow])
        let withPolicy = try ca("Explicit 1.2.3.4 CA", [requireNow, "certificatePolicies=1.2.3.4"])
        let withAnyPolicy = try ca("Explicit anyPolicy CA", [requireNow, "certificatePolicies=2.5.29.32.0"])
        let inhibitingAny = try ca("Explicit, anyPolicy inhibited CA", [requireNow, "inhibitAnyPolicy=critical,0", "certificatePolicies=2.5.29.32.0"])
        let requireBelow = try ca("Explicit From Below CA", ["policyConstraints=critical,requireExplicitPolicy:1"])
        // policyConstraints without requireExplicitPolicy requires nothing.
        let mappingOnly = try ca("Mapping Inhibited CA", ["policyConstraints=critical,inhibitPolicyMapping:0"])
        // (what, leaf and its issuer, the issuer is the anchor, real OkHttp accepts); curl never processes policies.
        let cases: [(String, (Certificate, PrivateKey), (Certificate, PrivateKey), Bool, Bool)] = [
            ("no policy anywhere", try leaf(nil, under: withoutPolicies), withoutPolicies, false, false),
            ("the CA's policy held by the leaf", try leaf("1.2.3.4", under: withPolicy), withPolicy, false, true),
            ("the leaf with another policy", try leaf("1.2.3.9", under: withPolicy), withPolicy, false, false),
            ("anyPolicy above a specific policy", try leaf("1.2.3.4", under: withAnyPolicy), withAnyPolicy, false, true),
            ("anyPolicy on both", try leaf("2.5.29.32.0", under: withAnyPolicy), withAnyPolicy, false, true),
            ("anyPolicy on both, inhibited below the CA", try leaf("2.5.29.32.0", under: inhibitingAny), inhibitingAny, false, false),
            ("required from the leaf on", try leaf(nil, under: requireBelow), requireBelow, false, false),
            ("only policy mapping inhibited", try leaf(nil, under: mappingOnly), mappingOnly, false, true),
            ("the requirement in the anchor", try leaf(nil, under: withoutPolicies), withoutPolicies, true, true),
        ]
        for (what, leafAndKey, issuer, issuerIsAnchor, okHttp) in cases {
            let chain = issuerIsAnchor ? [leafAndKey.0] : [leafAndKey.0, issuer.0]
            let anchors = issuerIsAnchor ? [issuer.0] : [root]
            #expect(try Self.okHttpAgree(chain, key: leafAndKey.1, pins: [leafAndKey.0.spkiPin.okhttp], anchors: anchors) == okHttp, "\(what): OkHttp")
            #expect(try Self.curlAgree(chain, key: leafAndKey.1, pins: [leafAndKey.0.spkiPin], anchors: anchors), "\(what): curl")
        }
        let refused = try Self.okHttp([cases[0].1.0, withoutPolicies.0], pins: [], anchors: [root], platform: .jvm)
        #expect(refused.explained.contains("no valid certificate policy"), "\(refused.explained)")
    }
}
