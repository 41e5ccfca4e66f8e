import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct CertificateAuthorityTests {
    @Test(arguments: PrivateKey.Algorithm.allCases)
    func createdCAHasTheRequiredFields(algorithm: PrivateKey.Algorithm) throws {
        var options = CertificateAuthority.Options()
        options.keyAlgorithm = algorithm
        let now = Date()
        let ca = try CertificateAuthority.create(options, now: now)
        let c = ca.certificate
        let text = try opensslText(c)

        #expect(c.isCA)
        #expect(c.isSelfSigned)
        #expect(c.hasPositiveSerial)
        #expect(c.subjectCommonName == CertificateAuthority.defaultCommonName)
        #expect(c.subjectCommonName!.contains("DO NOT TRUST"))
        // Backdated one day, ten years long.
        #expect(abs(c.notBefore.timeIntervalSince(now) + 86_400) < 5)
        #expect(abs(c.notAfter.timeIntervalSince(c.notBefore) - 3650 * 86_400) < 5)

        #expect(text.contains("X509v3 Basic Constraints: critical"))
        #expect(text.contains("CA:TRUE"))
        #expect(text.contains("X509v3 Key Usage: critical"))
        #expect(text.contains("Certificate Sign, CRL Sign"))
        #expect(text.contains("X509v3 Subject Key Identifier"))
        #expect(c.subjectKeyIdentifier?.count == 20)
        switch algorithm {
        case .ecP256: #expect(text.contains("prime256v1"))
        case .rsa2048: #expect(text.contains("(2048 bit)"))
        case .rsa3072: #expect(text.contains("(3072 bit)"))
        case .rsa4096: #expect(text.contains("(4096 bit)"))
        }
        // The CA verifies as its own anchor under strict X.509 rules.
        let verify = try run(["sh", "-c", "cat > /tmp/pp-ca-$$.pem; openssl verify -x509_strict -CAfile /tmp/pp-ca-$$.pem /tmp/pp-ca-$$.pem; rc=$?; rm -f /tmp/pp-ca-$$.pem; exit $rc"], input: c.pemEncoded)
        #expect(verify.status == 0, "\(verify.output)")
    }

    @Test func serialsAreRandom() throws {
        let a = try CertificateAuthority.create(), b = try CertificateAuthority.create()
        #expect(a.certificate.serialNumberHex != b.certificate.serialNumberHex)
        #expect(a.certificate.serialNumberHex.count >= 30)
    }

    @Test func refusesBadOptions() {
        var options = CertificateAuthority.Options()
        options.validityDays = 0
        #expect(throws: PinproxyError(.invalidArgument, "")) { try CertificateAuthority.create(options) }
        options = .init()
        options.commonName = String(repeating: "x", count: 65)
        #expect(throws: PinproxyError(.invalidArgument, "")) { try CertificateAuthority.create(options) }
    }

    @Test func refusesMismatchedKeyAndNonCA() throws {
        let ca = try CertificateAuthority.create()
        let otherKey = try PrivateKey.generate(.ecP256)
        #expect(throws: PinproxyError(.keyMismatch, "")) {
            try CertificateAuthority(certificate: ca.certificate, privateKey: otherKey)
        }
        let leaf = try Certificate.issue(
            .serverLeaf(names: [.dns("leaf.test")], notBefore: Date(), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: otherKey, signer: .selfSigned(otherKey))
        #expect(throws: PinproxyError(.invalidArgument, "")) {
            try CertificateAuthority(certificate: leaf, privateKey: otherKey)
        }
    }

    @Test func importsCombinedPEMMadeByOpenSSL() throws {
        // The layout of mitmproxy-ca.pem: private key then certificate in one file.
        let dir = try TemporaryDirectory()
        let keyPath = dir.file("k.pem"), certPath = dir.file("c.pem")
        let made = try run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyPath, "-out", certPath,
                            "-days", "30", "-subj", "/CN=mitmproxy/O=mitmproxy",
                            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        #expect(made.status == 0, "\(made.output)")
        let combined = try String(contentsOfFile: keyPath, encoding: .utf8) + String(contentsOfFile: certPath, encoding: .utf8)
        let ca = try CertificateAuthority.parse(certificatePEM: combined)
        #expect(ca.certificate.subjectCommonName == "mitmproxy")
        // And it can forge leaves that openssl accepts.
        let leaf = try LeafForger(authority: ca).forge(LeafRequest(.dns("imported.test")))
        let verify = try opensslVerify(leaf: leaf.certificate, ca: ca.certificate, hostname: "imported.test")
        #expect(verify.status == 0, "\(verify.output)")
        // Certificate without its key is a clear error.
        let certOnly = try String(contentsOfFile: certPath, encoding: .utf8)
        #expect(throws: PinproxyError(.decoding, "")) { try CertificateAuthority.parse(certificatePEM: certOnly) }
    }

    @Test func nameConstraintsArePrintedAndEnforcedByOpenSSL() throws {
        var options = CertificateAuthority.Options()
        options.nameConstraints = try NameConstraints(permittedDNS: ["example.test"], permittedIP: [])
        let ca = try CertificateAuthority.create(options)
        let text = try opensslText(ca.certificate)
        #expect(text.contains("X509v3 Name Constraints: critical"))
        #expect(text.contains("DNS:example.test"))
        #expect(ca.nameConstraintsText?.contains("example.test") == true)

        // Inside the permitted subtree: verifies.
        let forger = try LeafForger(authority: ca)
        let good = try forger.forge(LeafRequest(.dns("api.example.test")))
        #expect(try opensslVerify(leaf: good.certificate, ca: ca.certificate).status == 0)

        // The forger refuses names outside the subtree...
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(LeafRequest(.dns("evil.test"))) }
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(LeafRequest(.ipv4([10, 0, 0, 1]))) }
        // ...and a leaf signed outside them anyway is refused by openssl verify.
        let key = try PrivateKey.generate(.ecP256)
        for name in [HostName.dns("evil.test"), .ipv4([10, 0, 0, 1])] {
            let rogue = try Certificate.issue(
                .serverLeaf(names: [name], notBefore: Date().addingTimeInterval(-60), notAfter: Date().addingTimeInterval(3600)),
                subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
            let verify = try opensslVerify(leaf: rogue, ca: ca.certificate)
            #expect(verify.status != 0)
            #expect(verify.output.contains("subtree violation"), "\(verify.output)")
        }
        #expect(ca.permits([.dns("x.example.test")]))
        #expect(!ca.permits([.dns("example.test.evil")]))
    }

    @Test func ipOnlyConstraintsConfineDNS() throws {
        var options = CertificateAuthority.Options()
        options.nameConstraints = try NameConstraints(permittedIP: [IPNetwork(parsing: "127.0.0.0/8")])
        let ca = try CertificateAuthority.create(options)
        let forger = try LeafForger(authority: ca)
        let good = try forger.forge(LeafRequest(.ipv4([127, 0, 0, 1])))
        #expect(try opensslVerify(leaf: good.certificate, ca: ca.certificate, ip: "127.0.0.1").status == 0)
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(LeafRequest(.dns("example.test"))) }
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(LeafRequest(.ipv4([192, 0, 2, 1]))) }
    }

    @Test(arguments: ["10.0.0.0/8", "127.0.0.1", "fd00::/8", "::1/128"])
    func parsesNetworks(text: String) throws {
        let network = try IPNetwork(parsing: text)
        #expect(network.description.contains("/"))
    }

    @Test(arguments: ["10.0.0.0/33", "example.test/8", "1.2.3.4/x", "::/129", "1.2.3.4/8/9"])
    func refusesBadNetworks(text: String) {
        #expect(throws: PinproxyError(.invalidArgument, "")) { try IPNetwork(parsing: text) }
    }

    @Test func networkMasksHostBits() throws {
        let network = try IPNetwork(parsing: "10.1.2.3/8")
        #expect(network.address == [10, 0, 0, 0])
        #expect(network.mask == [255, 0, 0, 0])
        #expect(network.contains([10, 200, 1, 1]))
        #expect(!network.contains([11, 0, 0, 1]))
    }
}
