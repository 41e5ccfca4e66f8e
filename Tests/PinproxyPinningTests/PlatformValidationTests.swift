import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

private let day: TimeInterval = 86_400

/// Each platform's validator, not one strict profile: the chains a team's own test PKI mints
/// (OkHttp's `HeldCertificate`, hand-made roots) pass where the platform passes them.
@Suite struct PlatformValidationTests {
    static let host = try! HostName(validating: "staging.example.test")

    /// A root and a leaf for ``host`` under it, both issued from `rootSpec` / `leafSpec`.
    static func chain(rootSpec: CertificateSpec, leafSpec: CertificateSpec, keyType: PrivateKey.Algorithm = .ecP256) throws -> (root: Certificate, leaf: Certificate) {
        let rootKey = try PrivateKey.generate(keyType)
        let root = try Certificate.issue(rootSpec, subjectKey: rootKey, signer: .selfSigned(rootKey))
        let leaf = try Certificate.issue(leafSpec, subjectKey: try PrivateKey.generate(keyType), signer: .authority(root, rootKey))
        return (root, leaf)
    }

    static func leafSpec(keyIdentifiers: Bool = true) -> CertificateSpec {
        var spec = CertificateSpec.serverLeaf(names: [host], notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(30 * day))
        spec.includeKeyIdentifiers = keyIdentifiers
        return spec
    }

    static func evaluate(_ chain: [Certificate], root: Certificate, on platform: TrustPlatform, at time: Date = Date()) -> TrustEvaluation {
        TrustEvaluator.evaluate(chain, policy: .ssl(host: host, platform: platform), at: time, anchors: TrustAnchors(system: [root]))
    }

    @Test func certificatesWithoutKeyIdentifiersPassOnEveryPlatform() throws {
        var rootSpec = CertificateSpec.certificateAuthority(subject: DistinguishedName(commonName: "Staging Root"),
                                                            notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(90 * day))
        rootSpec.includeKeyIdentifiers = false
        let (root, leaf) = try Self.chain(rootSpec: rootSpec, leafSpec: Self.leafSpec(keyIdentifiers: false))
        #expect(leaf.authorityKeyIdentifier == nil && leaf.subjectKeyIdentifier == nil && root.subjectKeyIdentifier == nil)
        for platform in TrustPlatform.allCases {
            let evaluation = Self.evaluate([leaf], root: root, on: platform)
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
        }
    }

    @Test func aCAWithAPathLengthButNoKeyUsagePassesOnEveryPlatform() throws {
        // What OkHttp's HeldCertificate.Builder().certificateAuthority(0) mints: basicConstraints
        // with a path length, no keyUsage at all.
        let rootSpec = CertificateSpec(subject: DistinguishedName(commonName: "HeldCertificate Root"),
                                       notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(90 * day),
                                       isCA: true, pathLength: 0, keyUsage: [])
        let (root, leaf) = try Self.chain(rootSpec: rootSpec, leafSpec: Self.leafSpec())
        for platform in TrustPlatform.allCases {
            let evaluation = Self.evaluate([leaf], root: root, on: platform)
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
        }
        // An intermediate whose keyUsage lacks keyCertSign is still refused everywhere: the rule
        // is there, only the extension's absence passes.
        let rootKey = try PrivateKey.generate(.ecP256)
        let properRoot = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Proper Root"), notBefore: Date().addingTimeInterval(-day),
                                  notAfter: Date().addingTimeInterval(90 * day)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Certificate.issue(
            CertificateSpec(subject: DistinguishedName(commonName: "No CertSign Intermediate"), notBefore: Date().addingTimeInterval(-day),
                            notAfter: Date().addingTimeInterval(60 * day), isCA: true, keyUsage: [.digitalSignature]),
            subjectKey: intermediateKey, signer: .authority(properRoot, rootKey))
        let underIt = try Certificate.issue(Self.leafSpec(), subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(intermediate, intermediateKey))
        for platform in TrustPlatform.allCases {
            let evaluation = Self.evaluate([underIt, intermediate], root: properRoot, on: platform)
            #expect(!evaluation.isValid && evaluation.failureKinds.first == .notACA, "\(platform): \(evaluation.reason)")
        }
    }

