import Foundation
import PinproxyBase
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

@Suite struct LeafForgerTests {
    let ca = sharedAuthority

    @Test(arguments: [
        ("api.example.test", "-verify_hostname"),
        ("127.0.0.1", "-verify_ip"),
        ("::1", "-verify_ip"),
    ])
    func forgedLeafVerifiesStrictly(host: String, flag: String) throws {
        let forger = try LeafForger(authority: ca)
        let leaf = try forger.forge(hostNames: [host])
        let dir = try TemporaryDirectory()
        let caPath = try dir.write(ca.certificate.pemEncoded, to: "ca.pem")
        let leafPath = try dir.write(leaf.certificate.pemEncoded, to: "leaf.pem")
        let verify = try run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", caPath, flag, host, leafPath])
        #expect(verify.status == 0, "\(verify.output)")
        // A different name is refused.
        let other = host.contains(".") && !host.contains(":") && host.first!.isLetter ? "other.example.test" : "127.0.0.2"
        let otherFlag = other.first!.isLetter ? "-verify_hostname" : "-verify_ip"
        let wrong = try run(["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", caPath, otherFlag, other, leafPath])
        #expect(wrong.status != 0)
    }

    @Test func leafFieldsMatchTheSpecification() throws {
        let now = Date()
        let forger = try LeafForger(authority: ca, clock: { now })
        let leaf = try forger.forge(hostNames: ["api.example.test", "10.1.2.3"]).certificate
        let text = try opensslText(leaf)

        #expect(leaf.subjectAlternativeNames == [.dns("api.example.test"), .ipAddress([10, 1, 2, 3])])
        #expect(text.contains("DNS:api.example.test, IP Address:10.1.2.3"))
        #expect(leaf.subjectCommonName == "api.example.test")
        let ipLeaf = try forger.forge(hostNames: ["10.9.8.7"]).certificate
        #expect(ipLeaf.subjectCommonName == nil)  // IP literals live in the SAN only
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("X509v3 Key Usage: critical"))
        #expect(text.contains("Digital Signature"))
        #expect(!text.contains("Key Encipherment"))  // EC leaf key
        #expect(text.contains("X509v3 Basic Constraints: critical") && text.contains("CA:FALSE"), "\(text)")
        #expect(!leaf.isCA)
        // A server certificate only, and a subject that is not empty: the SAN is not critical (RFC 5280 §4.2.1.6).
        #expect(!text.contains("TLS Web Client Authentication"))
        #expect(text.contains("X509v3 Subject Alternative Name:") && !text.contains("X509v3 Subject Alternative Name: critical"))
        #expect(try opensslVerify(leaf: leaf, ca: ca.certificate, extra: ["-purpose", "sslclient"]).status != 0, "the leaf is a client certificate too")
        #expect(leaf.hasPositiveSerial)
        #expect(leaf.authorityKeyIdentifier == ca.certificate.subjectKeyIdentifier)
        #expect(leaf.subjectKeyIdentifier != nil)
        #expect(leaf.issuer == ca.certificate.subject)
        #expect(leaf.isIssued(by: ca.certificate))
        // Backdated one day, 47 days long at most.
        #expect(abs(leaf.notBefore.timeIntervalSince(now) + 86_400) < 2)
        #expect(leaf.notAfter.timeIntervalSince(leaf.notBefore) <= 47 * 86_400)
        #expect(leaf.notAfter.timeIntervalSince(leaf.notBefore) >= 46 * 86_400)
    }

    @Test func longNamesGetNoCommonNameAndACriticalSAN() throws {
        let label = String(repeating: "a", count: 60)
        let host = "\(label).example.test"
        #expect(host.count > 64)
        let leaf = try LeafForger(authority: ca).forge(hostNames: [host]).certificate
        #expect(leaf.subjectCommonName == nil)
        let text = try opensslText(leaf)
        #expect(text.contains("X509v3 Subject Alternative Name: critical"))
        let verify = try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: host)
        #expect(verify.status == 0, "\(verify.output)")
    }

    /// An imitated subject with an organization but no CN (the name is too long for one) is not
    /// empty: its SAN stays non-critical.
    @Test func aLongNameUnderAnImitatedOrganizationKeepsANonCriticalSAN() throws {
        let genuineKey = try PrivateKey.generate(.ecP256)
        let host = String(repeating: "b", count: 60) + ".example.test"
        var spec = CertificateSpec.serverLeaf(names: [.dns(host)], notBefore: Date(), notAfter: Date().addingTimeInterval(86_400))
        spec.subject = DistinguishedName(commonName: "example.test", organization: "Example Corp")
        let genuine = try Certificate.issue(spec, subjectKey: genuineKey, signer: .selfSigned(genuineKey))
        let leaf = try LeafForger(authority: ca).forge(LeafRequest(names: [.dns(host)], imitating: genuine)).certificate
        #expect(leaf.subjectOrganization == "Example Corp" && leaf.subjectCommonName == nil, "\(leaf.subject)")
        let text = try opensslText(leaf)
        #expect(text.contains("X509v3 Subject Alternative Name:") && !text.contains("X509v3 Subject Alternative Name: critical"), "\(text)")
    }

    /// A CA that expired, or expires within the day a leaf is backdated by, signs nothing: the
    /// forger says so rather than hand out a leaf that is already dead.
    @Test func aCAAtOrPastItsEndSignsNoLeaf() throws {
        let authority = try CertificateAuthority.create()
        let end = authority.certificate.notAfter
        let offsets: [TimeInterval] = [0, 1, 12 * 3_600, 3 * 86_400]
        for offset in offsets {
            #expect(throws: PinproxyError(.invalidArgument, ""), "\(offset) s after the CA's end") {
                try LeafForger(authority: authority, clock: { end.addingTimeInterval(offset) }).forge(hostNames: ["late.test"])
            }
        }
        // An hour before its end: a leaf that ends with the CA.
        let last = try LeafForger(authority: authority, clock: { end.addingTimeInterval(-3_600) }).forge(hostNames: ["late.test"]).certificate
        #expect(last.notAfter == end)
    }

    @Test func wildcardLeafCoversOneLabel() throws {
        let leaf = try LeafForger(authority: ca).forge(hostNames: ["*.example.test"]).certificate
        #expect(try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: "a.example.test").status == 0)
        #expect(try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: "a.b.example.test").status != 0)
    }

    @Test func validityNeverExceedsTheCA() throws {
        var options = CertificateAuthority.Options()
        options.validityDays = 3  // CA: one day ago to three days ahead.
        let shortCA = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: shortCA).forge(hostNames: ["short.test"]).certificate
        #expect(leaf.notAfter <= shortCA.certificate.notAfter)
        #expect(try opensslVerify(leaf: leaf, ca: shortCA.certificate).status == 0)
    }

    @Test func rsaCASignsVerifiableLeaves() throws {
        var options = CertificateAuthority.Options()
        options.keyAlgorithm = .rsa2048
        let rsaCA = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: rsaCA).forge(hostNames: ["rsa.test"]).certificate
        #expect(try opensslVerify(leaf: leaf, ca: rsaCA.certificate, hostname: "rsa.test").status == 0)
        #expect(try opensslText(leaf).contains("sha256WithRSAEncryption"))
    }

    @Test func keyStrategies() throws {
        let reused = try LeafForger(authority: ca, keyStrategy: .reused)
        let a = try reused.forge(hostNames: ["a.test"]), b = try reused.forge(hostNames: ["b.test"])
        #expect(a.certificate.spkiPin == b.certificate.spkiPin)
        #expect(a.privateKey.matches(b.certificate))
        #expect(a.certificate.serialNumberHex != b.certificate.serialNumberHex)
        // The prebuilt SKI of the shared key is the RFC 5280 method-1 identifier of the key in the leaf.
        #expect(a.certificate.subjectKeyIdentifier == a.certificate.keyIdentifierOfOwnKey())

        let fresh = try LeafForger(authority: ca, keyStrategy: .freshPerLeaf)
        let c = try fresh.forge(hostNames: ["a.test"]), d = try fresh.forge(hostNames: ["a.test"])
        #expect(c.certificate.spkiPin != d.certificate.spkiPin)
        #expect(c.privateKey.matches(c.certificate))
        #expect(c.certificate.subjectKeyIdentifier != d.certificate.subjectKeyIdentifier)
        #expect(c.certificate.subjectKeyIdentifier == c.certificate.keyIdentifierOfOwnKey())
        #expect(try opensslVerify(leaf: c.certificate, ca: ca.certificate, hostname: "a.test").status == 0)
    }

    @Test func imitatesTheGenuineCertificate() throws {
        let genuineKey = try PrivateKey.generate(.ecP256)
        var spec = CertificateSpec.serverLeaf(
            names: [.dns("www.example.test"), .dns("example.test"), .dns("*.cdn.example.test"), .ipv4([192, 0, 2, 7])],
            notBefore: Date(), notAfter: Date().addingTimeInterval(86_400), organization: "Example Corp")
        spec.subject = DistinguishedName(commonName: "www.example.test", organization: "Example Corp")
        let genuine = try Certificate.issue(spec, subjectKey: genuineKey, signer: .selfSigned(genuineKey))

        let leaf = try LeafForger(authority: ca).forge(LeafRequest(names: [.dns("example.test")], imitating: genuine)).certificate
        #expect(leaf.subjectOrganization == "Example Corp")
        #expect(leaf.subjectCommonName == "example.test")
        #expect(Set(leaf.subjectAlternativeNames) == Set(genuine.subjectAlternativeNames))
        #expect(leaf.subjectAlternativeNames.first == .dns("example.test"))
        // A requested name the genuine certificate also carries is listed once.
        #expect(leaf.subjectAlternativeNames.count == genuine.subjectAlternativeNames.count, "\(leaf.subjectAlternativeNames)")
        #expect(leaf.spkiPin != genuine.spkiPin)
        #expect(try opensslVerify(leaf: leaf, ca: ca.certificate, hostname: "x.cdn.example.test").status == 0)
    }

    /// DER order, first to last: `O` then `CN` as most CAs issue, and `CN` first as others do.
    @Test(arguments: [["O", "CN"], ["CN", "O"]])
    func imitationKeepsTheGenuineSubjectOrder(order: [String]) throws {
        let genuineKey = try PrivateKey.generate(.ecP256)
        var spec = CertificateSpec.serverLeaf(
            names: [.dns("www.example.test")], notBefore: Date(), notAfter: Date().addingTimeInterval(86_400))
        spec.subject = DistinguishedName(order.map { $0 == "O" ? .init("O", "Example Corp") : .init("CN", "www.example.test") })
        let genuine = try Certificate.issue(spec, subjectKey: genuineKey, signer: .selfSigned(genuineKey))
        #expect(genuine.subject == (order == ["O", "CN"] ? "CN=www.example.test,O=Example Corp" : "O=Example Corp,CN=www.example.test"))

        let forger = try LeafForger(authority: ca)
        let leaf = try forger.forge(LeafRequest(names: [.dns("www.example.test")], imitating: genuine)).certificate
        #expect(leaf.subject == genuine.subject)
        // Another requested name takes the CN's place, in the same position.
        let other = try forger.forge(LeafRequest(names: [.dns("api.example.test")], imitating: genuine)).certificate
        #expect(other.subject == genuine.subject.replacingOccurrences(of: "CN=www.example.test", with: "CN=api.example.test"))
    }

    @Test func chainIsLeafThenCA() throws {
        let forged = try LeafForger(authority: ca).forge(hostNames: ["chain.test"])
        #expect(forged.chain.count == 2)
        #expect(forged.chain[0] == forged.certificate)
        #expect(forged.chain[1] == ca.certificate)
    }

    @Test func refusesBadInput() throws {
        let forger = try LeafForger(authority: ca)
        #expect(throws: PinproxyError(.invalidArgument, "")) { try forger.forge(LeafRequest(names: [])) }
        #expect(throws: PinproxyError(.invalidHostName, "")) { try forger.forge(hostNames: ["a.test,DNS:evil.test"]) }
        #expect(throws: PinproxyError(.invalidArgument, "")) { try LeafForger(authority: ca, validity: 48 * 86_400) }
        #expect(throws: PinproxyError(.invalidArgument, "")) { try LeafForger(authority: ca, validity: 0) }
        #expect(throws: PinproxyError(.invalidArgument, "")) { try LeafForger(authority: ca, validity: -86_400) }
        #expect(try LeafForger(authority: ca, validity: LeafForger.maximumValidity).validity == 47 * 86_400)
    }

    /// Random bytes become a serial of the same length, positive, with no first byte that DER would
    /// drop: a zero first byte (or one that is zero once the top bit is cleared) becomes 0x01.
    @Test func randomBytesBecomeAPositiveSerialOfFullLength() {
        let tail = [UInt8](repeating: 0xAB, count: 15)
        #expect(Certificate.serialNumber(fromRandom: [0x00] + tail) == [0x01] + tail)
        #expect(Certificate.serialNumber(fromRandom: [0x80] + tail) == [0x01] + tail)
        #expect(Certificate.serialNumber(fromRandom: [0xFF] + tail) == [0x7F] + tail)
        #expect(Certificate.serialNumber(fromRandom: [0x81] + tail) == [0x01] + tail)
        #expect(Certificate.serialNumber(fromRandom: [0x02] + tail) == [0x02] + tail)
        #expect(Certificate.serialNumber(fromRandom: [0x00, 0x00]) == [0x01, 0x00])
        #expect(Certificate.serialNumber(fromRandom: []) == [0x01])
    }

    /// The pool hands out consecutive 16-byte slices of one draw of 256 serials, each made positive,
    /// and draws again only when the buffer is used up.
    @Test func theSerialPoolDrawsOncePer256Serials() throws {
        let draws = Locked<[Int]>([])
        let pool = SerialPool { count in
            let round = draws.withLock { $0.append(count); return $0.count }
            // Every serial of the first draw begins with a zero byte, of the second with 0x80.
            return (0..<count).map { i in i % 16 == 0 ? (round == 1 ? 0x00 : 0x80) : UInt8(truncatingIfNeeded: i / 16 + round) }
        }
        let serials = try (0..<257).map { _ in try pool.next() }
        #expect(draws.withLock { $0 } == [16 * 256, 16 * 256])
        #expect(serials.allSatisfy { $0.count == 16 && $0[0] == 0x01 })
        #expect(serials[0].dropFirst() == ArraySlice(repeating: 1, count: 15))
        #expect(serials[255].dropFirst() == ArraySlice(repeating: 0, count: 15))  // 255 + 1, truncated
        #expect(serials[256].dropFirst() == ArraySlice(repeating: 2, count: 15))
        #expect(Set(serials[0..<256].map { $0[1] }).count == 256)
    }

    /// Serials come from a pooled random buffer: each one positive (RFC 5280 §4.1.2.2) and
    /// 16 bytes long, none repeated, across more than one refill of the pool.
    @Test func everyForgedSerialIsPositiveAndUnique() throws {
        let forger = try LeafForger(authority: ca)
        let serials = try (0..<300).map { i in
            let leaf = try forger.forge(hostNames: ["s\(i).example.test"]).certificate
            #expect(leaf.hasPositiveSerial, "\(leaf.serialNumberHex)")
            return leaf.serialNumberHex
        }
        #expect(Set(serials).count == serials.count)
        // Each serial is drawn afresh: none begins with the end of the one before it (bytes 1–7
        // of the next against bytes 9–15 of the last; byte 0's top bit is cleared).
        for (last, next) in zip(serials, serials.dropFirst()) {
            #expect(next.dropFirst(2).prefix(14) != last.dropFirst(18).prefix(14), "\(last) then \(next)")
        }
        // Sixteen content octets, the top bit clear: no leading zero octet is needed to keep it positive.
        #expect(serials.allSatisfy { $0.count == 32 && $0.first.map { "01234567".contains($0) } == true }, "\(serials.filter { $0.count != 32 || !"01234567".contains($0.first!) })")
    }

    /// The shared and the per-leaf key's identifiers are the ones OpenSSL computes for them.
    @Test(arguments: LeafForger.KeyStrategy.allCases)
    func leafKeyIdentifiersAreTheOnesOpenSSLComputes(strategy: LeafForger.KeyStrategy) throws {
        let forged = try LeafForger(authority: ca, keyStrategy: strategy).forge(hostNames: ["ski.example.test"])
        #expect(forged.certificate.subjectKeyIdentifier == (try opensslKeyIdentifier(of: forged.privateKey)))
        #expect(forged.certificate.authorityKeyIdentifier == (try opensslKeyIdentifier(of: ca.privateKey)))
    }

    @Test func forgingIsThreadSafe() throws {
        let forger = try LeafForger(authority: ca)
        let caCert = ca.certificate
        DispatchQueue.concurrentPerform(iterations: 200) { i in
            guard let leaf = try? forger.forge(hostNames: ["h\(i).test"]) else {
                Issue.record("forge failed for h\(i).test")
                return
            }
            #expect(leaf.certificate.isIssued(by: caCert))
            #expect(leaf.certificate.subjectAlternativeNames == [.dns("h\(i).test")])
        }
    }
}
