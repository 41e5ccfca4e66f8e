import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

/// Certificates issued from a ``CertificateSpec``: the extensions each field
/// becomes, checked with the openssl CLI where a verifier would notice.
@Suite struct CertificateIssuanceTests {
    let ca = sharedAuthority
    let start = Date().addingTimeInterval(-3600)
    let end = Date().addingTimeInterval(30 * 86_400)

    @Test func pathLengthIsWrittenAndBindsTheChainBelowTheRoot() throws {
        let rootKey = try PrivateKey.generate(.ecP256)
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let leafKey = try PrivateKey.generate(.ecP256)
        // pathlen:0 allows no CA below the root; pathlen:1 allows one.
        for (pathLength, accepted) in [(0, false), (1, true)] {
            let root = try Certificate.issue(
                .certificateAuthority(subject: DistinguishedName(commonName: "Root pathlen \(pathLength)"),
                                      notBefore: start, notAfter: end, pathLength: pathLength),
                subjectKey: rootKey, signer: .selfSigned(rootKey))
            #expect(try opensslText(root).contains("CA:TRUE, pathlen:\(pathLength)"))
            let intermediate = try Certificate.issue(
                .certificateAuthority(subject: DistinguishedName(commonName: "Intermediate"), notBefore: start, notAfter: end),
                subjectKey: intermediateKey, signer: .authority(root, rootKey))
            let leaf = try Certificate.issue(
                .serverLeaf(names: [.dns("deep.example.test")], notBefore: start, notAfter: end),
                subjectKey: leafKey, signer: .authority(intermediate, intermediateKey))
            let verify = try opensslVerify(leaf: leaf, untrusted: [intermediate], ca: root, hostname: "deep.example.test")
            #expect((verify.status == 0) == accepted, "pathlen:\(pathLength): \(verify.output)")
            if !accepted { #expect(verify.output.contains("path length constraint exceeded"), "\(verify.output)") }
        }
    }

    /// keyEncipherment is meaningless for an EC key (RFC 5480 §3) and strict
    /// verifiers refuse it; an RSA key keeps it for RSA key transport.
    @Test(arguments: [PrivateKey.Algorithm.ecP256, .rsa2048])
    func aServerLeafHasKeyEnciphermentOnlyForAnRSAKey(algorithm: PrivateKey.Algorithm) throws {
        let key = try PrivateKey.generate(algorithm)
        let leaf = try Certificate.issue(
            .serverLeaf(names: [.dns("usage.example.test")], notBefore: start, notAfter: end),
            subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
        let text = try opensslText(leaf)
        #expect(text.contains("X509v3 Key Usage: critical"))
        #expect(text.contains("Digital Signature"))
        #expect(text.contains("Key Encipherment") == (algorithm != .ecP256), "\(text)")
        let verify = try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: "usage.example.test")
        #expect(verify.status == 0, "\(verify.output)")
    }

    /// A leaf for an IP address has no CN, so an empty subject: RFC 5280 §4.2.1.6
    /// then requires the SAN, its only identity, to be critical.
    @Test func aLeafWithAnEmptySubjectHasACriticalSAN() throws {
        let key = try PrivateKey.generate(.ecP256)
        let nameless = try Certificate.issue(
            .serverLeaf(names: [.ipv4([127, 0, 0, 1])], notBefore: start, notAfter: end),
            subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
        #expect(nameless.subject == "")
        #expect(nameless.subjectAlternativeNames == [.ipAddress([127, 0, 0, 1])])
        #expect(try opensslText(nameless).contains("X509v3 Subject Alternative Name: critical"))
        let verify = try opensslVerify(leaf: nameless, ca: ca.certificate, ip: "127.0.0.1")
        #expect(verify.status == 0, "\(verify.output)")
        // With a CN the SAN is an ordinary extension.
        let named = try Certificate.issue(
            .serverLeaf(names: [.dns("named.example.test")], notBefore: start, notAfter: end),
            subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
        let text = try opensslText(named)
        #expect(text.contains("X509v3 Subject Alternative Name:") && !text.contains("X509v3 Subject Alternative Name: critical"))
    }

    /// The subject key identifier is SHA-1 of the key's BIT STRING, as OpenSSL computes it.
    @Test(arguments: [PrivateKey.Algorithm.ecP256, .rsa2048])
    func keyIdentifiersAreTheOnesOpenSSLComputes(algorithm: PrivateKey.Algorithm) throws {
        let key = try PrivateKey.generate(algorithm)
        let expected = try opensslKeyIdentifier(of: key)
        #expect(expected.count == 20)
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "SKI root"), notBefore: start, notAfter: end),
            subjectKey: key, signer: .selfSigned(key))
        #expect(root.subjectKeyIdentifier == expected)
        #expect(root.authorityKeyIdentifier == expected)
        let leafKey = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(
            .serverLeaf(names: [.dns("ski.example.test")], notBefore: start, notAfter: end),
            subjectKey: leafKey, signer: .named(DistinguishedName(commonName: "SKI root"), key))
        #expect(leaf.authorityKeyIdentifier == expected)
        #expect(leaf.subjectKeyIdentifier == (try opensslKeyIdentifier(of: leafKey)))
        #expect(try opensslVerify(leaf: leaf, ca: root, hostname: "ski.example.test").status == 0)
    }

