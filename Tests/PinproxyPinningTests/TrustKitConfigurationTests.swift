import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// TrustKit's configuration rules as `parseTrustKitConfiguration` enforces them at start.
@Suite("TrustKit configuration rules")
struct TrustKitConfigurationTests {
    let pki = PKI.shared
    var pin: SPKIPin { pki.intermediate.spkiPin }
    var backup: SPKIPin { try! SPKIPin(sha256: [UInt8](repeating: 9, count: 32)) }

    func refusal(_ domains: [TrustKitPolicy.DomainPinning]) -> String? {
        do {
            _ = try TrustKitPolicy(domains: domains)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func twoPinsOnlyWhenEnforcing() throws {
        let reportOnly = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pin], enforcePinning: false)])
        #expect(reportOnly.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(reportOnly.evaluate(Scenario.forged.trust(pki)).decision == .reportOnly)
        let enforced = refusal([.init(domain: "api.example.com", publicKeyHashes: [pin])])
        #expect(enforced?.contains("api.example.com has 1 distinct pin; TrustKit requires at least two (a backup pin) when TSKEnforcePinning is true") == true,
                "\(enforced ?? "accepted")")
        #expect(refusal([.init(domain: "api.example.com", publicKeyHashes: [], enforcePinning: false)])?.contains("at least one") == true)
    }

    @Test("a domain must sit under a suffix of the public-suffix list", arguments: [
        "example.test", "api.example.test", "localhost", "intranet", "127.0.0.1", "example.invalid",
    ])
    func unknownSuffixIsRefused(domain: String) {
        let message = refusal([.init(domain: domain, publicKeyHashes: [pin, backup])])
        #expect(message?.contains("\(domain) is not under a suffix of TrustKit's public-suffix list") == true, "\(message ?? "accepted")")
    }

    @Test("known suffixes are accepted", arguments: ["api.example.com", "example.co.uk", "www.example.org", "shop.example.xn--p1ai", "foo.bar.ck", "www.ck"])
    func knownSuffixIsAccepted(domain: String) {
        #expect(refusal([.init(domain: domain, publicKeyHashes: [pin, backup])]) == nil)
    }

    @Test("includeSubdomains on a public suffix is refused", arguments: ["com", "co.uk", "appspot.com", "foo.ck", "github.io"])
    func includeSubdomainsOnASuffix(domain: String) {
        let message = refusal([.init(domain: domain, publicKeyHashes: [pin, backup], includeSubdomains: true)])
        #expect(message?.contains("TSKIncludeSubdomains on \(domain), which is a public suffix") == true, "\(message ?? "accepted")")
        // Without includeSubdomains TrustKit takes it (GetRegistryLength is not 0).
        #expect(refusal([.init(domain: domain, publicKeyHashes: [pin, backup])]) == nil)
    }

    @Test func includeSubdomainsBelowASuffix() {
        #expect(refusal([.init(domain: "example.co.uk", publicKeyHashes: [pin, backup], includeSubdomains: true)]) == nil)
        // !www.ck is an exception to *.ck, so www.ck is a registrable domain.
        #expect(refusal([.init(domain: "www.ck", publicKeyHashes: [pin, backup], includeSubdomains: true)]) == nil)
    }

    @Test func theListIsEmbedded() {
        #expect(PublicSuffixList.shared.registryLength(of: "api.example.com") == 3)
        #expect(PublicSuffixList.shared.registryLength(of: "a.b.example.co.uk") == 5)
        #expect(PublicSuffixList.shared.registryLength(of: "example.test") == 0)
        // A trailing dot counts in the length, so a suffix written with one is still a suffix.
        #expect(PublicSuffixList.shared.registryLength(of: "example.com.") == 4)
        #expect(PublicSuffixList.shared.registryLength(of: "foo.co.uk.") == 6)
        #expect(PublicSuffixList.shared.isPublicSuffix("co.uk."))
        #expect(PublicSuffixList.shared.ruleCount > 9_000)
    }

    /// A past `TSKExpirationDate` unpins the domain, whichever loader read it.
    @Test func pastExpirationDateUnpinsTheDomainThroughBothLoaders() throws {
        let dir = try TemporaryDirectory()
        func json(_ date: String) -> String {
            #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["\#(pin.base64)","\#(backup.base64)"],"TSKExpirationDate":"\#(date)"}}}"#
        }
        func plist(_ date: String) -> String {
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>TSKConfiguration</key><dict><key>TSKPinnedDomains</key><dict>
              <key>api.example.com</key><dict>
                <key>TSKPublicKeyHashes</key><array><string>\(pin.base64)</string><string>\(backup.base64)</string></array>
                <key>TSKExpirationDate</key><string>\(date)</string>
              </dict>
            </dict></dict></dict></plist>
            """
        }
        for (name, text) in [("past.json", json("2001-01-01")), ("past.plist", plist("2001-01-01"))] {
            let policy = try PolicyFile.load(contentsOf: try dir.write(name, text))
            let verdict = policy.evaluate(Scenario.forged.trust(pki))
            #expect(verdict.decision == .accept, "\(name)")
            #expect(verdict.steps.first?.outcome.contains("stopped being pinned at TSKExpirationDate 2001-01-01") == true, "\(name): \(verdict.steps)")
        }
        for (name, text) in [("future.json", json("2099-01-01")), ("future.plist", plist("2099-01-01"))] {
            #expect(try PolicyFile.load(contentsOf: try dir.write(name, text)).evaluate(Scenario.forged.trust(pki)).decision == .reject, "\(name)")
        }
    }

    /// `TSKExcludeSubdomainFromParentPolicy` from an Info.plist: the subdomain is left to default handling.
    @Test func excludedSubdomainThroughThePlistLoader() throws {
        let dir = try TemporaryDirectory()
        func plist(_ excluded: String) -> String {
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>TSKConfiguration</key><dict><key>TSKPinnedDomains</key><dict>
              <key>example.com</key><dict>
                <key>TSKPublicKeyHashes</key><array><string>\(pin.base64)</string><string>\(backup.base64)</string></array>
                <key>TSKIncludeSubdomains</key><true/>
              </dict>
              <key>api.example.com</key><dict>\(excluded)</dict>
            </dict></dict></dict></plist>
            """
        }
        let policy = try PolicyFile.load(contentsOf: try dir.write("excluded.plist", plist("<key>TSKExcludeSubdomainFromParentPolicy</key><true/>")))
        let verdict = policy.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept, "the forged chain to the installed proxy CA passes the system's evaluation: \(verdict.steps)")
        #expect(verdict.disposition == "NSURLSessionAuthChallengePerformDefaultHandling")
        #expect(verdict.steps.first?.outcome.contains("it is left out of the policy of example.com") == true, "\(verdict.steps)")
        // With the key false the entry is an ordinary one, and it needs pins.
        #expect { _ = try PolicyFile.load(contentsOf: try dir.write("kept.plist", plist("<key>TSKExcludeSubdomainFromParentPolicy</key><false/>"))) } throws: {
            "\($0)".contains("TSKPublicKeyHashes")
        }
    }
}