    @Test func aRootWhoseOnlyEKUIsAnyExtendedKeyUsagePassesExceptOnOpenSSL() throws {
        let (root, rootKey) = try OpenSSLIssued.root(commonName: "AnyEKU Root", digest: "sha256", extensions: ["extendedKeyUsage=anyExtendedKeyUsage"])
        let leaf = try OpenSSLIssued.leaf(subject: "/CN=\(Self.host)", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:\(Self.host)"]),
                                          issuer: root, issuerKey: rootKey)
        for platform in [TrustPlatform.apple, .jvm, .android] {
            let evaluation = Self.evaluate([leaf], root: root, on: platform)
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
        }
        // OpenSSL checks the purpose of every CA: curl refuses it ("unsuitable certificate purpose").
        let curl = Self.evaluate([leaf], root: root, on: .curl)
        #expect(!curl.isValid && curl.failureKinds == [.wrongPurpose], "\(curl.reason)")
    }

    @Test func signatureAlgorithmsDifferingOnlyInANullParameterPassOnAppleAndTheJDK() throws {
        let rootSpec = CertificateSpec.certificateAuthority(subject: DistinguishedName(commonName: "RSA Root"),
                                                            notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(90 * day))
        let (root, leaf) = try Self.chain(rootSpec: rootSpec, leafSpec: Self.leafSpec(), keyType: .rsa2048)
        let stripped = try Certificate(derEncoded: try DERSurgery.withoutOuterSignatureParameters(leaf.derEncoded))
        #expect(stripped != leaf && stripped.spkiPin == leaf.spkiPin)
        for platform in [TrustPlatform.apple, .jvm] {
            let evaluation = Self.evaluate([stripped], root: root, on: platform)
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
        }
        // OpenSSL and BoringSSL (Conscrypt) compare the two fields and refuse the signature; on
        // Android no issuer's key verifies it, so none is found.
        let curl = Self.evaluate([stripped], root: root, on: .curl)
        #expect(!curl.isValid && curl.failureKinds == [.badSignature], "\(curl.reason)")
        let android = Self.evaluate([stripped], root: root, on: .android)
        #expect(!android.isValid && android.failureKinds == [.unknownIssuer], "\(android.reason)")
        // Another algorithm outside than inside is no NULL difference: refused there too.
        let otherOID = try Certificate(derEncoded: try DERSurgery.withOuterAlgorithmLastByte(stripped.derEncoded, 0x0c))
        for platform in TrustPlatform.allCases {
            let evaluation = Self.evaluate([otherOID], root: root, on: platform)
            #expect(!evaluation.isValid, "\(platform) took sha384WithRSAEncryption outside for sha256WithRSAEncryption inside")
        }
        // A signature that really does not verify stays refused on Apple.
        let otherKey = try PrivateKey.generate(.rsa2048)
        let forged = try Certificate.issue(Self.leafSpec(), subjectKey: otherKey, signer: .named(DistinguishedName(commonName: "RSA Root"), otherKey))
        let evaluation = Self.evaluate([forged], root: root, on: .apple)
        #expect(!evaluation.isValid, "\(evaluation.reason)")
    }

    /// The other way round: a NULL parameter outside, none inside (an ECDSA signature, whose
    /// algorithm takes none). The same platforms take it, and the same refuse it.
    @Test func aNullParameterAddedOutsideIsTheSameDifference() throws {
        let rootSpec = CertificateSpec.certificateAuthority(subject: DistinguishedName(commonName: "EC Root"),
                                                            notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(90 * day))
        let (root, leaf) = try Self.chain(rootSpec: rootSpec, leafSpec: Self.leafSpec(), keyType: .ecP256)
        let padded = try Certificate(derEncoded: try DERSurgery.withOuterNullParameter(leaf.derEncoded))
        #expect(padded != leaf && padded.spkiPin == leaf.spkiPin)
        for platform in [TrustPlatform.apple, .jvm] {
            let evaluation = Self.evaluate([padded], root: root, on: platform)
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
        }
        let curl = Self.evaluate([padded], root: root, on: .curl)
        #expect(!curl.isValid, "\(curl.reason)")
    }

