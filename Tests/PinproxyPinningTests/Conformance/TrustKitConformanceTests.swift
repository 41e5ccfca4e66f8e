import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// The certificates of TrustKit's `TSKPinningValidatorTests.m`, minted for this run with the
/// facts of its resources: a "trustme" test CA (path length 9; its own EKU list: clientAuth,
/// serverAuth, codeSigning) and its leaf for www.good.com (no CN, a critical subjectAltName, no
/// key usage, no EKU), a self-signed www.good.com without extensions valid 2015-04-17 –
/// 2016-04-16, and GlobalSign's root. Trusts are made with the test CA as the only anchor and
/// the verify date the suite sets: 2016-01-22T13:54:00Z (475163640 seconds after 2001).
final class TrustKitWorld: Sendable {
    static let shared = Result { try TrustKitWorld() }

    let date: Date
    let root: Certificate
    let leaf: Certificate
    let selfSigned: Certificate
    let globalSignRoot: Certificate
    let store: TrustStore

    init() throws {
        date = try utc("2016-01-22T13:54:00Z")
        let from = try utc("2000-01-01T00:00:00Z"), to = try utc("2038-01-01T00:00:00Z")
        let ca = try Minted.issue("/O=trustme v0.5.3/OU=Testing CA #Rb7Awwu_w6FLK5yN",
                                  extensions: ["subjectKeyIdentifier=hash", "basicConstraints=critical,CA:TRUE,pathlen:9",
                                               "keyUsage=critical,keyCertSign,cRLSign",
                                               "extendedKeyUsage=critical,clientAuth,serverAuth,codeSigning"],
                                  from: from, to: to)
        root = ca.certificate
        leaf = try Minted.issue("/O=trustme v0.5.3/OU=Testing cert #5inN_8vvR_o3ekM8",
                                extensions: ["subjectKeyIdentifier=hash", "basicConstraints=critical,CA:FALSE",
                                             "authorityKeyIdentifier=keyid", "subjectAltName=critical,DNS:www.good.com"],
                                from: from, to: to, issuer: ca).certificate
        selfSigned = try Minted.issue("/C=FR/ST=Paris/L=Paris/O=Data Theorem/OU=Data Theorem Self Signed/CN=www.good.com/emailAddress=data3@datatheorem.com",
                                      from: try utc("2015-04-17T15:41:36Z"), to: try utc("2016-04-16T15:41:36Z")).certificate
        globalSignRoot = try Minted.issue("/C=BE/O=GlobalSign nv-sa/OU=Root CA/CN=GlobalSign Root CA",
                                          extensions: caExtensions(selfSigned: true),
                                          from: try utc("1998-09-01T12:00:00Z"), to: try utc("2028-01-28T12:00:00Z")).certificate
        store = TrustStore(systemAnchors: [root])
    }

    /// A pin no certificate here has (the suite's "Fake key", "Bad key" and stale "CA key" pins).
    static let fakeA = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    static let fakeB = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="
    static let stale = "iQMk4onrJJz/nwW1wCUR0Ycsh3omhbM+PqMEwNof/K0="
    static let other = "TQEtdMbmwFgYUifM4LDF+xgEtd0z69mPGmkp014d6ZY="

    var leafPin: String { leaf.spkiPin.base64 }
    var rootPin: String { root.spkiPin.base64 }

    /// Parses a TrustKit configuration as a policy file would give it (`parseTrustKitConfiguration`).
    static func parse(_ pinnedDomains: [String: Any], extra: [String: Any] = [:]) throws -> TrustKitPolicy {
        var configuration: [String: Any] = ["family": "trustkit", "TSKPinnedDomains": pinnedDomains]
        configuration.merge(extra) { $1 }
        let dir = try TemporaryDirectory()
        let file = try dir.write("trustkit.json", String(decoding: try JSONSerialization.data(withJSONObject: configuration), as: UTF8.self))
        guard let policy = try PolicyFile.load(contentsOf: file) as? TrustKitPolicy else {
            throw PinproxyError(.policyFile, "not a TrustKit policy")
        }
        return policy
    }

