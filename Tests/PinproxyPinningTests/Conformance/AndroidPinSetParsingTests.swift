import Foundation
import PinproxyBase
import Testing
@testable import PinproxyPinning

/// What Android's parser takes in a `<pin-set>` beyond the XmlConfigTests files:
/// `Pin.isSupportedDigestAlgorithm` compares the digest with `"SHA-256".equalsIgnoreCase`,
/// `XmlConfigSource.parsePinSet` builds a set from whatever `<pin>`s there are (none included),
/// and `NetworkSecurityTrustManager.checkPins` returns at once for an empty set.
@Suite("Android pin-set parsing")
struct AndroidPinSetParsingTests {
    let w: AndroidWorld
    init() throws { w = try AndroidWorld.shared.get() }

    private func pinned(digest: String, pin: String) -> String {
        nsc("""
              <domain-config><domain>android.com</domain>
                <pin-set><pin digest="\(digest)">\(pin)</pin></pin-set>
              </domain-config>
            """)
    }

    @Test("the digest name is compared as Java's equalsIgnoreCase does", arguments: ["SHA-256", "sha-256", "Sha-256", "ſha-256"])
    func digestInAnyCase(digest: String) throws {
        try expectConnections(w, try w.load(pinned(digest: digest, pin: w.g2Pin)), succeed: ["android.com"])
        // The pins are enforced, not skipped: a pin that matches nothing still fails.
        try expectConnections(w, try w.load(pinned(digest: digest, pin: "1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=")), fail: ["android.com"])
    }

    @Test("a digest that is not SHA-256 in some case is refused", arguments: ["SHA256", "SHA-1", "SHA-512", "SHA-256 ", "ß"])
    func otherDigests(digest: String) {
        #expect { _ = try w.load(pinned(digest: digest, pin: w.g2Pin)) } throws: { "\($0)".contains("not supported") }
    }

    @Test("an empty pin-set loads and enforces nothing: a chain no pin would match is accepted")
    func emptyPinSet() throws {
        let policy = try w.load(nsc("""
              <domain-config><domain>android.com</domain>
                <pin-set expiration="2099-01-01"></pin-set>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com"])
        let verdict = try w.connects(policy, "android.com")
        #expect(verdict.steps.contains { $0.outcome.contains("holds no pin") }, "\(VerdictReport.text(verdict))")
        #expect(policy.uncoveredReason(host: try HostName(validating: "android.com"))?.contains("holds no pin") == true)
    }

    @Test("an empty pin-set in a nested domain-config replaces the enclosing one's pins for its domain only")
    func emptyNestedPinSet() throws {
        let policy = try w.load(nsc("""
              <domain-config>
                <domain includeSubdomains="true">android.com</domain>
                <pin-set><pin digest="SHA-256">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                <domain-config><domain>developer.android.com</domain><pin-set/></domain-config>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["developer.android.com"], fail: ["android.com"])
        #expect(policy.uncoveredReason(host: try HostName(validating: "android.com")) == nil)
    }
}
