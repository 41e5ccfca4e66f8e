import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

@Suite("Android network security config")
struct AndroidTests {
    let pki = PKI.shared

    /// Writes `xml` as res/xml/network_security_config.xml, with res/raw/ holding the given certificates.
    func load(_ xml: String, raw: [String: Certificate] = [:], in dir: TemporaryDirectory) throws -> NetworkSecurityConfig {
        for (name, certificate) in raw { try dir.write("res/raw/\(name)", certificate.pemEncoded) }
        let path = try dir.write("res/xml/network_security_config.xml", xml)
        return try NetworkSecurityConfig.load(contentsOf: path)
    }

    func policy(_ xml: String, raw: [String: Certificate] = [:], sdk: Int = 24) throws -> AndroidPolicy {
        let dir = try TemporaryDirectory()
        return AndroidPolicy(config: try load(xml, raw: raw, in: dir), targetSdkVersion: sdk)
    }

    @Test func defaultIgnoresUserCAsFromAPI24() throws {
        let xml = "<network-security-config/>"
        #expect(try policy(xml).evaluate(Scenario.forged.trust(pki)).decision == .reject)
        #expect(try policy(xml, sdk: 23).evaluate(Scenario.forged.trust(pki)).decision == .accept)
        #expect(try policy(xml).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
    }

    @Test func userAnchorsWhenTheConfigSaysSo() throws {
        let xml = """
            <network-security-config>
              <base-config cleartextTrafficPermitted="false">
                <trust-anchors><certificates src="system"/><certificates src="user"/></trust-anchors>
              </base-config>
            </network-security-config>
            """
        #expect(try policy(xml).evaluate(Scenario.forged.trust(pki)).decision == .accept)
    }

    static let pinnedXML = """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
          <base-config><trust-anchors><certificates src="system"/><certificates src="user"/></trust-anchors></base-config>
          <domain-config>
            <domain includeSubdomains="true">example.com</domain>
            <pin-set expiration="EXPIRY">
              <pin digest="SHA-256">PIN</pin>
              <pin digest="SHA-256">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin>
            </pin-set>
            <domain-config>
              <domain>internal.example.com</domain>
              <trust-anchors><certificates src="@raw/internal_ca"/></trust-anchors>
            </domain-config>
          </domain-config>
          <debug-overrides><trust-anchors><certificates src="user"/></trust-anchors></debug-overrides>
        </network-security-config>
        """

    func pinned(expiry: String = "2099-01-01") throws -> AndroidPolicy {
        let xml = Self.pinnedXML.replacingOccurrences(of: "EXPIRY", with: expiry)
            .replacingOccurrences(of: "PIN", with: pki.intermediate.spkiPin.base64)
        return try policy(xml, raw: ["internal_ca.pem": pki.selfSigned])
    }

    @Test func pinSetRejectsTheForgedChainEvenWithTheUserCA() throws {
        let policy = try pinned()
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        let forged = policy.evaluate(Scenario.forged.trust(pki))
        #expect(forged.decision == .reject)
        #expect(forged.steps.contains { $0.action == "debug-overrides" })
        #expect(policy.evaluate(Scenario.stuffed.trust(pki)).decision == .reject)
    }