    @Test func anAnchorThatIsAnIntermediateOrTheLeafEndsTheChain() throws {
        // An expired root above the anchored intermediate is never judged.
        let now = Date()
        let rootKey = try PrivateKey.generate(.ecP256)
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Old Root"), notBefore: now.addingTimeInterval(-900 * day),
                                  notAfter: now.addingTimeInterval(-5 * day)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let intermediate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Pinned Intermediate"), notBefore: now.addingTimeInterval(-day),
                                  notAfter: now.addingTimeInterval(60 * day)),
            subjectKey: intermediateKey, signer: .authority(root, rootKey))
        let leaf = try Certificate.issue(Self.leafSpec(), subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(intermediate, intermediateKey))
        for platform in [TrustPlatform.apple, .jvm, .android] {
            let evaluation = TrustEvaluator.evaluate([leaf, intermediate, root], policy: .ssl(host: Self.host, platform: platform),
                                                     at: now, anchors: .only([intermediate]))
            #expect(evaluation.isValid, "\(platform): \(evaluation.reason)")
            #expect(evaluation.builtChain == [leaf, intermediate], "\(platform)")
            // The pinned leaf alone, with the expired root and the intermediate presented above it.
            let pinnedLeaf = TrustEvaluator.evaluate([leaf, intermediate, root], policy: .ssl(host: Self.host, platform: platform),
                                                     at: now, anchors: .only([leaf]))
            #expect(pinnedLeaf.isValid && pinnedLeaf.builtChain == [leaf], "\(platform): \(pinnedLeaf.reason)")
        }
        // With the root as the anchor, its expiry counts on Apple, not on the JDK or Android.
        let throughRoot = { (platform: TrustPlatform) in
            TrustEvaluator.evaluate([leaf, intermediate], policy: .ssl(host: Self.host, platform: platform), at: now, anchors: .only([root]))
        }
        #expect(throughRoot(.apple).failureKinds == [.expired])
        #expect(throughRoot(.jvm).isValid && throughRoot(.android).isValid, "\(throughRoot(.jvm).reason) / \(throughRoot(.android).reason)")
    }
}

/// OkHttp's host canonicalisation (`HttpUrl.canonicalizeHost`) for pins and hosts.
@Suite struct OkHttpHostCanonicalisationTests {

    static func leaf(for names: [HostName]) throws -> (root: Certificate, leaf: Certificate) {
        let rootKey = try PrivateKey.generate(.ecP256)
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Canonical Root"), notBefore: Date().addingTimeInterval(-day),
                                  notAfter: Date().addingTimeInterval(90 * day)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let leaf = try Certificate.issue(.serverLeaf(names: names, notBefore: Date().addingTimeInterval(-day), notAfter: Date().addingTimeInterval(30 * day)),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(root, rootKey))
        return (root, leaf)
    }

