import Foundation
@testable import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Each platform's own host check, rule by rule: OkHttp's `OkHostnameVerifier` (the JDK and
/// Android), Apple's `SecDNSMatch`, curl's `hostmatch`.
@Suite("Host matching per platform")
struct HostMatchTests {
    let pki = PKI.shared

    func leaf(_ san: [String]) throws -> Certificate {
        try OpenSSLIssued.leaf(subject: "/CN=leaf", extensions: OpenSSLIssued.serverExtensions(san: san),
                               issuer: pki.intermediate, issuerKey: pki.intermediateKey)
    }

    /// The platforms whose SSL policy accepts `leaf` for `host` (the chain under the PKI root).
    func accepting(_ leaf: Certificate, host: String) throws -> [TrustPlatform] {
        let name = try HostName(validating: host)
        return TrustPlatform.allCases.filter { platform in
            TrustEvaluator.evaluate([leaf, pki.intermediate], policy: .ssl(host: name, platform: platform), at: Date().addingTimeInterval(5),
                                    anchors: TrustAnchors(system: [pki.root])).isValid
        }
    }

    @Test func okHttpMakesBothNamesAbsoluteAndAllowsAWildcardOverOneLabel() {
        #expect(OkHostnameVerifier.verifyHostname("api.example.com", pattern: "api.example.com."))
        #expect(OkHostnameVerifier.verifyHostname("api.example.com.", pattern: "api.example.com"))
        #expect(OkHostnameVerifier.verifyHostname("api.example.com", pattern: "API.Example.COM"))
        #expect(OkHostnameVerifier.verifyHostname("example.test", pattern: "*.test"))
        #expect(OkHostnameVerifier.verifyHostname("api.example.com", pattern: "*.example.com."))
        // The star is one whole leftmost label.
        #expect(!OkHostnameVerifier.verifyHostname("a.b.example.com", pattern: "*.example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("example.com", pattern: "*.example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com", pattern: "a*.example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com", pattern: "*.*.com"))
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com", pattern: "api.*.com"))
        #expect(!OkHostnameVerifier.verifyHostname("test", pattern: "*."))
        // Sanity rules on either side.
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com", pattern: ".example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com", pattern: "api.example.com.."))
        #expect(!OkHostnameVerifier.verifyHostname(".api.example.com", pattern: "api.example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("api.example.com..", pattern: "api.example.com"))
        #expect(!OkHostnameVerifier.verifyHostname("", pattern: "api.example.com"))
    }

    @Test func okHttpWritesAnIPv6HostShortenedAndTheJDKListsItInFull() {
        func bytes(_ text: String) -> [UInt8] {
            guard case .ipv6(let b) = try! HostName(validating: text) else { return [] }
            return b
        }
        #expect(OkHostnameVerifier.hostText(bytes("::1")) == "::1")
        #expect(OkHostnameVerifier.hostText(bytes("1::")) == "1::")
        #expect(OkHostnameVerifier.hostText(bytes("2001:db8::5")) == "2001:db8::5")
        #expect(OkHostnameVerifier.hostText(bytes("2001:DB8:1:2:3:4:5:6")) == "2001:db8:1:2:3:4:5:6")
        // One zero group stays a 0; of two equal runs the first is shortened.
        #expect(OkHostnameVerifier.hostText(bytes("2001:db8:0:1:2:3:4:5")) == "2001:db8:0:1:2:3:4:5")
        #expect(OkHostnameVerifier.hostText(bytes("1:0:0:2:3:0:0:4")) == "1::2:3:0:0:4")
        #expect(OkHostnameVerifier.hostText(bytes("1:0:0:2:0:0:0:4")) == "1:0:0:2::4")
        #expect(OkHostnameVerifier.javaText(bytes("::1")) == "0:0:0:0:0:0:0:1")
        #expect(OkHostnameVerifier.javaText(bytes("2001:db8::5")) == "2001:db8:0:0:0:0:0:5")
        #expect(OkHostnameVerifier.hostText([127, 0, 0, 1]) == "127.0.0.1")
        #expect(OkHostnameVerifier.javaText([127, 0, 0, 1]) == "127.0.0.1")
    }

    @Test func anIPv6EntryWithARunOfZerosNeverMatchesOnTheJVMButDoesElsewhere() throws {
        let shortened = try leaf(["IP:2001:db8::5"])
        #expect(try accepting(shortened, host: "2001:db8::5") == [.apple, .android, .curl])
        let verdict = TrustEvaluator.evaluate([shortened, pki.intermediate], policy: .ssl(host: try HostName(validating: "2001:db8::5"), platform: .jvm),
                                              at: Date().addingTimeInterval(5), anchors: TrustAnchors(system: [pki.root]))
        #expect(verdict.failures.contains { $0.detail.contains("'2001:db8::5' against the JDK's '2001:db8:0:0:0:0:0:5'") }, "\(verdict.failures)")
        // Without a run of zero groups the two texts agree.
        let full = try leaf(["IP:2001:db8:1:2:3:4:5:6"])
        #expect(try accepting(full, host: "2001:db8:1:2:3:4:5:6") == TrustPlatform.allCases)
        #expect(try accepting(try leaf(["IP:127.0.0.1"]), host: "127.0.0.1") == TrustPlatform.allCases)
    }

    @Test func appleComparesLabelsAndKeepsTheEntrysTrailingDot() {
        #expect(AppleHostMatch.secDNSMatch(reference: "api.example.com", presented: "api.example.com"))
        #expect(AppleHostMatch.secDNSMatch(reference: "api.example.com.", presented: "API.example.com"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "api.example.com", presented: "api.example.com."))
        // A `*` counts only as the leftmost label.
        #expect(!AppleHostMatch.secDNSMatch(reference: "api.foo.example.com", presented: "api.*.example.com"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "a.b.example.com", presented: "a.*.example.com"))
        #expect(AppleHostMatch.secDNSMatch(reference: "a.example.com", presented: "*.example.com"))
        #expect(AppleHostMatch.secDNSMatch(reference: "api.example.com", presented: "*.example.com"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "a.b.example.com", presented: "*.example.com"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "api.example.com", presented: "a*.example.com"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "api.example.com", presented: "api.*.com"))
        // Never over a single-label name, nor over a public suffix.
        #expect(!AppleHostMatch.secDNSMatch(reference: "example.test", presented: "*.test"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "foo.co.uk", presented: "*.co.uk"))
        #expect(AppleHostMatch.secDNSMatch(reference: "foo.example.co.uk", presented: "*.example.co.uk"))
        #expect(!AppleHostMatch.secDNSMatch(reference: "", presented: "*.example.com"))
    }

    @Test func aWildcardOverAPublicSuffixIsRefusedByAppleOnly() throws {
        let wide = try leaf(["DNS:*.co.uk"])
        #expect(try accepting(wide, host: "foo.co.uk") == [.android, .jvm, .curl])
        #expect(try accepting(try leaf(["DNS:*.example.co.uk"]), host: "foo.example.co.uk") == TrustPlatform.allCases)
    }

    @Test func appleMatchesAnAddressAgainstADNSEntryThatSpellsIt() throws {
        let spelled = try leaf(["DNS:127.0.0.1"])
        #expect(try accepting(spelled, host: "127.0.0.1") == [.apple])
    }

    @Test func aTrailingDotInTheCertificatesNameIsIgnoredByOkHttpAndCurlNotByApple() throws {
        let absolute = try leaf(["DNS:api.example.com."])
        #expect(try accepting(absolute, host: "api.example.com") == [.android, .jvm, .curl])
        #expect(try accepting(try leaf(["DNS:*.example.com."]), host: "api.example.com") == [.android, .jvm, .curl])
    }

    @Test func curlWantsTwoDotsAfterTheStarAndMatchesAnAddressOnlyAgainstIPEntries() throws {
        #expect(try accepting(try leaf(["DNS:*.test"]), host: "example.test") == [.android, .jvm])
        // With any DNS or IP entry the CN is never used, even when it names the host.
        let wrongEntry = try OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: OpenSSLIssued.serverExtensions(san: ["DNS:other.example.com"]),
                                                issuer: pki.intermediate, issuerKey: pki.intermediateKey)
        #expect(try accepting(wrongEntry, host: "api.example.com") == [])
        // An IP entry serves the address only: not a DNS host spelling it.
        #expect(try accepting(try leaf(["IP:127.0.0.1"]), host: "127.0.0.1") == TrustPlatform.allCases)
    }
}