    /// A CA may carry any subject key identifier (many real ones are not the SHA-1 of the
    /// key): what it issues names that identifier, or verifiers cannot link the two.
    @Test func aLeafNamesItsIssuersOwnKeyIdentifier() throws {
        let dir = try TemporaryDirectory()
        let keyPath = dir.file("ca-key.pem"), certificatePath = dir.file("ca.pem")
        let made = try run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                            "-keyout", keyPath, "-out", certificatePath, "-days", "30", "-subj", "/CN=Odd key id CA",
                            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                            "-addext", "subjectKeyIdentifier=0102030405060708", "-addext", "authorityKeyIdentifier=keyid:always"])
        #expect(made.status == 0, "\(made.output)")
        let odd = try CertificateAuthority.parse(certificatePEM: String(contentsOfFile: certificatePath, encoding: .utf8),
                                                 keyPEM: String(contentsOfFile: keyPath, encoding: .utf8))
        #expect(odd.certificate.subjectKeyIdentifier == [1, 2, 3, 4, 5, 6, 7, 8])
        let key = try PrivateKey.generate(.ecP256)
        let issued = try Certificate.issue(
            .serverLeaf(names: [.dns("odd.example.test")], notBefore: start, notAfter: end),
            subjectKey: key, signer: .authority(odd.certificate, odd.privateKey))
        let forged = try LeafForger(authority: odd).forge(hostNames: ["odd.example.test"]).certificate
        for leaf in [issued, forged] {
            #expect(leaf.authorityKeyIdentifier == [1, 2, 3, 4, 5, 6, 7, 8])
            let verify = try opensslVerify(leaf: leaf, ca: odd.certificate, hostname: "odd.example.test")
            #expect(verify.status == 0, "\(verify.output)")
        }
        // Its stand-in (the fake-parent attack) carries the same identifier, and a leaf forged
        // under the stand-in names it: a client then finds the stand-in as the issuer and fails
        // on its signature, not on a missing issuer.
        let signer = try PrivateKey.generate(.ecP256)
        let standIn = try Certificate.impersonating(odd.certificate, issuedBy: nil, signingKey: signer)
        #expect(standIn.subjectKeyIdentifier == [1, 2, 3, 4, 5, 6, 7, 8])
        let underStandIn = try LeafForger(authority: odd).forge(LeafRequest(.dns("odd.example.test")),
                                                                variant: LeafVariant(issuer: .named(standIn, signingKey: signer))).certificate
        #expect(underStandIn.authorityKeyIdentifier == [1, 2, 3, 4, 5, 6, 7, 8])
    }

    /// RFC 5280 §4.1.2.2: a positive serial, and a random one (CA/B Forum: 64 bits or more).
    @Test func everyIssuedSerialIsPositiveAndUnique() throws {
        let key = try PrivateKey.generate(.ecP256)
        let spec = CertificateSpec.serverLeaf(names: [.dns("serial.example.test")], notBefore: start, notAfter: end)
        let serials = try (0..<64).map { _ in
            let certificate = try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
            #expect(certificate.hasPositiveSerial, "\(certificate.serialNumberHex)")
            return certificate.serialNumberHex
        }
        #expect(Set(serials).count == 64)
        #expect(serials.allSatisfy { $0.count >= 16 })
    }

    /// The CN holds at most 64 characters (RFC 5280 ub-common-name): a name of exactly 64 still fits.
    @Test func aNameOfSixtyFourCharactersIsStillTheCommonName() throws {
        let fits = String(repeating: "a", count: 51) + ".example.test"
        let tooLong = "a" + fits
        #expect(fits.utf8.count == 64)
        let key = try PrivateKey.generate(.ecP256)
        for (name, commonName) in [(fits, fits as String?), (tooLong, nil)] {
            let leaf = try Certificate.issue(
                .serverLeaf(names: [try HostName(validating: name)], notBefore: start, notAfter: end),
                subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
            #expect(leaf.subjectCommonName == commonName)
            let forged = try LeafForger(authority: ca).forge(hostNames: [name]).certificate
            #expect(forged.subjectCommonName == commonName)
            #expect(try opensslVerify(leaf: forged, ca: ca.certificate, hostname: name).status == 0)
        }
    }
}
