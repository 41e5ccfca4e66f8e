import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// Checks that each host connects (or not) under `policy`, as `TestUtils.assertConnectionSucceeds`
/// and `assertConnectionFails` do.
func expectConnections(_ world: AndroidWorld, _ policy: AndroidPolicy, succeed: [String] = [], fail: [String] = [],
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
    for host in succeed {
        let verdict = try world.connects(policy, host)
        #expect(verdict.decision == .accept, "\(host): \(VerdictReport.text(verdict))", sourceLocation: sourceLocation)
    }
    for host in fail {
        let verdict = try world.connects(policy, host)
        #expect(verdict.decision == .reject, "\(host): \(VerdictReport.text(verdict))", sourceLocation: sourceLocation)
    }
}

/// Android's `XmlConfigTests` (frameworks/base tests/NetworkSecurityConfigTest), one test per
/// case, with its XML files as written and chains minted for its hosts. pinproxy models release
/// builds, so the debuggable cases (`testBasicDebugOverrides`, `testDebugOverridesWithDomain`,
/// `testDebugInherit`, `testDebugDedup`, `testExtraDebugResource`) and `testTrustManagerKeystore`
/// (a TrustManagerFactory API) have no counterpart. The Certificate Transparency cases are judged by the
/// verdict's `<certificateTransparency>` step (pinproxy reports where Android requires CT, and does not check SCTs). A `<pin>` the suite writes as a literal that
/// matches nothing (bad_pin, expired_pin, override_pins) stays that literal; the `zCTn…` pin, which
/// matched android.com's intermediate, becomes the minted intermediate's pin.
@Suite("XmlConfigTests conformance")
struct AndroidXmlConfigConformanceTests {
    let w: AndroidWorld
    init() throws { w = try AndroidWorld.shared.get() }

    private var emptyTrust: String { nsc("<base-config><trust-anchors></trust-anchors></base-config>") }