    @Test func unicodePatternsBecomeALabels() throws {
        #expect(IDNA.toASCII("σkhttp.com") == "xn--khttp-fde.com")
        #expect(IDNA.toASCII("Bücher.example") == "xn--bcher-kva.example")
        #expect(IDNA.toASCII("münchen.de") == "xn--mnchen-3ya.de")
        let pin = try OkHttpPolicy.Pin(pattern: "*.σkhttp.com", pin: "sha256/" + [UInt8](repeating: 1, count: 32).base64)
        #expect(pin.pattern == "*.xn--khttp-fde.com")

        let host = try HostName(validating: "xn--khttp-fde.com")
        let (root, leaf) = try Self.leaf(for: [host])
        let trust = ServerTrust(presentedChain: [leaf], host: host, store: TrustStore(systemAnchors: [root]))
        let pinned = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "σkhttp.com", pin: leaf.spkiPin.okhttp)])
        #expect(pinned.evaluate(trust).decision == .accept)
        // The pattern matched the host: with another key pinned, the connection is refused.
        let wrong = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "σkhttp.com", pin: "sha256/" + [UInt8](repeating: 7, count: 32).base64)])
        #expect(wrong.evaluate(trust).decision == .reject)
    }

    /// What `java.net.IDN.toASCII` (IDNA2003 nameprep) makes of names where plain NFKC and
    /// lower-casing differ, each as real OkHttp 3.13.1 canonicalised the pattern on the JDK.
    @Test(arguments: [
        ("straße.example", "strasse.example"),  // case folding: ß → ss
        ("ςkhttp.com", "xn--khttp-fde.com"),  // final sigma folds to σ
        ("bü\u{AD}cher.example", "xn--bcher-kva.example"),  // soft hyphen mapped to nothing
        ("bü\u{200D}cher.example", "xn--bcher-kva.example"),  // zero-width joiner too
        ("a\u{3002}example.com", "a.example.com"),  // ideographic full stop separates labels
        ("a\u{FF0E}b\u{FF61}example.com", "a.b.example.com"),  // fullwidth and halfwidth ones as well
        ("ＢÜＣＨＥＲ.example", "xn--bcher-kva.example"),  // fullwidth letters: NFKC, then lower case
    ])
    func unicodeNamesAreMappedAsJavaNetIDNMapsThem(name: String, ascii: String) throws {
        #expect(IDNA.toASCII(name) == ascii)
        let pin = try OkHttpPolicy.Pin(pattern: name, pin: "sha256/" + [UInt8](repeating: 1, count: 32).base64)
        #expect(pin.pattern == ascii)
    }

    /// A trailing dot stays on the pattern (`toCanonicalHost` keeps it): `example.com.` pins the
    /// host written `example.com.` and not `example.com`, as real OkHttp 3.13.1 does.
    @Test func aPatternKeepsItsTrailingDot() throws {
        let wrongKey = "sha256/" + [UInt8](repeating: 7, count: 32).base64
        for (pattern, pinned, unpinned) in [("example.com.", "example.com.", "example.com"), ("*.example.com.", "a.example.com.", "a.example.com"),
                                            ("**.example.com.", "example.com.", "a.example.com")] {
            let pin = try OkHttpPolicy.Pin(pattern: pattern, pin: wrongKey)
            #expect(pin.pattern == pattern)
            #expect(pin.matches(pinned), "\(pattern) against \(pinned)")
            #expect(!pin.matches(unpinned), "\(pattern) against \(unpinned)")
        }
        #expect(throws: PinproxyError.self) { try OkHttpPolicy.Pin(pattern: "example.com..", pin: wrongKey) }
        #expect(throws: PinproxyError.self) { try OkHttpPolicy.Pin(pattern: ".", pin: wrongKey) }

        // Through the whole evaluation: the host as written decides.
        let host = try HostName(validating: "example.com")
        let (root, leaf) = try Self.leaf(for: [host])
        let policy = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "example.com.", pin: wrongKey)])
        let dotted = try ServerTrust(presentedChain: [leaf], hostAsWritten: "example.com.", store: TrustStore(systemAnchors: [root]))
        let plain = ServerTrust(presentedChain: [leaf], host: host, store: TrustStore(systemAnchors: [root]))
        #expect(policy.evaluate(dotted).decision == .reject)
        #expect(policy.evaluate(plain).decision == .accept)
    }

    @Test func thePolicyFileChoosesThePlatform() throws {
        let dir = try TemporaryDirectory()
        let pinner = #""certificatePinner": {"api.example.com": ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}"#
        let jvm = try PolicyFile.load(contentsOf: try dir.write("jvm.json", #"{"family": "okhttp", "platform": "jvm", \#(pinner)}"#))
        #expect((jvm as? OkHttpPolicy)?.platform == .jvm && jvm.profile == "cleaned-chain, jvm")
        let plain = try PolicyFile.load(contentsOf: try dir.write("plain.json", #"{"family": "okhttp", \#(pinner)}"#))
        #expect((plain as? OkHttpPolicy)?.platform == .android)
        do {
            _ = try PolicyFile.load(contentsOf: try dir.write("ios.json", #"{"family": "okhttp", "platform": "ios", \#(pinner)}"#))
            Issue.record("an unknown platform was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("unknown platform 'ios'; expected android or jvm"), "\(error.reason)")
        }
    }

    @Test func ipv4MappedIPv6HostsMatchIPv4Names() throws {
        let address = try HostName(validating: "192.168.1.1")
        let (root, leaf) = try Self.leaf(for: [address])
        let mapped = try HostName(validating: "::ffff:192.168.1.1")
        let trust = ServerTrust(presentedChain: [leaf], host: mapped, store: TrustStore(systemAnchors: [root]))
        for platform in OkHttpPolicy.Platform.allCases {
            let byIPv4 = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "192.168.1.1", pin: leaf.spkiPin.okhttp)], platform: platform)
            let verdict = byIPv4.evaluate(trust)
            #expect(verdict.decision == .accept, "\(platform): \(verdict.explained)")
            #expect(verdict.matchedPins == [leaf.spkiPin.okhttp], "\(platform): the pin was checked")
            let byMappedPattern = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "[::ffff:192.168.1.1]", pin: "sha256/" + [UInt8](repeating: 9, count: 32).base64)],
                                               platform: platform)
            #expect(try OkHttpPolicy.Pin(pattern: "::ffff:192.168.1.1", pin: leaf.spkiPin.okhttp).pattern == "192.168.1.1")
            #expect(byMappedPattern.evaluate(trust).decision == .reject, "\(platform): the mapped pattern applies to the mapped host")
        }
        // A plain IPv6 host is not mapped, nor one whose first ten bytes are zero without the
        // ffff of the mapped form (Java's InetAddress.getByAddress keeps ::1 an Inet6Address).
        #expect(try OkHttpPolicy.canonicalHost("[2001:DB8::1]") == "2001:db8::1")
        #expect(try OkHttpPolicy.canonicalHost("[::1]") == "::1")
        #expect(try OkHttpPolicy.canonicalHost("::1") == "::1")
        #expect(try OkHttpPolicy.Pin(pattern: "[::1]", pin: "sha256/" + [UInt8](repeating: 9, count: 32).base64).pattern == "::1")
    }
}

