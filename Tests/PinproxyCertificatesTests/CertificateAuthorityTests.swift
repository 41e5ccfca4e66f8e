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
        // Backdated one day, valid ten years from now.
        #expect(abs(c.notBefore.timeIntervalSince(now) + 86_400) < 5)
        #expect(abs(c.notAfter.timeIntervalSince(now) - 3650 * 86_400) < 5)

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
        options = .init()
        options.validityDays = 36501
        #expect(throws: PinproxyError(.invalidArgument, "")) { try CertificateAuthority.create(options) }
    }

    @Test func acceptsTheLimitsOfItsOptions() throws {
        var options = CertificateAuthority.Options()
        options.commonName = String(repeating: "x", count: 64)
        options.validityDays = 36500
        let now = Date()
        let ca = try CertificateAuthority.create(options, now: now)
        #expect(ca.certificate.subjectCommonName == options.commonName)
        #expect(abs(ca.certificate.notAfter.timeIntervalSince(now) - 36500 * 86_400) < 5)
        #expect(abs(ca.certificate.notBefore.timeIntervalSince(now) + 86_400) < 5)
        // One day is a day from now: the backdating does not use it up.
        options.validityDays = 1
        let oneDay = try CertificateAuthority.create(options, now: now)
        #expect(abs(oneDay.certificate.notAfter.timeIntervalSince(now) - 86_400) < 5, "\(oneDay.certificate.notAfter)")
        #expect(oneDay.validityProblem(at: now) == nil)
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
        // Every name must be permitted, not just one of them.
        #expect(!ca.permits([.dns("x.example.test"), .dns("evil.test")]))
        #expect(!ca.permits([.dns("evil.test"), .dns("x.example.test")]))
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
        // Only IPv4 is permitted, so no IPv6 address is: OpenSSL agrees.
        let loopback6 = HostName.ipv6([UInt8](repeating: 0, count: 15) + [1])
        #expect(!ca.permits([loopback6]))
        #expect(ca.nameConstraints?.permits(loopback6) == false)
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(LeafRequest(loopback6)) }
        let key = try PrivateKey.generate(.ecP256)
        let rogue = try Certificate.issue(
            .serverLeaf(names: [loopback6], notBefore: Date().addingTimeInterval(-60), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: key, signer: .authority(ca.certificate, ca.privateKey))
        let verify = try opensslVerify(leaf: rogue, ca: ca.certificate, ip: "::1")
        #expect(verify.status != 0 && verify.output.contains("subtree violation"), "\(verify.output)")
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

@Suite struct CertificateAuthorityUsabilityTests {
    @Test func readsNameConstraintsBackFromTheCertificate() throws {
        var options = CertificateAuthority.Options()
        options.nameConstraints = try NameConstraints(permittedDNS: ["example.test"])
        let ca = try CertificateAuthority.create(options)
        let parsed = try #require(ca.nameConstraints)
        #expect(parsed.permittedDNS == ["example.test"])
        #expect(parsed.excludedIP == [IPNetwork.allIPv4, IPNetwork.allIPv6])
        #expect(parsed.permits(.dns("a.example.test")))
        #expect(parsed.permits(.dns("example.test")))
        #expect(!parsed.permits(.dns("badexample.test")))
        #expect(!parsed.permits(.ipv4([127, 0, 0, 1])))
        #expect(try CertificateAuthority.create().nameConstraints == nil)
    }

    @Test func leadingDotConstraintsCoverSubdomainsOnly() {
        #expect(NameConstraints.dns("a.example.test", within: ".example.test"))
        #expect(!NameConstraints.dns("example.test", within: ".example.test"))
        #expect(NameConstraints.dns("anything.test", within: ""))
    }

    @Test func constrainedCAImitatesOnlyPermittedNames() throws {
        var options = CertificateAuthority.Options()
        options.nameConstraints = try NameConstraints(permittedDNS: ["example.test"], permittedIP: [IPNetwork(parsing: "127.0.0.0/8")])
        let ca = try CertificateAuthority.create(options)
        let key = try PrivateKey.generate(.ecP256)
        let genuine = try Certificate.issue(
            .serverLeaf(names: [.dns("api.example.test"), .dns("localhost"), .ipv4([127, 0, 0, 1]), .ipv4([192, 0, 2, 1])],
                        notBefore: Date(), notAfter: Date().addingTimeInterval(3600)),
            subjectKey: key, signer: .selfSigned(key))
        let leaf = try LeafForger(authority: ca).forge(LeafRequest(names: [.ipv4([127, 0, 0, 1])], imitating: genuine)).certificate
        #expect(Set(leaf.subjectAlternativeNames) == [.ipAddress([127, 0, 0, 1]), .dns("api.example.test")])
        let verify = try opensslVerify(leaf: leaf, ca: ca.certificate, ip: "127.0.0.1")
        #expect(verify.status == 0, "\(verify.output)")
    }

    @Test func refusesCAsThatCannotSign() throws {
        let key = try PrivateKey.generate(.ecP256)
        var spec = CertificateSpec.certificateAuthority(
            subject: DistinguishedName(commonName: "no keyCertSign"), notBefore: Date(), notAfter: Date().addingTimeInterval(86_400))
        spec.keyUsage = [.digitalSignature]
        let certificate = try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
        do {
            _ = try CertificateAuthority(certificate: certificate, privateKey: key)
            Issue.record("accepted a CA without keyCertSign")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("keyCertSign"))
        }
    }

    @Test func expiredCAIsReportedAndCannotForge() throws {
        let key = try PrivateKey.generate(.ecP256)
        let spec = CertificateSpec.certificateAuthority(
            subject: DistinguishedName(commonName: "expired"),
            notBefore: Date(timeIntervalSinceNow: -400 * 86_400), notAfter: Date(timeIntervalSinceNow: -30 * 86_400))
        let ca = try CertificateAuthority(certificate: try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key)), privateKey: key)
        #expect(ca.validityProblem()?.contains("expired") == true)
        // A certificate is valid up to its notAfter: at that very second it is expired.
        let valid = try CertificateAuthority.create()
        #expect(valid.validityProblem(at: valid.certificate.notAfter)?.contains("expired") == true)
        #expect(valid.validityProblem(at: valid.certificate.notAfter.addingTimeInterval(-1)) == nil)
        #expect(valid.validityProblem(at: valid.certificate.notBefore) == nil)
        #expect(valid.validityProblem(at: valid.certificate.notBefore.addingTimeInterval(-1))?.contains("not valid before") == true)
        #expect(throws: PinproxyError(.invalidArgument, "")) { try ca.checkValidity() }
        let forger = try LeafForger(authority: ca)
        do {
            _ = try forger.forge(hostNames: ["a.test"])
            Issue.record("forged a leaf under an expired CA")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("expired"))
        }
    }

    @Test func encryptedKeysNeedTheirPasswordAndNeverPrompt() throws {
        let dir = try TemporaryDirectory()
        let keyPath = dir.file("enc.pem")
        let made = try run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-aes-256-cbc", "-pass", "pass:s3cret", "-out", keyPath])
        #expect(made.status == 0, "\(made.output)")
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(pem.contains("ENCRYPTED"))
        do {
            _ = try PrivateKey(pemEncoded: pem)
            Issue.record("opened an encrypted key without its password")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("encrypted"))
        }
        #expect(throws: PinproxyError(.decoding, "")) { try PrivateKey(pemEncoded: pem, password: "wrong") }
        let key = try PrivateKey(pemEncoded: pem, password: "s3cret")
        #expect(key.algorithmDescription == "EC P-256")
    }

    @Test func emptyFilesAreNamed() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("\n", to: "empty.pem")
        do {
            _ = try Certificate.load(contentsOf: path)
            Issue.record("loaded certificates from an empty file")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("is empty"))
        }
    }
}
