import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// What Android's `XmlConfigSource` refuses or accepts beyond its own test files: a domain
/// named twice anywhere fails the whole file; `hstsEnforced` and `<certificateTransparency>` load.
@Suite("Android network security config parser rules")
struct AndroidParserRuleTests {
    let w: AndroidWorld
    init() throws { w = try AndroidWorld.shared.get() }

    private func refused(_ xml: String, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) { _ = try w.load(xml) } throws: { error in
            "\(error)".contains(fragment) && "\(error)".contains("Android refuses to load the whole file")
        }
    }

    @Test func sameDomainTwiceInOneDomainConfig() {
        refused(nsc("<domain-config><domain>android.com</domain><domain>android.com</domain></domain-config>"), "android.com has already been specified")
    }
    @Test func nestedChildRepeatingItsParent() {
        refused(nsc("""
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <domain-config><domain>android.com</domain></domain-config>
              </domain-config>
            """), "android.com has already been specified")
    }
    @Test func caseAndSpacingDoNotMakeADifferentDomain() {
        refused(nsc("<domain-config><domain> ANDROID.com </domain></domain-config><domain-config><domain>android.com</domain></domain-config>"),
                "android.com has already been specified")
    }
    @Test func includeSubdomainsDoesNotMakeADifferentDomain() {
        refused(nsc("""
              <domain-config><domain>android.com</domain></domain-config>
              <domain-config><domain includeSubdomains="true">android.com</domain>
                <pin-set><pin digest="SHA-256">1HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin></pin-set></domain-config>
            """), "android.com has already been specified")
    }
    /// The error names the line of the repeat and of the first mention.
    @Test func theErrorNamesBothLines() {
        #expect { _ = try w.load(nsc("<domain-config>\n<domain>a.example.com</domain>\n</domain-config>\n<domain-config>\n<domain>a.example.com</domain>\n</domain-config>")) } throws: { error in
            "\(error)".contains("config.xml:7: a.example.com has already been specified (line 4)")
        }
    }

    @Test func hstsEnforcedLoadsOnEveryConfig() throws {
        let policy = try w.load(nsc("""
              <base-config hstsEnforced="true"></base-config>
              <domain-config hstsEnforced="false"><domain>android.com</domain></domain-config>
              <debug-overrides hstsEnforced="true"></debug-overrides>
            """))
        try expectConnections(w, policy, succeed: ["android.com", "google.com"])
        #expect { _ = try w.load(nsc(#"<base-config hstsEnforced="yes"></base-config>"#)) } throws: { "\($0)".contains("hstsEnforced=\"yes\" must be \"true\" or \"false\"") }
    }

    /// Android's ct_users.xml and ct_domains.xml (the second names hosts with underscores) load;
    /// the verdict says Certificate Transparency is not checked.
    @Test func certificateTransparencyLoadsAndTheVerdictSaysItIsNotModelled() throws {
        let users = try w.load(nsc("""
              <base-config><trust-anchors><certificates src="user" /></trust-anchors></base-config>
              <domain-config><domain>android.com</domain></domain-config>
              <domain-config><certificateTransparency enabled="true" /><domain>subdomain.android.com</domain></domain-config>
            """))
        let withCT = try w.connects(users, "subdomain.android.com", chain: [w.userLeaf])
        #expect(withCT.steps.contains { $0.action.contains("enabled=\"true\" in the domain-config") && $0.outcome.hasPrefix("not modelled") }, "\(withCT.steps)")
        let withoutCT = try w.connects(users, "android.com", chain: [w.userLeaf])
        #expect(!withoutCT.steps.contains { $0.action.contains("certificateTransparency") })
        #expect(withoutCT.decision == .accept)

        let domains = try w.load(nsc("""
              <base-config><certificateTransparency enabled="true" /></base-config>
              <domain-config><domain>android.com</domain><trust-anchors><certificates src="system" /></trust-anchors></domain-config>
              <domain-config><domain>subdomain_user.android.com</domain><trust-anchors><certificates src="user" /></trust-anchors></domain-config>
              <domain-config><certificateTransparency enabled="true" /><domain>subdomain_user_ct.android.com</domain>
                <trust-anchors><certificates src="user" /></trust-anchors></domain-config>
              <domain-config><domain>subdomain_inline.android.com</domain><trust-anchors><certificates src="@raw/ca_certs_pem" /></trust-anchors></domain-config>
            """))
        let inherited = try w.connects(domains, "android.com")
        #expect(inherited.decision == .accept)
        #expect(inherited.steps.contains { $0.action.contains("in base-config") && $0.outcome.contains("does not check Certificate Transparency") }, "\(inherited.steps)")
        #expect(domains.config.domainConfigs.count == 4)
    }

    @Test func mistypedElementsAndAttributesNameTheNearestAllowedOne() {
        let cases: [(xml: String, message: String)] = [
            ("<domain-config><domain>android.com</domain><pinset><pin digest=\"SHA-256\">x</pin></pinset></domain-config>",
             "<pinset> is not allowed in <domain-config> (did you mean <pin-set>?)"),
            ("<base-config><trust-anchor><certificates src=\"system\" /></trust-anchor></base-config>",
             "<trust-anchor> is not allowed in <base-config> (did you mean <trust-anchors>?)"),
            ("<domain_config><domain>android.com</domain></domain_config>",
             "<domain_config> is not allowed in <network-security-config> (did you mean <domain-config>?)"),
            ("<base-config><trust-anchors><certificate src=\"system\" /></trust-anchors></base-config>",
             "<certificate> is not allowed in <trust-anchors> (did you mean <certificates>?); use <certificates src=...>"),
            ("<domain-config><domain includeSubDomains=\"true\">android.com</domain></domain-config>",
             "attribute 'includeSubDomains' is not allowed on <domain> (did you mean 'includeSubdomains'?)"),
        ]
        for c in cases {
            #expect { _ = try w.load(nsc(c.xml)) } throws: { "\($0)".contains(c.message) }
        }
        // No allowed name is near: the refusal alone.
        #expect { _ = try w.load(nsc("<domain-config><domain>android.com</domain><frobnicate /></domain-config>")) } throws: {
            "\($0)".contains("<frobnicate> is not allowed in <domain-config>") && !"\($0)".contains("did you mean")
        }
    }

    @Test func certificateTransparencyIsRefusedWhereAndroidRefusesIt() {
        #expect { _ = try w.load(nsc(#"<debug-overrides><certificateTransparency enabled="true" /></debug-overrides>"#)) } throws: {
            "\($0)".contains("<certificateTransparency> is not allowed in <debug-overrides>")
        }
        #expect { _ = try w.load(nsc(#"<base-config><certificateTransparency enabled="maybe" /></base-config>"#)) } throws: {
            "\($0)".contains("enabled=\"maybe\" must be \"true\" or \"false\"")
        }
    }
}
