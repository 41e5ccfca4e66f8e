import Foundation
import Synchronization
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

/// Leaf variants (self-signed, named issuer, validity) and impersonating CA certificates.
@Suite struct LeafVariantTests {
    let ca = sharedAuthority

    /// `error N at D depth lookup` codes printed by `openssl verify`.
    func errorCodes(_ result: ProcessResult) -> [Int] {
        result.output.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "error ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
    }

    @Test func selfSignedLeafIsSignedByItsOwnKeyAndFailsOnlyForThat() throws {
        let forger = try LeafForger(authority: ca)
        let leaf = try forger.forge(LeafRequest(.dns("self.example.test")), variant: LeafVariant(issuer: .selfSigned))
        #expect(leaf.chain == [leaf.certificate])
        #expect(leaf.certificate.isSelfSigned)
        #expect(leaf.certificate.issuer == leaf.certificate.subject)
        #expect(leaf.certificate.authorityKeyIdentifier == nil)
        #expect(!leaf.certificate.isCA)
        let refused = try opensslVerify(leaf: leaf.certificate, ca: ca.certificate, hostname: "self.example.test")
        #expect(errorCodes(refused) == [18], "\(refused.output)")  // self-signed certificate, and nothing else
        let anchored = try opensslVerify(leaf: leaf.certificate, ca: leaf.certificate, hostname: "self.example.test")
        #expect(anchored.status == 0, "\(anchored.output)")
    }

