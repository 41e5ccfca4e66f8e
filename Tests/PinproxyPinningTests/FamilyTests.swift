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
        PatternCase(pattern: "api.example.com", host: "api.example.com", matches: true),
        PatternCase(pattern: "api.example.com", host: "www.api.example.com", matches: false),
        PatternCase(pattern: "*.example.com", host: "api.example.com", matches: true),
        PatternCase(pattern: "*.example.com", host: "example.com", matches: false),
        PatternCase(pattern: "*.example.com", host: "a.b.example.com", matches: false),
        PatternCase(pattern: "*.example.com", host: "apiexample.com", matches: false),
        PatternCase(pattern: "**.example.com", host: "example.com", matches: true),
        PatternCase(pattern: "**.example.com", host: "api.example.com", matches: true),
        PatternCase(pattern: "**.example.com", host: "a.b.c.example.com", matches: true),
        PatternCase(pattern: "**.example.com", host: "badexample.com", matches: false),
        PatternCase(pattern: "**.example.com", host: "example.com.evil", matches: false),
        PatternCase(pattern: "API.Example.com", host: "api.example.com", matches: true),
        // HttpUrl lets '_' through (canonicalizeHost refuses only controls, space and #%/:?@[\]).
        PatternCase(pattern: "My_API", host: "my_api", matches: true),
        PatternCase(pattern: "*.svc_net.test", host: "web_1.svc_net.test", matches: true),
        PatternCase(pattern: "**.svc_net.test", host: "svc_net.test", matches: true),
        PatternCase(pattern: "my_api", host: "my-api", matches: false),
    ]

    @Test("host patterns", arguments: patterns)
    func pattern(_ c: PatternCase) throws {
        let pin = try OkHttpPolicy.Pin(pattern: c.pattern, pin: pki.leaf.spkiPin.okhttp)
        #expect(pin.matches(c.host) == c.matches)
    }

    @Test("malformed patterns and pins are refused", arguments: [
        ("a.*.example.com", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "unexpected pattern"),
        ("***.example.com", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "unexpected pattern"),
        ("api.example.com", "sha256/not*base64", "not valid base64"),
        ("api.example.com", "md5/AAAA", "must start with"),
        ("api.example.com", "sha256/A", "not valid base64"),
        ("bad host.test", "sha256/" + [UInt8](repeating: 1, count: 32).base64, "pattern"),
    ])
    func malformed(pattern: String, pin: String, message: String) {
        #expect {
            _ = try OkHttpPolicy.Pin(pattern: pattern, pin: pin)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// OkHttp 3.13.1 takes any pin okio can decode, whatever its length, and such a pin never
    /// matches: real OkHttp given curl's `sha256//…` fails with "Certificate pinning failure!".
    @Test("a pin of the wrong length is taken and never matches, naming why", arguments: [
        ("sha256//", 33, "written curl-style"),
        ("sha256/", 31, "31 bytes"),
        ("sha1/", 32, "no SHA-1 hash (20 bytes)"),
    ])
    func aPinOfTheWrongLengthNeverMatches(prefix: String, length: Int, why: String) throws {
        let text = prefix == "sha256//" ? "sha256//" + pki.leaf.spkiPin.base64 : prefix + [UInt8](repeating: 1, count: length).base64
        let pin = try OkHttpPolicy.Pin(pattern: "**.example.com", pin: text)
        #expect(pin.pinText == text, "reported as written")
        #expect(pin.neverMatches?.contains("\(length) bytes") == true && pin.neverMatches?.contains(why) == true, "\(pin.neverMatches ?? "nil")")
        let verdict = OkHttpPolicy(pins: [pin]).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.outcome.contains(why) == true, "\(verdict.steps)")
        // The same key written with one slash matches.
        let good = try OkHttpPolicy.Pin(pattern: "**.example.com", pin: pki.leaf.spkiPin.okhttp)
        #expect(good.neverMatches == nil)
        #expect(OkHttpPolicy(pins: [good]).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
    }

    @Test func cleanedChainRejectsStuffingPresentedChainAcceptsIt() throws {
        let pins = [try OkHttpPolicy.Pin(pattern: "**.example.com", pin: pki.leaf.spkiPin.okhttp)]
        let stuffed = Scenario.stuffed.trust(pki)
        let cleaned = OkHttpPolicy(pins: pins).evaluate(stuffed)
        #expect(cleaned.decision == .reject)
        #expect(cleaned.missingPins == [pki.leaf.spkiPin.okhttp])
        let presented = OkHttpPolicy(pins: pins, profile: .presentedChain).evaluate(stuffed)
        #expect(presented.decision == .accept)
        #expect(presented.weaknesses == [.cve2016_2402])
        #expect(presented.steps.last?.outcome.contains("matched certificate #2 of the presented chain (CN=api.example.com; not part of the validated chain)") == true)
        // The genuine chain passes either way, without a weakness.
        for profile in OkHttpPolicy.Profile.allCases {
            let verdict = OkHttpPolicy(pins: pins, profile: profile).evaluate(Scenario.genuine.trust(pki))
            #expect(verdict.decision == .accept)
            #expect(verdict.weaknesses.isEmpty)
        }
    }

    @Test func pinsOfAllMatchingPatternsCombine() throws {
        let pins = [
            try OkHttpPolicy.Pin(pattern: "*.example.com", pin: pki.root.spkiPin.okhttp),
            try OkHttpPolicy.Pin(pattern: "api.example.com", pin: "sha256/" + [UInt8](repeating: 7, count: 32).base64),
        ]
        let verdict = OkHttpPolicy(pins: pins).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.matchedPins == [pki.root.spkiPin.okhttp])
        #expect(verdict.steps.contains { $0.outcome.contains("*.example.com, api.example.com with 2 pins combined") })
    }

    @Test func legacySHA1PinsMatch() throws {
        let sha1 = OpenSSL.sha1(pki.intermediate.publicKeyDER)
        let pins = [try OkHttpPolicy.Pin(pattern: "api.example.com", pin: "sha1/" + sha1.base64)]
        #expect(OkHttpPolicy(pins: pins).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(OkHttpPolicy(pins: pins).evaluate(Scenario.forged.trust(pki)).decision == .reject)
    }

    @Test func unpinnedHostsAndInvalidChains() throws {
        let pins = [try OkHttpPolicy.Pin(pattern: "other.example.com", pin: pki.leaf.spkiPin.okhttp)]
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
            _ = try TrustKitPolicy(domains: [.init(domain: "example.com", publicKeyHashes: [pki.leaf.spkiPin])])
        }
        #expect(throws: PinproxyError(.policy, "")) {
            _ = try TrustKitPolicy(domains: [.init(domain: "example.com", publicKeyHashes: [pki.leaf.spkiPin, pki.leaf.spkiPin])])
        }
    }

    @Test func enforcedAndReportOnly() throws {
        let enforced = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup])])
        #expect(enforced.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(enforced.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        let reporting = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                          enforcePinning: false, reportURIs: ["https://report.example.com/"])])
        let verdict = reporting.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .reportOnly)
        #expect(verdict.connectionProceeds)
        #expect(verdict.steps.last?.outcome.contains("report.example.com") == true)
        // An invalid chain is blocked even when pinning is not enforced.
        #expect(reporting.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
    }

    /// TrustKit takes the longest of several includeSubdomains parents (since 1.6.2); the verdict names them all.
    @Test func severalParentDomainsAreNamed() throws {
        let policy = try TrustKitPolicy(domains: [
            .init(domain: "example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup], includeSubdomains: true),
            .init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup], includeSubdomains: true),
        ])
        let host = try HostName(validating: "www.api.example.com")
        let verdict = policy.evaluate(pki.trust(Scenario.forged.chain(pki), host: host, proxyCAInstalled: true))
        #expect(verdict.decision == .reject)
        let step = verdict.steps.first?.outcome ?? ""
        #expect(step.contains("2 domains with TSKIncludeSubdomains cover www.api.example.com (api.example.com, example.com): TrustKit takes the longest match"), "\(step)")
        #expect(step.hasPrefix("domain api.example.com with TSKIncludeSubdomains"), "\(step)")
        let single = try TrustKitPolicy(domains: [.init(domain: "example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup], includeSubdomains: true)])
        #expect(single.evaluate(Scenario.forged.trust(pki)).steps.first?.outcome.contains("domains with TSKIncludeSubdomains cover") == false)
    }

    @Test func expirationUnpinsTheDomain() throws {
        let policy = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                        expirationDate: pki.now.addingTimeInterval(-86_400))])
        let verdict = policy.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.steps.first?.outcome.contains("TSKExpirationDate") == true)
        let future = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                        expirationDate: pki.now.addingTimeInterval(86_400))])
        #expect(future.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        // TrustKit unpins a domain only once its TSKExpirationDate is in the past
        // (`[expirationDate compare:[NSDate date]] == NSOrderedAscending`): at that very instant it is still pinned.
        let now = try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup],
                                                     expirationDate: pki.now)])
        let atTheInstant = now.evaluate(Scenario.forged.trust(pki))
        #expect(atTheInstant.decision == .reject, "\(atTheInstant.steps)")
    }

    @Test func subdomainsNeedIncludeSubdomains() throws {
        let without = try TrustKitPolicy(domains: [.init(domain: "example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup])])
        #expect(without.configuration(for: "api.example.com") == nil)
        #expect(without.evaluate(Scenario.forged.trust(pki)).decision == .accept)  // unpinned: default handling
        let with = try TrustKitPolicy(domains: [.init(domain: "example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup], includeSubdomains: true)])
        #expect(with.configuration(for: "api.example.com")?.domain == "example.com")
        #expect(with.configuration(for: "example.co.uk") == nil)
        #expect(with.configuration(for: "api.example.com.evil.com") == nil)
        #expect(with.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        // TrustKit's isSubdomain (≥ 1.5.3) wants a dot before the domain's labels, and (≥ 1.5.1)
        // the same registry text: neither badexample.com nor example.org is under example.com.
        #expect(with.configuration(for: "badexample.com") == nil)
        #expect(with.configuration(for: "example.org") == nil)
        let bad = with.evaluate(pki.trust([pki.otherLeaf, pki.intermediate], host: try HostName(validating: "badexample.com")))
        #expect(bad.steps.first?.outcome.contains("TSKTrustDecisionDomainNotPinned") == true, "\(bad.steps)")
        #expect(bad.disposition == "NSURLSessionAuthChallengePerformDefaultHandling")
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
        #expect(CurlPolicy.readPins(text).pins == [pki.leaf.spkiPin, pki.root.spkiPin])
        #expect(CurlPolicy.readPins(text).neverMatching.isEmpty)
        #expect(CurlPolicy.readPins("sha256//AAAA") == ([], ["AAAA"]))
        #expect(CurlPolicy.readPins("\(pki.leaf.spkiPin.curl);") == ([], [pki.leaf.spkiPin.base64 + ";"]))
        // OkHttp's notation is not curl's: read as a whole, it pins nothing.
        #expect(CurlPolicy.readPins(pki.leaf.spkiPin.okhttp).pins.isEmpty)
    }

    /// Base64 that decodes to the pinned key's hash but is not the text curl writes for it (the
    /// last character's two unused bits set) never matches: curl compares the texts.
    @Test func aPinIsTheExactBase64CurlWrites() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var text = Array(pki.leaf.spkiPin.base64)
        let last = try #require(alphabet.firstIndex(of: text[42]))
        text[42] = alphabet[last | 1]
        let altered = String(text)
        #expect(altered != pki.leaf.spkiPin.base64 && Data(base64Encoded: altered).map(Array.init) == Data(base64Encoded: pki.leaf.spkiPin.base64).map(Array.init),
                "the altered text still decodes to the same digest")
        let read = CurlPolicy.readPins("sha256//" + altered)
        #expect(read.pins.isEmpty && read.neverMatching == [altered], "\(read)")
        let verdict = CurlPolicy(pinnedPublicKeys: read.pins, neverMatchingEntries: read.neverMatching).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .reject, "\(verdict.steps)")
        #expect(verdict.steps.contains { $0.outcome.contains("not the base64 curl writes") }, "\(verdict.steps)")
    }
}

@Suite("Alamofire evaluators")
struct AlamofireTests {
    let pki = PKI.shared
    let host = "api.example.com"

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
        let missing = AlamofirePolicy(evaluators: ["other.example.com": .disabled])
        #expect(missing.evaluate(Scenario.genuine.trust(pki)).decision == .reject)
        let optional = AlamofirePolicy(evaluators: ["other.example.com": .disabled], allHostsMustBeEvaluated: false)
        #expect(optional.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(optional.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
    }
}

extension AlamofireTests {
    /// A public-key evaluator after one that validates the chain is not "validation disabled":
    /// the composite as a whole validated the chain the pin was found in.
    @Test func publicKeysAfterAValidatingEvaluatorIsNotValidationDisabled() {
        let validatingFirst = AlamofirePolicy(evaluators: [host: .composite([
            .defaultEvaluator(validateHost: true),
            .publicKeys(keys: [pki.leaf.spkiPin], performDefaultValidation: false, validateHost: false),
        ])]).evaluate(Scenario.genuine.trust(pki))
        #expect(validatingFirst.decision == .accept)
        #expect(validatingFirst.weaknesses.isEmpty, "\(validatingFirst.steps)")
        #expect(validatingFirst.steps.contains { $0.outcome.contains("the composite validates the chain") }, "\(validatingFirst.steps)")
        // Validation after the pin check counts too: every evaluator of a composite must pass.
        let validatingLast = AlamofirePolicy(evaluators: [host: .composite([
            .pinnedCertificates(certificates: [pki.leaf], acceptSelfSignedCertificates: false, performDefaultValidation: false, validateHost: false),
            .defaultEvaluator(validateHost: true),
        ])]).evaluate(Scenario.genuine.trust(pki))
        #expect(validatingLast.decision == .accept)
        #expect(validatingLast.weaknesses.isEmpty, "\(validatingLast.steps)")
        // Alone, or in a composite where nothing validates, it still is.
        for evaluator: AlamofirePolicy.Evaluator in [
            .publicKeys(keys: [pki.selfSigned.spkiPin], performDefaultValidation: false, validateHost: false),
            .composite([.publicKeys(keys: [pki.selfSigned.spkiPin], performDefaultValidation: false, validateHost: false), .disabled]),
        ] {
            let verdict = AlamofirePolicy(evaluators: [host: evaluator]).evaluate(pki.trust([pki.selfSigned]))
            #expect(verdict.decision == .accept)
            #expect(verdict.weaknesses == [.validationDisabled], "\(verdict.steps)")
        }
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