    @Test func expiredPinSetIsNotEnforced() throws {
        let policy = try pinned(expiry: "2001-01-01")
        let verdict = policy.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.steps.last?.outcome.contains("expired") == true)
    }

    @Test func nestedConfigInheritsThePinSetAndUsesItsOwnAnchors() throws {
        let policy = try pinned()
        let internalHost = try HostName(validating: "internal.example.com")
        let match = policy.match("internal.example.com")
        #expect(match?.path.count == 2)
        // Its anchors are only the raw certificate; the inherited pin-set still applies.
        let key = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(.serverLeaf(names: [internalHost], notBefore: pki.now.addingTimeInterval(-60), notAfter: pki.now.addingTimeInterval(3600)),
                                         subjectKey: key, signer: .authority(pki.intermediate, pki.intermediateKey))
        let viaPublic = policy.evaluate(pki.trust([leaf, pki.intermediate], host: internalHost))
        #expect(viaPublic.decision == .reject)  // the system root is not an anchor here
        #expect(viaPublic.steps.contains { $0.outcome.contains("internal_ca.pem") })
    }

    /// api.example.com trusting the system's CAs and `source` with overridePins, pinning `pin`.
    static func overridingXML(source: String, pin: String) -> String {
        """
        <network-security-config>
          <domain-config>
            <domain>api.example.com</domain>
            <trust-anchors><certificates src="system"/><certificates src="\(source)" overridePins="true"/></trust-anchors>
            <pin-set><pin digest="SHA-256">\(pin)</pin></pin-set>
          </domain-config>
        </network-security-config>
        """
    }

    @Test func overridePinsSkipsPinningForThatAnchor() throws {
        let xml = Self.overridingXML(source: "user", pin: pki.intermediate.spkiPin.base64)
        let verdict = try policy(xml).evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.steps.last?.outcome.contains("overridePins") == true)
        #expect(try policy(xml).evaluate(pki.trust([pki.misissuedLeaf])).decision == .reject)
    }

    /// An `@raw` source's overridePins covers chains that end at one of its own certificates, and only those.
    @Test func overridePinsOfARawSourceCoversOnlyItsCertificates() throws {
        let xml = Self.overridingXML(source: "@raw/extra_ca", pin: [UInt8](repeating: 7, count: 32).base64)
        // The genuine chain ends at the system root, not at the raw certificate: its pins apply, and none matches.
        let other = try policy(xml, raw: ["extra_ca.pem": pki.otherRoot]).evaluate(Scenario.genuine.trust(pki))
        #expect(other.decision == .reject, "\(other.steps)")
        #expect(!other.steps.contains { $0.outcome.hasPrefix("skipped: the chain ends at") }, "\(other.steps)")
        // The same chain when the raw source holds its root: the pins are skipped.
        let own = try policy(xml, raw: ["extra_ca.pem": pki.root]).evaluate(Scenario.genuine.trust(pki))
        #expect(own.decision == .accept, "\(own.steps)")
        #expect(own.steps.last?.outcome.contains("overridePins") == true, "\(own.steps)")
    }

    @Test func exactDomainBeatsIncludeSubdomains() throws {
        let xml = """
            <network-security-config>
              <domain-config><domain includeSubdomains="true">example.com</domain>
                <pin-set><pin digest="SHA-256">\(pki.otherRoot.spkiPin.base64)</pin></pin-set></domain-config>
              <domain-config><domain>api.example.com</domain>
                <pin-set><pin digest="SHA-256">\(pki.root.spkiPin.base64)</pin></pin-set></domain-config>
            </network-security-config>
            """
        let policy = try policy(xml)
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(policy.evaluate(pki.trust([pki.misissuedLeaf])).decision == .reject)
    }

    struct Malformed: Sendable, CustomStringConvertible {
        let xml: String
        let message: String
        var description: String { message }
    }

    static let malformed: [Malformed] = [
        Malformed(xml: "<network-security-config><domain-config>", message: "malformed XML"),
        // A missing end tag is named with the line its element opened on, not the root's.
        Malformed(xml: "<network-security-config>\n  <domain-config>\n    <domain>a.test</domain>\n</network-security-config>\n",
                  message: ":4: malformed XML (</network-security-config> where <domain-config> opened at line 2 is still open; is its </domain-config> missing?)"),
        // The same behind a declaration whose internal subset holds '>', and a comment "<!-->" that goes on.
        Malformed(xml: "<!DOCTYPE network-security-config [\n<!ENTITY x \"a>b\">\n]>\n<network-security-config><!--> not closed here -->\n  <domain-config>\n</network-security-config>\n",
                  message: ":6: malformed XML (</network-security-config> where <domain-config> opened at line 5 is still open; is its </domain-config> missing?)"),
        Malformed(xml: "<network-config/>", message: "expected <network-security-config>"),
        Malformed(xml: "<network-security-config><base-config><pin-set/></base-config></network-security-config>", message: "only allowed in <domain-config>"),
        Malformed(xml: "<network-security-config><domain-config><trust-anchors><certificates src=\"system\"/></trust-anchors></domain-config></network-security-config>", message: "names no <domain>"),
        Malformed(xml: "<network-security-config><domain-config><domain>a.test</domain><pin-set><pin digest=\"SHA-1\">AAAA</pin></pin-set></domain-config></network-security-config>", message: "only SHA-256"),
        Malformed(xml: "<network-security-config><domain-config><domain>a.test</domain><pin-set><pin digest=\"SHA-256\">AAAA</pin></pin-set></domain-config></network-security-config>", message: "decodes to 3 bytes"),
        Malformed(xml: "<network-security-config><domain-config><domain>a.test</domain><pin-set><pin digest=\"SHA-256\">not base64!</pin></pin-set></domain-config></network-security-config>", message: "not valid base64"),
        Malformed(xml: "<network-security-config><domain-config><domain>a.test</domain><pin-set expiration=\"2025-13-01\"><pin digest=\"SHA-256\">AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=</pin></pin-set></domain-config></network-security-config>", message: "not a yyyy-MM-dd date"),
        Malformed(xml: "<network-security-config><base-config><trust-anchors><certificates src=\"everything\"/></trust-anchors></base-config></network-security-config>", message: "not system, user or @raw/name"),
        Malformed(xml: "<network-security-config><base-config><trust-anchors><certificates src=\"@raw/missing\"/></trust-anchors></base-config></network-security-config>", message: "@raw/missing not found"),
        Malformed(xml: "<network-security-config><base-config><trust-anchors><certificates src=\"user\" overridePins=\"yes\"/></trust-anchors></base-config></network-security-config>", message: "must be \"true\" or \"false\""),
        Malformed(xml: "<network-security-config><domain-config><domain includeSubdomain=\"true\">a.test</domain></domain-config></network-security-config>", message: "attribute 'includeSubdomain' is not allowed"),
        Malformed(xml: "<network-security-config><domain-config><domain>a.test</domain><pins/></domain-config></network-security-config>", message: "<pins> is not allowed"),
        Malformed(xml: "<network-security-config><domain-config><domain>bad host</domain></domain-config></network-security-config>", message: "invalid host name"),
    ]

    @Test("malformed configs are errors naming file and line", arguments: malformed)
    func malformedConfig(_ c: Malformed) throws {
        let dir = try TemporaryDirectory()
        do {
            _ = try load(c.xml, in: dir)
            Issue.record("accepted: \(c.xml)")
        } catch let error as PinproxyError {
            #expect(error.code == .policyFile)
            #expect(error.reason.contains("network_security_config.xml:"), "\(error.reason)")
            #expect(error.reason.contains(c.message), "\(error.reason)")
        }
    }

    /// Element names, attribute names and comments that are not UTF-8: FoundationXML's
    /// parser traps on them, so such a file is refused before it reaches the parser.
    static let filesNotUTF8: [(bytes: [UInt8], line: Int)] = [
        ([0x3c, 0xff, 0xff, 0x00, 0x0a], 1),
        (Array("<network-security-config\n ".utf8) + [0xcb] + Array("igest=\"x\"/>".utf8), 2),
        (Array("<network-security-config><!-- ".utf8) + [0xff] + Array(" --></network-security-config>".utf8), 1),
    ]

    @Test("a config that is not UTF-8 is an error naming the line, not a crash", arguments: filesNotUTF8)
    func notUTF8(_ bytes: [UInt8], line: Int) throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("res/xml/network_security_config.xml", bytes: bytes)
        #expect {
            _ = try NetworkSecurityConfig.load(contentsOf: path)
        } throws: { error in
            "\(error)".contains("network_security_config.xml:\(line): not UTF-8")
        }
    }

    @Test func rawResourceWithUndecodableContent() throws {
        let dir = try TemporaryDirectory()
        try dir.write("res/raw/broken.der", bytes: [0x30, 0x03, 0x01, 0x02])
        let xml = "<network-security-config><base-config><trust-anchors><certificates src=\"@raw/broken\"/></trust-anchors></base-config></network-security-config>"
        #expect {
            _ = try load(xml, in: dir)
        } throws: { error in
            "\(error)".contains("@raw/broken") && "\(error)".contains("broken.der")
        }
    }
}