    @Test func validityIsTakenAsGiven() throws {
        let forger = try LeafForger(authority: ca)
        let start = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970) - 5 * 86_400))
        let window = DateInterval(start: start, end: start.addingTimeInterval(2 * 86_400))
        let leaf = try forger.forge(LeafRequest(.dns("old.example.test")), variant: LeafVariant(validity: window)).certificate
        #expect(leaf.notBefore == window.start)
        #expect(leaf.notAfter == window.end)
        #expect(leaf.isIssued(by: ca.certificate))
        let expired = try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: "old.example.test")
        #expect(errorCodes(expired) == [10], "\(expired.output)")
    }

    @Test func aValidityWindowShorterThanOneSecondIsRefused() throws {
        let forger = try LeafForger(authority: ca)
        let start = Date(timeIntervalSince1970: Double(Int(Date().timeIntervalSince1970)))
        for duration in [0.0, 0.5] {
            let variant = LeafVariant(validity: DateInterval(start: start, duration: duration))
            #expect(throws: PinproxyError(.invalidArgument, "")) { try forger.forge(LeafRequest(.dns("instant.example.test")), variant: variant) }
        }
        let second = try forger.forge(LeafRequest(.dns("instant.example.test")),
                                      variant: LeafVariant(validity: DateInterval(start: start, duration: 1))).certificate
        #expect(second.notAfter.timeIntervalSince(second.notBefore) == 1)
    }

    @Test func namedIssuerLinksByNameAndKeyIdentifierButNotBySignature() throws {
        let genuineKey = try PrivateKey.generate(.ecP256)
        let genuineCA = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Genuine CA"), notBefore: Date().addingTimeInterval(-86_400),
                                  notAfter: Date().addingTimeInterval(86_400 * 30)),
            subjectKey: genuineKey, signer: .selfSigned(genuineKey))
        let signer = try PrivateKey.generateForSigning(.ecP256)
        let parent = try Certificate.impersonating(genuineCA, issuedBy: nil, signingKey: signer)
        let forger = try LeafForger(authority: ca)
        let leaf = try forger.forge(LeafRequest(.dns("api.example.test")), variant: LeafVariant(issuer: .named(parent, signingKey: signer)))
        #expect(leaf.chain == [leaf.certificate, parent])
        #expect(leaf.certificate.issuer == "CN=Genuine CA")
        #expect(leaf.certificate.authorityKeyIdentifier == genuineCA.subjectKeyIdentifier)
        #expect(!leaf.certificate.isIssued(by: parent))
        #expect(!leaf.certificate.isIssued(by: genuineCA))
        // Signed by the stand-in's key, not by the proxy CA's: a certificate with the genuine
        // CA's name and no key identifier links to it by name, so only the signature decides.
        func standIn(key: PrivateKey) throws -> Certificate {
            var spec = CertificateSpec.certificateAuthority(subject: DistinguishedName(commonName: "Genuine CA"), notBefore: Date().addingTimeInterval(-86_400),
                                                            notAfter: Date().addingTimeInterval(86_400 * 30))
            spec.includeKeyIdentifiers = false
            return try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
        }
        #expect(leaf.certificate.isIssued(by: try standIn(key: signer)))
        #expect(!leaf.certificate.isIssued(by: try standIn(key: ca.privateKey)))
        // Trusting the genuine CA: the chain is built by name, then its signature fails.
        let result = try opensslVerify(leaf: leaf.certificate, ca: genuineCA, hostname: "api.example.test")
        #expect(errorCodes(result).first == 7, "\(result.output)")
    }

    @Test func nameConstraintsBindOnlyWhatTheConstrainedCASigns() throws {
        var options = CertificateAuthority.Options()
        options.nameConstraints = try NameConstraints(permittedDNS: ["example.test"])
        let constrained = try CertificateAuthority.create(options)
        let forger = try LeafForger(authority: constrained)
        #expect(throws: PinproxyError.self) { try forger.forge(LeafRequest(.dns("other.test"))) }
        let selfSigned = try forger.forge(LeafRequest(.dns("other.test")), variant: LeafVariant(issuer: .selfSigned))
        #expect(selfSigned.certificate.subjectAlternativeNames == [.dns("other.test")])
    }

    @Test(arguments: [PrivateKey.Algorithm.ecP256, .rsa2048])
    func impersonatingCertificateCarriesTheGenuineKeyAndNames(algorithm: PrivateKey.Algorithm) throws {
        let rootKey = try PrivateKey.generate(algorithm)
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Real Root", organization: "Real"),
                                  notBefore: Date().addingTimeInterval(-86_400), notAfter: Date().addingTimeInterval(86_400 * 90)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let leafKey = try PrivateKey.generate(.ecP256)
        let genuineLeaf = try Certificate.issue(
            .serverLeaf(names: [.dns("api.example.test")], notBefore: Date().addingTimeInterval(-3600), notAfter: Date().addingTimeInterval(86_400)),
            subjectKey: leafKey, signer: .authority(root, rootKey))
        let signer = try PrivateKey.generate(algorithm)
        let fakeRoot = try Certificate.impersonating(root, issuedBy: nil, signingKey: signer)
        let fakeLeafHolder = try Certificate.impersonating(
            genuineLeaf, extraSubjectAttribute: .init("OU", "stand-in"), issuedBy: fakeRoot, signingKey: signer)

        #expect(fakeRoot.spkiPin == root.spkiPin)
        #expect(fakeRoot.subject == root.subject)
        #expect(fakeRoot.issuer == root.subject)
        #expect(fakeRoot.isCA)
        #expect(fakeRoot.notBefore == root.notBefore && fakeRoot.notAfter == root.notAfter)
        #expect(fakeRoot.subjectKeyIdentifier == root.subjectKeyIdentifier)
        #expect(fakeRoot != root)
        #expect(!fakeRoot.isSelfSigned)  // the name says so, the signature does not
        #expect(fakeRoot.hasRSAKey == (algorithm != .ecP256))
        // A CA as a CA is written: critical basicConstraints, and the right to sign certificates.
        let rootText = try opensslText(fakeRoot)
        #expect(rootText.contains("X509v3 Basic Constraints: critical") && rootText.contains("CA:TRUE"), "\(rootText)")
        #expect(rootText.contains("X509v3 Key Usage: critical") && rootText.contains("Certificate Sign, CRL Sign"), "\(rootText)")

        #expect(fakeLeafHolder.spkiPin == genuineLeaf.spkiPin)
        #expect(fakeLeafHolder.subject == "OU=stand-in,CN=api.example.test")
        #expect(fakeLeafHolder.issuer == root.subject)
        #expect(fakeLeafHolder.authorityKeyIdentifier == root.subjectKeyIdentifier)
        #expect(fakeLeafHolder.isCA)
        #expect(!fakeLeafHolder.isIssued(by: fakeRoot))
        #expect(!fakeLeafHolder.isIssued(by: root))
    }

    @Test func cacheKeepsVariantsApartAndRenewsWhenTold() throws {
        let now = Mutex(Date())
        let clock: @Sendable () -> Date = { now.withLock { $0 } }
        let forger = try LeafForger(authority: ca, clock: clock)
        let cache = LeafCache(forger: forger, capacity: 8, clock: clock)
        let request = LeafRequest(.dns("v.example.test"))
        let classic = try cache.leaf(for: request)
        let variantKey = LeafCacheKey(names: request.names, imitated: nil, variant: "self-signed")
        let makeSelfSigned = { try forger.forge(request, variant: LeafVariant(issuer: .selfSigned)) }
        let selfSigned = try cache.leaf(for: variantKey, make: makeSelfSigned)
        #expect(selfSigned.certificate !== classic.certificate)
        #expect(try cache.leaf(for: variantKey, make: makeSelfSigned).certificate === selfSigned.certificate)
        let otherContext = LeafCacheKey(names: request.names, imitated: nil, variant: "self-signed", context: [1])
        #expect(try cache.leaf(for: otherContext, make: makeSelfSigned).certificate !== selfSigned.certificate)

        // A leaf that says "never remake me" is kept past its notAfter; one with a date is remade after it.
        let forever = LeafCacheKey(names: request.names, imitated: nil, variant: "expired")
        let kept = try cache.leaf(for: forever, renewal: { _ in .distantFuture }, make: makeSelfSigned)
        let soon = LeafCacheKey(names: request.names, imitated: nil, variant: "soon")
        let start = clock()
        let remade = try cache.leaf(for: soon, renewal: { _ in start.addingTimeInterval(60) }, make: makeSelfSigned)
        now.withLock { $0 = $0.addingTimeInterval(100 * 86_400) }
        #expect(try cache.leaf(for: forever, renewal: { _ in .distantFuture }, make: makeSelfSigned).certificate === kept.certificate)
        #expect(try cache.leaf(for: soon, make: makeSelfSigned).certificate !== remade.certificate)
    }
}
