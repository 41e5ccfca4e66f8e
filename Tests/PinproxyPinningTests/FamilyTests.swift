import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

@Suite("OkHttp CertificatePinner")
struct OkHttpTests {
    let pki = PKI.shared

    struct PatternCase: Sendable, CustomStringConvertible {
        let pattern: String
        let host: String
        let matches: Bool
        var description: String { "\(pattern) vs \(host)" }
    }

    static let patterns: [PatternCase] = [
        PatternCase(pattern: "api.example.test", host: "api.example.test", matches: true),
        PatternCase(pattern: "api.example.test", host: "www.api.example.test", matches: false),
        PatternCase(pattern: "*.example.test", host: "api.example.test", matches: true),
        PatternCase(pattern: "*.example.test", host: "example.test", matches: false),
        PatternCase(pattern: "*.example.test", host: "a.b.example.test", matches: false),
        PatternCase(pattern: "*.example.test", host: "apiexample.test", matches: false),
        PatternCase(pattern: "**.example.test", host: "example.test", matches: true),
        PatternCase(pattern: "**.example.test", host: "api.example.test", matches: true),
        PatternCase(pattern: "**.example.test", host: "a.b.c.example.test", matches: true),
        PatternCase(pattern: "**.example.test", host: "badexample.test", matches: false),
        PatternCase(pattern: "**.example.test", host: "example.test.evil", matches: false),
        PatternCase(pattern: "API.Example.test", host: "api.example.test", matches: true),
    ]

    @Test("host patterns", arguments: patterns)
    func pattern(_ c: PatternCase) throws {
        let pin = try OkHttpPolicy.Pin(pattern: c.pattern, pin: pki.leaf.spkiPin.okhttp)
        #expect(pin.matches(c.host) == c.matches)
    }

    @Test("malformed patterns and pins are refused", arguments: [
        ("a.*.example.test", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "unexpected pattern"),
        ("***.example.test", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "unexpected pattern"),
        ("api.example.test", "sha256/" + [UInt8](repeating: 1, count: 31).base64, "31 bytes"),
        ("api.example.test", "sha256/not*base64", "not valid base64"),
        ("api.example.test", "md5/AAAA", "must start with"),
        ("api.example.test", "sha1/" + [UInt8](repeating: 1, count: 32).base64, "SHA-1 pin has 20"),
        ("bad_host.test", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "pattern"),
    ])
    func malformed(pattern: String, pin: String, message: String) {
        #expect {
            _ = try OkHttpPolicy.Pin(pattern: pattern, pin: pin)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func cleanedChainRejectsStuffingPresentedChainAcceptsIt() throws {
        let pins = [try OkHttpPolicy.Pin(pattern: "**.example.test", pin: pki.leaf.spkiPin.okhttp)]
        let stuffed = Scenario.stuffed.trust(pki)
        let cleaned = OkHttpPolicy(pins: pins).evaluate(stuffed)
        #expect(cleaned.decision == .reject)
        #expect(cleaned.missingPins == [pki.leaf.spkiPin.okhttp])
        let presented = OkHttpPolicy(pins: pins, profile: .presentedChain).evaluate(stuffed)
        #expect(presented.decision == .accept)
        #expect(presented.weaknesses == [.cve2016_2402])
        #expect(presented.steps.last?.outcome.contains("matched certificate #2 of the presented chain (CN=api.example.test; not part of the validated chain)") == true)
        // The genuine chain passes either way, without a weakness.
        for profile in OkHttpPolicy.Profile.allCases {
            let verdict = OkHttpPolicy(pins: pins, profile: profile).evaluate(Scenario.genuine.trust(pki))
            #expect(verdict.decision == .accept)
            #expect(verdict.weaknesses.isEmpty)
        }
    }

    @Test func pinsOfAllMatchingPatternsCombine() throws {
        let pins = [
            try OkHttpPolicy.Pin(pattern: "*.example.test", pin: pki.root.spkiPin.okhttp),
            try OkHttpPolicy.Pin(pattern: "api.example.test", pin: "sha256/" + [UInt8](repeating: 7, count: 32).base64),
        ]
        let verdict = OkHttpPolicy(pins: pins).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.matchedPins == [pki.root.spkiPin.okhttp])
        #expect(verdict.steps.contains { $0.outcome.contains("*.example.test, api.example.test with 2 pins combined") })
    }

    @Test func legacySHA1PinsMatch() throws {
        let sha1 = OpenSSL.sha1(pki.intermediate.publicKeyDER)
        let pins = [try OkHttpPolicy.Pin(pattern: "api.example.test", pin: "sha1/" + sha1.base64)]
        #expect(OkHttpPolicy(pins: pins).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(OkHttpPolicy(pins: pins).evaluate(Scenario.forged.trust(pki)).decision == .reject)
    }