    /// `evaluateTrust:forHostname:` seen through `handleChallenge:completionHandler:`: the disposition names the decision.
    func decide(_ policy: TrustKitPolicy, _ chain: [Certificate], host: String) throws -> Verdict {
        policy.evaluate(try ServerTrust(presentedChain: chain, hostAsWritten: host, time: date, store: store))
    }
}

/// TSKTrustDecision as `handleChallenge:completionHandler:` answers it.
enum TrustKitDecision: String {
    case shouldAllowConnection = "NSURLSessionAuthChallengeUseCredential"
    case domainNotPinned = "NSURLSessionAuthChallengePerformDefaultHandling"
    case shouldBlockConnection = "NSURLSessionAuthChallengeCancelAuthenticationChallenge"
}

/// TrustKit's `TSKPinningValidatorTests.m` (3.0.7), one test per case, named after it.
/// `testHandleChallengeCompletionHandlerNotServerTrustAuthenticationMethod` (an NTLM challenge)
/// has no counterpart: pinproxy only sees server-trust evaluations.
@Suite("TSKPinningValidatorTests.m conformance")
struct TrustKitValidatorConformanceTests {
    let world: TrustKitWorld

    init() throws { world = try TrustKitWorld.shared.get() }

    private func expect(_ pins: [String], _ chain: [Certificate], host: String = "www.good.com", domain: String = "www.good.com",
                        settings: [String: Any] = [:], _ decision: TrustKitDecision, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var entry: [String: Any] = ["TSKPublicKeyHashes": pins]
        entry.merge(settings) { $1 }
        let policy = try TrustKitWorld.parse([domain: entry])
        let verdict = try world.decide(policy, chain, host: host)
        #expect(verdict.disposition == decision.rawValue, "\(VerdictReport.text(verdict))", sourceLocation: sourceLocation)
    }

    @Test func testVerifyAgainstAnyPublicKey() throws {
        try expect([world.leafPin, world.rootPin], [world.leaf], .shouldAllowConnection)
    }
    @Test func testVerifyAgainstCAPublicKey() throws {
        try expect([world.rootPin, TrustKitWorld.fakeA], [world.leaf], .shouldAllowConnection)
    }
    @Test func testVerifyAgainstLeafPublicKey() throws {
        try expect([world.leafPin, TrustKitWorld.fakeA], [world.leaf], .shouldAllowConnection)
    }
    @Test func testVerifyAgainstBadPublicKey() throws {
        try expect([TrustKitWorld.fakeA, TrustKitWorld.fakeB], [world.leaf], .shouldBlockConnection)
    }
    @Test func testVerifyAgainstBadPublicKeyPinsExpired() throws {
        try expect([TrustKitWorld.fakeA, TrustKitWorld.fakeB], [world.leaf],
                   settings: ["TSKExpirationDate": "2015-01-01", "TSKEnforcePinning": true], .domainNotPinned)
    }
    @Test func testVerifyAgainstBadPublicKeyPinningNotEnforced() throws {
        try expect([TrustKitWorld.fakeA, TrustKitWorld.fakeB], [world.leaf], settings: ["TSKEnforcePinning": false], .shouldAllowConnection)
    }
    @Test func testVerifyAgainstLeafPublicKeyAndBadPublicKey() throws {
        try expect([TrustKitWorld.fakeA, world.leafPin], [world.leaf], .shouldAllowConnection)
    }
    @Test func testVerifyAgainstCaPublicKeyAndBadCertificateChain() throws {
        try expect([TrustKitWorld.stale, TrustKitWorld.fakeA], [world.selfSigned], settings: ["TSKEnforcePinning": false], .shouldBlockConnection)
    }
    @Test func testVerifyAgainstCaPublicKeyAndBadHostname() throws {
        try expect([TrustKitWorld.stale, TrustKitWorld.fakeA], [world.leaf], host: "www.bad.com", domain: "www.bad.com", .shouldBlockConnection)
    }
    @Test func testVerifyAgainstInjectedCaPublicKey() throws {
        try expect([world.globalSignRoot.spkiPin.base64, TrustKitWorld.fakeA], [world.leaf, world.globalSignRoot], .shouldBlockConnection)
    }
    @Test func testDomainNotPinned() throws {
        try expect([TrustKitWorld.stale, TrustKitWorld.fakeA], [world.leaf], host: "www.nonpinned.com", .domainNotPinned)
    }
    @Test func testHandleChallengeCompletionHandlerDomainNotPinned() throws {
        try expect([TrustKitWorld.stale, TrustKitWorld.fakeA], [world.leaf], host: "www.nonpinned.com", .domainNotPinned)
    }
    @Test func testHandleChallengeCompletionHandlerPinningFailed() throws {
        try expect([TrustKitWorld.fakeA, TrustKitWorld.fakeB], [world.leaf], settings: ["TSKEnforcePinning": true], .shouldBlockConnection)
    }
    @Test func testHandleChallengeCompletionHandlerPinningSuccessful() throws {
        try expect([world.leafPin, TrustKitWorld.fakeB], [world.leaf], .shouldAllowConnection)
    }
    @Test func testExcludedSubdomain() throws {
        let policy = try TrustKitWorld.parse([
            "good.com": ["TSKPublicKeyHashes": [TrustKitWorld.stale, TrustKitWorld.fakeB], "TSKIncludeSubdomains": true],
            "unsecured.good.com": ["TSKExcludeSubdomainFromParentPolicy": true],
        ])
        let verdict = try world.decide(policy, [world.leaf], host: "unsecured.good.com")
        #expect(verdict.disposition == TrustKitDecision.domainNotPinned.rawValue, "\(VerdictReport.text(verdict))")
        #expect(verdict.steps.first?.outcome.contains("TSKExcludeSubdomainFromParentPolicy") == true, "\(verdict.steps)")
        // A name below the excluded one falls to the parent again, and its pins fail.
        let below = try world.decide(policy, [world.leaf], host: "www.unsecured.good.com")
        #expect(below.disposition == TrustKitDecision.shouldBlockConnection.rawValue, "\(VerdictReport.text(below))")
    }
}