    @Test func testEmptyConfigFile() throws {
        try expectConnections(w, try w.load(nsc("")), succeed: ["android.com", "developer.android.com", "google.com"])
    }
    @Test func testEmptyAnchors() throws {
        try expectConnections(w, try w.load(emptyTrust), fail: ["android.com", "developer.android.com", "google.com"])
    }
    @Test func testBasicDomainConfig() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain>android.com</domain>
                <trust-anchors><certificates src="system" /><certificates src="user" /></trust-anchors>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com"], fail: ["developer.android.com", "google.com"])
    }
    @Test func testBasicPinning() throws {
        let policy = try w.load(nsc("""
              <domain-config><domain>android.com</domain>
                <pin-set><pin digest="SHA-256">\(w.g2Pin)</pin></pin-set>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "google.com"])
    }
    @Test func testExpiredPin() throws {
        let policy = try w.load(nsc("""
              <domain-config><domain>android.com</domain>
                <!-- Invalid pin that has expired -->
                <pin-set expiration="2015-01-01"><pin digest="SHA-256">aaaaaaaaaaa2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com"])
    }
    @Test func testOverridesPins() throws {
        let policy = try w.load(nsc("""
              <domain-config><domain>android.com</domain>
                <pin-set><pin digest="SHA-256">aaaaaaaaIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
                <trust-anchors><certificates src="system" overridePins="true" /></trust-anchors>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com"])
    }
    @Test func testBadPin() throws {
        let policy = try w.load(nsc("""
              <domain-config><domain>android.com</domain>
                <pin-set><pin digest="SHA-256">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["google.com"], fail: ["android.com"])
    }
    @Test func testMultipleDomains() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain>android.com</domain><domain>google.com</domain>
                <trust-anchors><certificates src="system" /><certificates src="user" /></trust-anchors>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "google.com"], fail: ["developer.android.com"])
    }
    @Test func testMultipleDomainConfigs() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain>android.com</domain>
                <trust-anchors><certificates src="system" /><certificates src="user" /></trust-anchors></domain-config>
              <domain-config><domain>google.com</domain>
                <trust-anchors><certificates src="system" /><certificates src="user" /></trust-anchors></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "google.com"])
    }
    @Test func testIncludeSubdomains() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <trust-anchors><certificates src="system" /><certificates src="user" /></trust-anchors></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "developer.android.com"], fail: ["google.com"])
    }
    @Test func testAttributes() throws {
        let policy = try w.load(nsc(#"<base-config cleartextTrafficPermitted="false" hstsEnforced="true"></base-config>"#))
        #expect(policy.config.domainConfigs.isEmpty)
        try expectConnections(w, policy, succeed: ["android.com"])
    }
    @Test func testResourcePemCertificateSource() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain>android.com</domain>
                <trust-anchors><certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
            """))
        #expect(policy.config.domainConfigs.first?.trustAnchors?.first?.certificates.count == 2)
        try expectConnections(w, policy, succeed: ["android.com"], fail: ["developer.android.com", "google.com"])
    }
    @Test func testResourceDerCertificateSource() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain>android.com</domain>
                <trust-anchors><certificates src="@raw/ca_certs_der" /></trust-anchors></domain-config>
            """))
        #expect(policy.config.domainConfigs.first?.trustAnchors?.first?.certificates.count == 2)
        try expectConnections(w, policy, succeed: ["android.com"], fail: ["developer.android.com", "google.com"])
    }
    @Test func testNestedDomainConfigs() throws {
        let policy = try w.load(nsc("""
                <domain-config>
                  <domain includeSubdomains="true">android.com</domain>
                  <trust-anchors><certificates src="system" /></trust-anchors>
                  <!-- nested config that adds pins -->
                  <domain-config>
                      <domain>developer.android.com</domain>
                      <pin-set><pin digest="SHA-256">\(w.g2Pin)</pin></pin-set>
                  </domain-config>
                </domain-config>
                <base-config cleartextTrafficPermitted="false"></base-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "developer.android.com"])
        let child = try w.connects(policy, "developer.android.com")
        #expect(child.matchedPins == [w.g2Pin], "the child's pins apply: \(child.steps)")
    }
    @Test func testNestedDomainConfigsOverride() throws {
        let policy = try w.load(nsc("""
                <base-config cleartextTrafficPermitted="false"></base-config>
                <!-- Nested config that overrides parent -->
                <domain-config cleartextTrafficPermitted="true">
                    <domain includeSubdomains="true">android.com</domain>
                    <domain-config cleartextTrafficPermitted="false"><domain>developer.android.com</domain></domain-config>
                </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "developer.android.com"])
    }
    @Test func testDebugOverridesDisabled() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <debug-overrides><trust-anchors><certificates src="system" /></trust-anchors></debug-overrides>
            """))
        try expectConnections(w, policy, fail: ["android.com", "developer.android.com"])
    }
    /// A release build never reads the `_debug` resource, so its error does not matter; pinproxy reads only the main file.
    @Test func testExtraDebugResourceIgnored() throws {
        let policy = try w.load(emptyTrust)
        try expectConnections(w, policy, fail: ["android.com"])
    }

    /// `isCertificateTransparencyVerificationRequired` as the verdict for `host` reports it.
    private func requiresCT(_ policy: AndroidPolicy, _ host: String, chain: [Certificate]? = nil) throws -> Bool {
        let verdict = try w.connects(policy, host, chain: chain)
        let step = verdict.steps.first { $0.action.hasPrefix("<certificateTransparency>") }
        return step?.outcome.hasPrefix("not modelled") ?? false
    }
    /// ct_domains.xml as Android's test names its hosts, underscores and all.
    @Test func testCertificateTransparencyDomainConfig() throws {
        let policy = try w.load(nsc("""
              <base-config><certificateTransparency enabled="true" /></base-config>
              <domain-config><domain>android.com</domain><trust-anchors><certificates src="system" /></trust-anchors></domain-config>
              <domain-config><domain>subdomain_user.android.com</domain><trust-anchors><certificates src="user" /></trust-anchors></domain-config>
              <domain-config><certificateTransparency enabled="true" /><domain>subdomain_user_ct.android.com</domain>
                <trust-anchors><certificates src="user" /></trust-anchors></domain-config>
              <domain-config><domain>subdomain_inline.android.com</domain><trust-anchors><certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
              <domain-config><certificateTransparency enabled="true" /><domain>subdomain_inline_ct.android.com</domain>
                <trust-anchors><certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
            """))
        #expect(try requiresCT(policy, "google.com"))
        #expect(try requiresCT(policy, "android.com"))
        #expect(try !requiresCT(policy, "subdomain_user.android.com"))
        #expect(try requiresCT(policy, "subdomain_user_ct.android.com"))
        #expect(try !requiresCT(policy, "subdomain_inline.android.com"))
        #expect(try requiresCT(policy, "subdomain_inline_ct.android.com"))
    }
    @Test func testCertificateTransparencyUserConfig() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors><certificates src="user" /></trust-anchors></base-config>
              <domain-config><domain>android.com</domain></domain-config>
              <domain-config><certificateTransparency enabled="true" /><domain>subdomain.android.com</domain></domain-config>
            """))
        #expect(try !requiresCT(policy, "google.com", chain: [w.userLeaf]))
        #expect(try !requiresCT(policy, "android.com", chain: [w.userLeaf]))
        #expect(try requiresCT(policy, "subdomain.android.com", chain: [w.userLeaf]))
    }

    private func refused(_ xml: String, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) { _ = try w.load(xml) } throws: { "\($0)".contains(fragment) }
    }
    private var badConfig4: String { nsc("<base-config><!-- domains are not allowed in base-config --><domain>android.com</domain></base-config>") }

    @Test func testBadConfig0() {
        refused(nsc(#"<domain-config><domain>android.com</domain><pin-set><pin digest="I am probably not an algorithm">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>"#),
                "is not supported")
    }
    @Test func testBadConfig1() {
        refused(nsc("<domain-config><domain>android.com</domain><pin-set><pin>1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>"),
                "needs digest")
    }
    @Test func testBadConfig2() {
        refused(nsc(#"<domain-config><domain>android.com</domain><pin-set><pin digest="SHA-256"></pin></pin-set></domain-config>"#), "decodes to 0 bytes")
    }
    @Test func testBadConfig3() {
        refused(nsc("""
              <domain-config><domain>android.com</domain></domain-config>
              <domain-config><!-- Same domain name used in two configs --><domain>android.com</domain></domain-config>
            """), "android.com has already been specified")
    }
    @Test func testBadConfig4() {
        refused(badConfig4, "<domain> is not allowed in <base-config>")
    }
    /// The suite's testBadConfig5 loads bad_config4.xml again (`testBadConfig(R.xml.bad_config4)`),
    /// so bad_config5.xml — a pin-set in base-config — is never tried there. Both are refused here.
    @Test func testBadConfig5() {
        refused(badConfig4, "<domain> is not allowed in <base-config>")
        refused(nsc("<base-config><!-- pins are not allowed in base-config --><pin-set></pin-set></base-config>"), "<pin-set> is only allowed in <domain-config>")
    }
    @Test func testDomainWhitespaceTrimming() throws {
        let policy = try w.load(nsc("""
              <domain-config>
                <domain>android.com
                </domain>
                <domain>   developer.android.com    </domain>
                <pin-set><pin digest="SHA-256">  \(w.g2Pin)  </pin></pin-set>
              </domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "developer.android.com"])
        #expect(policy.match("developer.android.com")?.domain.name == "developer.android.com")
    }
}

/// Android's `NetworkSecurityConfigTests`, one test per case. The suite builds its configs in
/// code; each is written here as the XML that makes the same config. A zero-length pin cannot be
/// written in XML (the parser refuses it), so the "bad pin" is a pin that matches nothing.
/// `testConfigBuilderParentLoop` (a builder API) has no counterpart; of `testUserAddedCaOptIn`,
/// the privileged-app half has none either.
@Suite("NetworkSecurityConfigTests conformance")
struct AndroidNetworkSecurityConfigConformanceTests {
    let w: AndroidWorld
    init() throws { w = try AndroidWorld.shared.get() }
    private let badPin = "1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y="

    @Test func testEmptyConfig() throws {
        try expectConnections(w, try w.load(nsc("<base-config><trust-anchors></trust-anchors></base-config>")), fail: ["android.com"])
    }
    @Test func testEmptyPerNetworkSecurityConfig() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors><certificates src="system" /></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors></trust-anchors></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["google.com"], fail: ["android.com"])
    }
    @Test func testBadPin() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors><certificates src="system" /></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <trust-anchors><certificates src="system" /></trust-anchors>
                <pin-set><pin digest="SHA-256">\(badPin)</pin></pin-set></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["google.com"], fail: ["android.com"])
    }
    private var goodPinConfig: String {
        nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <trust-anchors><certificates src="system" /></trust-anchors>
                <pin-set><pin digest="SHA-256">\(w.g2Pin)</pin></pin-set></domain-config>
            """)
    }
    @Test func testGoodPin() throws {
        try expectConnections(w, try w.load(goodPinConfig), succeed: ["android.com", "developer.android.com"])
    }
    @Test func testOverridePins() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <trust-anchors><certificates src="system" overridePins="true" /></trust-anchors>
                <pin-set><pin digest="SHA-256">\(badPin)</pin></pin-set></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["android.com"])
    }
    @Test func testMostSpecificNetworkSecurityConfig() throws {
        let policy = try w.load(nsc("""
              <base-config><trust-anchors></trust-anchors></base-config>
              <domain-config><domain includeSubdomains="true">android.com</domain><trust-anchors></trust-anchors></domain-config>
              <domain-config><domain>developer.android.com</domain><trust-anchors><certificates src="system" /></trust-anchors></domain-config>
            """))
        try expectConnections(w, policy, succeed: ["developer.android.com"], fail: ["android.com"])
    }
    @Test func testSubdomainIncluded() throws {
        func config(_ include: Bool) -> String {
            nsc("""
                  <base-config><trust-anchors></trust-anchors></base-config>
                  <domain-config><domain includeSubdomains="\(include)">android.com</domain><trust-anchors><certificates src="system" /></trust-anchors></domain-config>
                """)
        }
        try expectConnections(w, try w.load(config(true)), succeed: ["developer.android.com"])
        try expectConnections(w, try w.load(config(false)), fail: ["developer.android.com"])
    }
    @Test func testConfigBuilderUsesParents() throws {
        try expectConnections(w, try w.load(nsc("<domain-config><domain>example.org</domain></domain-config>")), succeed: ["android.com"])
    }
    @Test func testWithUrlConnection() throws {
        try expectConnections(w, try w.load(goodPinConfig), succeed: ["android.com", "developer.android.com"], fail: ["google.com"])
    }
    @Test func testUserAddedCaOptIn() throws {
        let userChain = [w.userLeaf]
        let preN = try w.connects(try w.load(nsc(""), targetSdkVersion: 23), "android.com", chain: userChain)
        let n = try w.connects(try w.load(nsc(""), targetSdkVersion: 24), "android.com", chain: userChain)
        #expect(preN.decision == .accept, "\(VerdictReport.text(preN))")
        #expect(n.decision == .reject, "\(VerdictReport.text(n))")
    }
}
