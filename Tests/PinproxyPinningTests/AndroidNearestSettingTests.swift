import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Which domain-config applies to a host, and which of its settings: Android's
/// `ApplicationConfig.getConfigForHostname` (exact domain first, else the longest
/// domain with includeSubdomains, on label boundaries) and the nearest setting
/// of a nested config winning over its parents'.
extension AndroidTests {
    @Test func includeSubdomainsMatchesOnLabelBoundariesAndTheLongestDomainWins() throws {
        let xml = """
            <network-security-config>
              <domain-config><domain includeSubdomains="true">example.com</domain></domain-config>
              <domain-config><domain includeSubdomains="true">api.example.com</domain></domain-config>
              <domain-config><domain includeSubdomains="true">pi.example.com</domain></domain-config>
            </network-security-config>
            """
        let policy = try policy(xml)
        #expect(policy.match("v1.api.example.com")?.domain.name == "api.example.com")
        #expect(policy.match("api.example.com")?.domain.name == "api.example.com")
        #expect(policy.match("www.example.com")?.domain.name == "example.com")
        // A name that merely ends with the domain's text is not under it.
        #expect(policy.match("badexample.com") == nil)
        #expect(policy.match("v1.xapi.example.com")?.domain.name == "example.com")
    }

    @Test func anExactDomainWinsWhereverItIsWritten() throws {
        // The exact domain comes first here (the reverse order is `exactDomainBeatsIncludeSubdomains`).
        let xml = """
            <network-security-config>
              <domain-config><domain>api.example.com</domain>
                <pin-set><pin digest="SHA-256">\(pki.root.spkiPin.base64)</pin></pin-set></domain-config>
              <domain-config><domain includeSubdomains="true">example.com</domain>
                <pin-set><pin digest="SHA-256">\(pki.otherRoot.spkiPin.base64)</pin></pin-set></domain-config>
            </network-security-config>
            """
        let policy = try policy(xml)
        #expect(policy.match("api.example.com")?.domain.name == "api.example.com")
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
    }

    @Test func aNestedConfigsOwnPinSetAndAnchorsWinOverItsParents() throws {
        // The parent pins a key the genuine chain does not have and trusts only a
        // raw certificate; the child for the host pins the genuine root and trusts
        // the system: the child's settings are the ones in force.
        let xml = """
            <network-security-config>
              <domain-config>
                <domain includeSubdomains="true">example.com</domain>
                <trust-anchors><certificates src="@raw/internal_ca"/></trust-anchors>
                <pin-set><pin digest="SHA-256">\(pki.otherRoot.spkiPin.base64)</pin></pin-set>
                <domain-config>
                  <domain>api.example.com</domain>
                  <trust-anchors><certificates src="system"/></trust-anchors>
                  <pin-set><pin digest="SHA-256">\(pki.root.spkiPin.base64)</pin></pin-set>
                </domain-config>
              </domain-config>
            </network-security-config>
            """
        let policy = try policy(xml, raw: ["internal_ca.pem": pki.selfSigned])
        let genuine = policy.evaluate(Scenario.genuine.trust(pki))
        #expect(genuine.decision == .accept, "\(genuine.steps)")
        #expect(genuine.steps.contains { $0.outcome.contains("from the domain-config: system") }, "\(genuine.steps)")
        // The child's pin-set still refuses a chain from another trusted root.
        #expect(policy.evaluate(pki.trust([pki.misissuedLeaf])).decision == .reject)
    }
}