/// TrustKit's `TSKPinConfigurationTests.m` (3.0.7), one test per case, named after it: what
/// `parseTrustKitConfiguration` refuses and which key `getPinningConfigurationKeyForDomain` returns.
/// `testSwizzleNetworkDelegatesInLocalInstance` (a TrustKit instance refusing swizzling) has
/// no counterpart: pinproxy has no instances.
@Suite("TSKPinConfigurationTests.m conformance")
struct TrustKitConfigurationConformanceTests {
    typealias W = TrustKitWorld
    let twoPins = [W.other, W.fakeA]

    private func refused(_ domains: [String: Any], extra: [String: Any] = [:], _ fragment: String,
                         sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) { _ = try W.parse(domains, extra: extra) } throws: { error in
            "\(error)".contains(fragment)
        }
    }

    private func key(_ domains: [String: Any], for host: String) throws -> String? {
        try W.parse(domains).configuration(for: host).map(\.domain)
    }

    @Test func testPinOnePublicKey() {
        refused(["www.good.com": ["TSKPublicKeyHashes": [W.other, W.other]]], "has 1 distinct pin")
    }
    @Test func testDisablePinningForSubdomainAndNoPublicKey() throws {
        let domains: [String: Any] = ["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true],
                                      "unsecured.good.com": ["TSKExcludeSubdomainFromParentPolicy": true]]
        #expect(try key(domains, for: "unsecured.good.com") == "unsecured.good.com")
    }
    @Test func testExplicitNotDisablePinningForSubdomainAdditionalDomainKeys() throws {
        let domains: [String: Any] = ["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true],
                                      "unsecured.good.com": ["TSKExcludeSubdomainFromParentPolicy": false, "TSKPublicKeyHashes": twoPins]]
        #expect(try key(domains, for: "unsecured.good.com") == "unsecured.good.com")
        #expect(try W.parse(domains).configuration(for: "unsecured.good.com")?.excludeSubdomainFromParentPolicy == false)
    }
    @Test func testDisablePinningForSubdomainWithoutParentAndNoPublicKey() {
        refused(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": false],
                 "unsecured.good.com": ["TSKExcludeSubdomainFromParentPolicy": true]], "could not find a policy for a parent domain")
    }
    @Test func testDisablePinningForSubdomainAdditionalDomainKeys() {
        refused(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true],
                 "unsecured.good.com": ["TSKExcludeSubdomainFromParentPolicy": true, "TSKPublicKeyHashes": twoPins]],
                "detected additional configuration keys")
    }
    /// The suite's name speaks of a missing TSKSwizzleNetworkDelegates, but what TrustKit
    /// refuses here is the single distinct pin (the same hash twice); the missing key is allowed.
    @Test func testNokTSKSwizzleNetworkDelegates() throws {
        refused(["www.good.com": ["TSKPublicKeyHashes": [W.other, W.other]]], "has 1 distinct pin")
        _ = try W.parse(["www.good.com": ["TSKPublicKeyHashes": twoPins]])
    }
    @Test func testGetConfigurationPinningEnabled() throws {
        let policy = try W.parse(["www.good.com": ["TSKPublicKeyHashes": twoPins]])
        let entry = try #require(policy.configuration(for: "www.good.com"))
        #expect(entry.domain == "www.good.com")
        #expect(entry.expirationDate == nil)
        #expect(entry.publicKeyHashes.count == 2)
    }
    @Test func testGetConfigurationPinningEnabledWithExpirationDate() throws {
        let policy = try W.parse(["www.good.com": ["TSKPublicKeyHashes": twoPins, "TSKExpirationDate": "2015-01-01"]])
        let entry = try #require(policy.configuration(for: "www.good.com"))
        #expect(entry.expirationDate == (try utc("2015-01-01T00:00:00Z")))
        #expect(entry.publicKeyHashes.count == 2)
    }
    @Test func testGetConfigurationPinningDisabled() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins]], for: "www.datatheorem.com") == nil)
    }
    @Test func testIncludeSubdomainsEnabled() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], for: "www.good.com") == "good.com")
    }
    @Test func testIncludeSubdomainsEnabledSameDomain() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], for: "good.com") == "good.com")
    }
    @Test func testIncludeSubdomainsEnabledSubSubDomain() throws {
        #expect(try key(["www.good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]],
                        for: "sub.www.good.com.www.good.com") == "www.good.com")
    }
    @Test func testIncludeSubdomainsEnabledNotSubdomain() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], for: "good.com.otherdomaingood.com") == nil)
    }
    @Test func testIncludeSubdomainsEnabledNotSubdomainDifferentTld() throws {
        #expect(try key(["good.net": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], for: "test.good.com") == nil)
    }
    @Test func testIncludeSubdomainsEnabledForSuffix() {
        refused(["com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], extra: ["TSKSwizzleNetworkDelegates": false], "initialized with includeSubdomains for a domain suffix")
    }
    @Test func testIncludeSubdomainsDisabled() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": false]], for: "www.good.com") == nil)
    }
    @Test func testIncludeSubdomainsEnabledAndSpecificConfiguration() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true],
                         "www.good.com": ["TSKPublicKeyHashes": [W.stale, W.fakeA]]], for: "www.good.com") == "www.good.com")
    }
    @Test func testIncludeSubdomainsEnabledAndOverlap() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true],
                         "www.good.com": ["TSKPublicKeyHashes": [W.stale, W.fakeA], "TSKIncludeSubdomains": true]],
                        for: "foo.www.good.com") == "www.good.com")
    }
    @Test func testNoPinnedDomains() throws {
        let dir = try TemporaryDirectory()
        let missing = try dir.write("missing.json", #"{"family": "trustkit", "TSKSwizzleNetworkDelegates": true}"#)
        #expect { _ = try PolicyFile.load(contentsOf: missing) } throws: { "\($0)".contains("TSKPinnedDomains") }
        // An empty dictionary is refused the same way ("initialized with no pinned domains").
        refused([:], "TrustKit was initialized with no pinned domains")
    }
    @Test func testGlobalSettings() throws {
        _ = try W.parse(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]])
        _ = try W.parse(["good.com": ["TSKPublicKeyHashes": twoPins]], extra: ["TSKSwizzleNetworkDelegates": false])
    }
    @Test func testDomainTldAndParentFromServerConfigDoesNotCrash() throws {
        #expect(try key(["good.com": ["TSKPublicKeyHashes": twoPins, "TSKIncludeSubdomains": true]], for: "com") == nil)
    }
}