    @Test func unpinnedHostsAndInvalidChains() throws {
        let pins = [try OkHttpPolicy.Pin(pattern: "other.example.test", pin: pki.leaf.spkiPin.okhttp)]
        // Not pinned: the proxy CA the user installed is enough.
        #expect(OkHttpPolicy(pins: pins).evaluate(Scenario.forged.trust(pki)).decision == .accept)
        // The handshake fails before pinning when the chain is invalid.
        let wrong = OkHttpPolicy(pins: pins).evaluate(pki.trust([pki.expiredLeaf, pki.intermediate]))
        #expect(wrong.decision == .reject)
        #expect(wrong.steps.first?.outcome.contains("expired") == true)
    }
}

@Suite("TrustKit")
struct TrustKitTests {
    let pki = PKI.shared
    var backup: SPKIPin { try! SPKIPin(sha256: [UInt8](repeating: 9, count: 32)) }

    @Test func twoPinRuleIsAConfigurationError() {
        #expect(throws: PinproxyError(.policy, "")) {
            _ = try TrustKitPolicy(domains: [.init(domain: "example.test", publicKeyHashes: [pki.leaf.spkiPin])])
        }
        #expect(throws: PinproxyError(.policy, "")) {
            _ = try TrustKitPolicy(domains: [.init(domain: "example.test", publicKeyHashes: [pki.leaf.spkiPin, pki.leaf.spkiPin])])
        }
    }

    @Test func enforcedAndReportOnly() throws {
        let enforced = try TrustKitPolicy(domains: [.init(domain: "api.example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup])])
        #expect(enforced.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(enforced.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let reporting = try TrustKitPolicy(domains: [.init(domain: "api.example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                          enforcePinning: false, reportURIs: ["https://report.example.test/"])])
        let verdict = reporting.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .reportOnly)
        #expect(verdict.connectionProceeds)
        #expect(verdict.steps.last?.outcome.contains("report.example.test") == true)
        // An invalid chain is blocked even when pinning is not enforced.
        #expect(reporting.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
    }

    @Test func expirationUnpinsTheDomain() throws {
        let policy = try TrustKitPolicy(domains: [.init(domain: "api.example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                        expirationDate: pki.now.addingTimeInterval(-86_400))])
        let verdict = policy.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.steps.first?.outcome.contains("TSKExpirationDate") == true)
        let future = try TrustKitPolicy(domains: [.init(domain: "api.example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                        expirationDate: pki.now.addingTimeInterval(86_400))])
        #expect(future.evaluate(Scenario.forged.trust(pki)).decision == .reject)
    }

    @Test func subdomainsNeedIncludeSubdomains() throws {
        let without = try TrustKitPolicy(domains: [.init(domain: "example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup])])
        #expect(without.configuration(for: "api.example.test") == nil)
        #expect(without.evaluate(Scenario.forged.trust(pki)).decision == .accept)  // unpinned: default handling
        let with = try TrustKitPolicy(domains: [.init(domain: "example.test", publicKeyHashes: [pki.intermediate.spkiPin, backup], includeSubdomains: true)])
        #expect(with.configuration(for: "api.example.test")?.domain == "example.test")
        #expect(with.configuration(for: "badexample.test") == nil)
        #expect(with.evaluate(Scenario.forged.trust(pki)).decision == .reject)
    }
}

@Suite("curl --pinnedpubkey")
struct CurlTests {
    let pki = PKI.shared

    @Test func pinsTheLeafKeyOnly() {
        let leafPin = CurlPolicy(pinnedPublicKeys: [pki.leaf.spkiPin])
        #expect(leafPin.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(leafPin.evaluate(Scenario.stuffed.trust(pki)).decision == .reject)
        // A pin of the intermediate does not count: curl checks the server's own key.
        let intermediatePin = CurlPolicy(pinnedPublicKeys: [pki.intermediate.spkiPin])
        #expect(intermediatePin.evaluate(Scenario.genuine.trust(pki)).decision == .reject)
    }

    @Test func insecureStillChecksThePin() {
        let selfSigned = pki.trust([pki.selfSigned])
        #expect(CurlPolicy(pinnedPublicKeys: [pki.selfSigned.spkiPin]).evaluate(selfSigned).decision == .reject)
        let insecure = CurlPolicy(pinnedPublicKeys: [pki.selfSigned.spkiPin], insecure: true).evaluate(selfSigned)
        #expect(insecure.decision == .accept)
        #expect(CurlPolicy(pinnedPublicKeys: [pki.leaf.spkiPin], insecure: true).evaluate(selfSigned).decision == .reject)
    }

    @Test func caBundleReplacesTheDefaultAnchors() {
        let policy = CurlPolicy(pinnedPublicKeys: [pki.forgedLeaf.spkiPin], caBundle: [pki.proxyCA.certificate])
        #expect(policy.evaluate(pki.trust([pki.forgedLeaf, pki.proxyCA.certificate])).decision == .accept)
        #expect(CurlPolicy(pinnedPublicKeys: [pki.leaf.spkiPin], caBundle: [pki.proxyCA.certificate]).evaluate(Scenario.genuine.trust(pki)).decision == .reject)
    }

    @Test func pinListParsing() throws {
        let text = "\(pki.leaf.spkiPin.curl);\(pki.root.spkiPin.curl)"
        #expect(try CurlPolicy.parsePins(text) == [pki.leaf.spkiPin, pki.root.spkiPin])
        #expect(throws: PinproxyError.self) { _ = try CurlPolicy.parsePins("sha256//AAAA") }
        #expect(throws: PinproxyError.self) { _ = try CurlPolicy.parsePins("\(pki.leaf.spkiPin.curl);") }
        #expect(throws: PinproxyError.self) { _ = try CurlPolicy.parsePins(pki.leaf.spkiPin.okhttp) }
    }
}

@Suite("Alamofire evaluators")
struct AlamofireTests {
    let pki = PKI.shared
    let host = "api.example.test"

    @Test func pinnedCertificates() {
        let policy = AlamofirePolicy(evaluators: [host: .pinnedCertificates(certificates: [pki.leaf], acceptSelfSignedCertificates: false, performDefaultValidation: true, validateHost: true)])
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        #expect(policy.evaluate(Scenario.stuffed.trust(pki)).decision == .reject)
    }

    @Test func selfSignedNeedsAcceptSelfSignedCertificates() {
        let strict = AlamofirePolicy(evaluators: [host: .pinnedCertificates(certificates: [pki.selfSigned], acceptSelfSignedCertificates: false, performDefaultValidation: true, validateHost: true)])
        #expect(strict.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
        let lenient = AlamofirePolicy(evaluators: [host: .pinnedCertificates(certificates: [pki.selfSigned], acceptSelfSignedCertificates: true, performDefaultValidation: true, validateHost: true)])
        #expect(lenient.evaluate(pki.trust([pki.selfSigned])).decision == .accept)
        // Once the pinned certificates are the only anchors, the genuine public chain fails.
        #expect(lenient.evaluate(Scenario.genuine.trust(pki)).decision == .reject)
    }

    @Test func publicKeysAndDefault() {
        let keys = AlamofirePolicy(evaluators: [host: .publicKeys(keys: [pki.intermediate.spkiPin], performDefaultValidation: true, validateHost: true)])
        #expect(keys.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(keys.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let standard = AlamofirePolicy(evaluators: [host: .defaultEvaluator(validateHost: true)])
        #expect(standard.evaluate(Scenario.forged.trust(pki)).decision == .accept)
        #expect(standard.evaluate(Scenario.wrongHost.trust(pki)).decision == .reject)
        let noHost = AlamofirePolicy(evaluators: [host: .defaultEvaluator(validateHost: false)])
        #expect(noHost.evaluate(Scenario.wrongHost.trust(pki)).decision == .accept)
    }

    @Test func compositeDisabledAndMissingEvaluators() {
        let composite = AlamofirePolicy(evaluators: [host: .composite([.defaultEvaluator(validateHost: true), .publicKeys(keys: [pki.leaf.spkiPin], performDefaultValidation: false, validateHost: false)])])
        #expect(composite.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(composite.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let disabled = AlamofirePolicy(evaluators: [host: .disabled]).evaluate(pki.trust([pki.selfSigned]))
        #expect(disabled.decision == .accept)
        #expect(disabled.weaknesses == [.validationDisabled])
        let missing = AlamofirePolicy(evaluators: ["other.example.test": .disabled])
        #expect(missing.evaluate(Scenario.genuine.trust(pki)).decision == .reject)
        let optional = AlamofirePolicy(evaluators: ["other.example.test": .disabled], allHostsMustBeEvaluated: false)
        #expect(optional.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(optional.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
    }
}

@Suite("custom anchors (NSURLSession)")
struct CustomAnchorsTests {
    let pki = PKI.shared

    @Test func onlyTheGivenAnchors() {
        // The seeds' pattern: a self-signed CA and a public CA as the anchors.
        let policy = CustomAnchorsPolicy(anchorCertificates: [pki.selfSigned, pki.root])
        #expect(policy.evaluate(pki.trust([pki.selfSigned])).decision == .accept)
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        #expect(policy.evaluate(pki.trust([pki.misissuedLeaf])).decision == .reject)
        #expect(policy.evaluate(Scenario.wrongHost.trust(pki)).decision == .reject)
        let noHost = CustomAnchorsPolicy(anchorCertificates: [pki.root], validatesDomainName: false)
        #expect(noHost.evaluate(Scenario.wrongHost.trust(pki)).decision == .accept)
    }

    @Test func addedToTheSystemAnchors() {
        let policy = CustomAnchorsPolicy(anchorCertificates: [pki.selfSigned], anchorCertificatesOnly: false)
        #expect(policy.evaluate(pki.trust([pki.selfSigned])).decision == .accept)
        #expect(policy.evaluate(pki.trust([pki.misissuedLeaf])).decision == .accept)
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .accept)
    }
}