/// Edits a certificate's DER without signing it again.
enum DERSurgery {
    /// The certificate with the NULL parameter of its OUTER signatureAlgorithm removed; the
    /// signed tbsCertificate (and its inner algorithm, with NULL) stays as it was.
    static func withoutOuterSignatureParameters(_ der: [UInt8]) throws -> [UInt8] {
        let (outer, tbs, algorithm, oid) = try outerAlgorithm(der)
        guard Array(der[oid.end..<algorithm.end]) == [0x05, 0x00] else { throw PinproxyError(.decoding, "the outer algorithm has no NULL parameter") }
        let newAlgorithm = encoded(0x30, Array(der[algorithm.headerEnd..<oid.end]))
        return encoded(0x30, Array(der[outer.headerEnd..<tbs.end]) + newAlgorithm + Array(der[algorithm.end..<outer.end]))
    }

    /// The certificate with a NULL parameter added to its OUTER signatureAlgorithm, which had
    /// none (ECDSA's); the signed tbsCertificate stays as it was.
    static func withOuterNullParameter(_ der: [UInt8]) throws -> [UInt8] {
        let (outer, tbs, algorithm, oid) = try outerAlgorithm(der)
        guard oid.end == algorithm.end else { throw PinproxyError(.decoding, "the outer algorithm has parameters already") }
        let newAlgorithm = encoded(0x30, Array(der[algorithm.headerEnd..<oid.end]) + [0x05, 0x00])
        return encoded(0x30, Array(der[outer.headerEnd..<tbs.end]) + newAlgorithm + Array(der[algorithm.end..<outer.end]))
    }

    /// The certificate with the last byte of its OUTER signature algorithm's OID replaced by `byte`.
    static func withOuterAlgorithmLastByte(_ der: [UInt8], _ byte: UInt8) throws -> [UInt8] {
        let (_, _, _, oid) = try outerAlgorithm(der)
        var edited = der
        edited[oid.end - 1] = byte
        return edited
    }

    private typealias Element = (headerEnd: Int, end: Int)

    private static func element(_ bytes: [UInt8], at start: Int) throws -> Element {
        guard start + 1 < bytes.count else { throw PinproxyError(.decoding, "truncated DER") }
        var length = Int(bytes[start + 1])
        var header = start + 2
        if length & 0x80 != 0 {
            let count = length & 0x7f
            length = bytes[header..<(header + count)].reduce(0) { $0 << 8 | Int($1) }
            header += count
        }
        return (header, header + length)
    }

    private static func encoded(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let n = content.count
        let length: [UInt8] = n < 0x80 ? [UInt8(n)] : n < 0x100 ? [0x81, UInt8(n)] : [0x82, UInt8(n >> 8), UInt8(n & 0xff)]
        return [tag] + length + content
    }

    /// The certificate, its tbsCertificate, its outer AlgorithmIdentifier and that one's OID.
    private static func outerAlgorithm(_ der: [UInt8]) throws -> (Element, Element, Element, Element) {
        let outer = try element(der, at: 0)
        let tbs = try element(der, at: outer.headerEnd)
        let algorithm = try element(der, at: tbs.end)
        let oid = try element(der, at: algorithm.headerEnd)
        return (outer, tbs, algorithm, oid)
    }
}
