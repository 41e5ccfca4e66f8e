import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// The certificates of AFNetworking's `AFSecurityPolicyTests.m`, minted for this run with the
/// facts of its resources: httpbin.org's chain (leaf, Amazon "Server CA 1B", Amazon Root CA 1
/// cross-signed by Starfield Services Root G2, that root cross-signed by Starfield Class 2),
/// app.net's chain (expired in 2015, DigiCert), and three self-signed certificates — "Alt Name"
/// with a subjectAltName for foobar.com, "foobar.com" with only a CN, "No Domains" with neither
/// (the last two without extensions). The device trusts the public roots. The suite's date is
/// inside the httpbin.org leaf's validity (2020-01-18 – 2021-02-18).
final class AFSecurityPolicyWorld: Sendable {
    static let shared = Result { try AFSecurityPolicyWorld() }

    let date: Date
    let httpbinLeaf: Certificate
    /// "Amazon.cer": the intermediate.
    let amazon: Certificate
    /// "Amazon Root CA 1.cer": cross-signed by Starfield Services Root G2.
    let amazonRootCross: Certificate
    /// "Starfield Services Root Certificate Authority - G2.cer": cross-signed by Starfield Class 2.
    let starfieldG2Cross: Certificate
    /// The httpbin.org server trust as the suite builds it, leaf first.
    let httpbinTrust: [Certificate]
    let adnTrust: [Certificate]
    let altName: Certificate
    let foobar: Certificate
    let noDomains: Certificate
    let store: TrustStore

    init() throws {
        date = try utc("2020-06-01T00:00:00Z")
        let y2004 = try utc("2004-06-29T17:39:16Z"), y2034 = try utc("2034-06-29T17:39:16Z")
        let class2 = try Minted.issue("/C=US/O=Starfield Technologies, Inc./OU=Starfield Class 2 Certification Authority",
                                      extensions: caExtensions(selfSigned: true), from: y2004, to: y2034)
        let g2Subject = "/C=US/ST=Arizona/L=Scottsdale/O=Starfield Technologies, Inc./CN=Starfield Services Root Certificate Authority - G2"
        let g2 = try Minted.issue(g2Subject, extensions: caExtensions(selfSigned: true), from: try utc("2009-09-01T00:00:00Z"), to: try utc("2037-12-31T23:59:59Z"))
        starfieldG2Cross = try g2.crossSigned(g2Subject, extensions: caExtensions(), by: class2, from: try utc("2009-09-02T00:00:00Z"), to: y2034)
        let rootSubject = "/C=US/O=Amazon/CN=Amazon Root CA 1"
        let amazonRoot = try Minted.issue(rootSubject, extensions: caExtensions(selfSigned: true), from: try utc("2015-05-26T00:00:00Z"), to: try utc("2038-01-17T00:00:00Z"))
        amazonRootCross = try amazonRoot.crossSigned(rootSubject, extensions: caExtensions(), by: g2, from: try utc("2015-05-25T12:00:00Z"), to: try utc("2037-12-31T01:00:00Z"))
        let amazonCA = try Minted.issue("/C=US/O=Amazon/OU=Server CA 1B/CN=Amazon", extensions: caExtensions(pathLength: 0),
                                        from: try utc("2015-10-22T00:00:00Z"), to: try utc("2025-10-19T00:00:00Z"), issuer: amazonRoot)
        amazon = amazonCA.certificate
        httpbinLeaf = try Minted.issue("/CN=httpbin.org", extensions: leafExtensions(["httpbin.org", "*.httpbin.org"]),
                                       from: try utc("2020-01-18T00:00:00Z"), to: try utc("2021-02-18T12:00:00Z"), issuer: amazonCA).certificate
        httpbinTrust = [httpbinLeaf, amazon, amazonRootCross, starfieldG2Cross]

        let evRoot = try Minted.issue("/C=US/O=DigiCert Inc/OU=www.digicert.com/CN=DigiCert High Assurance EV Root CA",
                                      extensions: caExtensions(selfSigned: true), from: try utc("2006-11-10T00:00:00Z"), to: try utc("2031-11-10T00:00:00Z"))
        let ca3 = try Minted.issue("/C=US/O=DigiCert Inc/OU=www.digicert.com/CN=DigiCert High Assurance CA-3", extensions: caExtensions(pathLength: 0),
                                   from: try utc("2008-04-02T12:00:00Z"), to: try utc("2022-04-03T00:00:00Z"), issuer: evRoot)
        let adn = try Minted.issue("/C=US/ST=California/L=San Francisco/O=Mixed Media Labs, Inc./CN=*.app.net",
                                   extensions: leafExtensions(["*.app.net", "app.net"]),
                                   from: try utc("2014-04-14T00:00:00Z"), to: try utc("2015-08-13T12:00:00Z"), issuer: ca3)
        adnTrust = [adn.certificate, ca3.certificate, evRoot.certificate]

        let selfSignedFrom = try utc("2014-03-13T09:45:49Z"), selfSignedTo = try utc("2024-03-10T09:45:49Z")
        altName = try Minted.issue("/CN=Alt Name/C=GB", extensions: ["keyUsage=critical,digitalSignature", "extendedKeyUsage=critical,serverAuth",
                                                                     "subjectAltName=DNS:foobar.com"],
                                   from: selfSignedFrom, to: selfSignedTo).certificate
        foobar = try Minted.issue("/CN=foobar.com/C=GB", from: selfSignedFrom, to: selfSignedTo).certificate
        noDomains = try Minted.issue("/CN=No Domains/C=GB", from: selfSignedFrom, to: selfSignedTo).certificate
        store = TrustStore(systemAnchors: [class2.certificate, g2.certificate, amazonRoot.certificate, evRoot.certificate])
    }

    /// `evaluateServerTrust:forDomain:` at the suite's date; a nil domain is `forDomain:nil`.
    func evaluate(_ policy: AFNetworkingPolicy, _ trust: [Certificate], forDomain domain: String?) throws -> Verdict {
        guard let domain else { return policy.evaluateWithoutDomain(trust, at: date, store: store) }
        return policy.evaluate(try ServerTrust(presentedChain: trust, hostAsWritten: domain, time: date, store: store))
    }
}

/// AFNetworking's `AFSecurityPolicyTests.m` (4.0.1), one test per case of the suite, named after it.
///
/// `policyWithPinningMode:` fills `pinnedCertificates` from the bundle; every case that depends
/// on the pins sets them, so the ports start from an empty list. The cases about the bundle
/// (`…HasPinnedCertificates`, `…HasHTTPBinOrgPinnedCertificate`) and NSCopying/NSCoding have no
/// verdict and no counterpart here.
@Suite("AFSecurityPolicyTests.m conformance")
struct AFSecurityPolicyConformanceTests {
    let world: AFSecurityPolicyWorld

    init() throws { world = try AFSecurityPolicyWorld.shared.get() }

    private func expect(_ policy: AFNetworkingPolicy, _ trust: [Certificate], forDomain domain: String?, _ decision: Verdict.Decision,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let verdict = try world.evaluate(policy, trust, forDomain: domain)
        #expect(verdict.decision == decision, "\(VerdictReport.text(verdict))", sourceLocation: sourceLocation)
    }

    private func policy(_ mode: AFNetworkingPolicy.PinningMode, pinned: [Certificate] = [], allowInvalid: Bool = false,
                        validatesDomainName: Bool = true) -> AFNetworkingPolicy {
        AFNetworkingPolicy(mode: mode, allowInvalidCertificates: allowInvalid, validatesDomainName: validatesDomainName, pinnedCertificates: pinned)
    }

    // MARK: Default policy

    @Test func testDefaultPolicyPinningModeIsSetToNone() { #expect(AFNetworkingPolicy().mode == .none) }
    @Test func testDefaultPolicyHasInvalidCertificatesAreDisabledByDefault() { #expect(!AFNetworkingPolicy().allowInvalidCertificates) }
    @Test func testDefaultPolicyHasDomainNamesAreValidatedByDefault() { #expect(AFNetworkingPolicy().validatesDomainName) }
    @Test func testDefaultPolicyHasNoPinnedCertificates() { #expect(AFNetworkingPolicy().pinnedCertificates.isEmpty) }

    @Test func testDefaultPolicyDoesAllowHTTPBinOrgCertificate() throws {
        try expect(AFNetworkingPolicy(), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testDefaultPolicyDoesAllowHTTPBinOrgCertificateForValidDomainName() throws {
        try expect(AFNetworkingPolicy(), world.httpbinTrust, forDomain: "httpbin.org", .accept)
    }
    @Test func testDefaultPolicyDoesNotAllowInvalidCertificate() throws {
        try expect(AFNetworkingPolicy(), [world.noDomains], forDomain: nil, .reject)
    }
    @Test func testDefaultPolicyDoesNotAllowCertificateWithInvalidDomainName() throws {
        try expect(AFNetworkingPolicy(), world.httpbinTrust, forDomain: "apple.com", .reject)
    }

    // MARK: Public key pinning

    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinned() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgIntermediateCertificatePinned() throws {
        try expect(policy(.publicKey, pinned: [world.amazon]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgRootCertificatePinned() throws {
        try expect(policy(.publicKey, pinned: [world.amazonRootCross]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithEntireCertificateChainPinned() throws {
        let pinned = [world.httpbinLeaf, world.amazon, world.amazonRootCross, world.starfieldG2Cross]
        try expect(policy(.publicKey, pinned: pinned), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBirnOrgServerTrustWithHTTPbinOrgPinnedCertificateAndAdditionalPinnedCertificates() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf, world.foobar]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndValidDomainName() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: "httpbin.org", .accept)
    }
    @Test func testPolicyWithPublicKeyPinningAndNoPinnedCertificatesDoesNotAllowHTTPBinOrgServerTrust() throws {
        try expect(policy(.publicKey), world.httpbinTrust, forDomain: nil, .reject)
    }
    @Test func testPolicyWithPublicKeyPinningDoesNotAllowADNServerTrustWithHTTPBinOrgPinnedCertificate() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf]), world.adnTrust, forDomain: nil, .reject)
    }
    @Test func testPolicyWithPublicKeyPinningDoesNotAllowHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndInvalidDomainName() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: "invaliddomainname.com", .reject)
    }
    @Test func testPolicyWithPublicKeyPinningDoesNotAllowADNServerTrustWithMultipleInvalidPinnedCertificates() throws {
        try expect(policy(.publicKey, pinned: [world.httpbinLeaf, world.foobar]), world.adnTrust, forDomain: nil, .reject)
    }

    // MARK: Certificate pinning

    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinned() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgIntermediateCertificatePinned() throws {
        try expect(policy(.certificate, pinned: [world.amazon]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgRootCertificatePinned() throws {
        try expect(policy(.certificate, pinned: [world.amazonRootCross]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithEntireCertificateChainPinned() throws {
        let pinned = [world.httpbinLeaf, world.amazon, world.amazonRootCross, world.starfieldG2Cross]
        try expect(policy(.certificate, pinned: pinned), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithCertificatePinningAllowsHTTPBirnOrgServerTrustWithHTTPbinOrgPinnedCertificateAndAdditionalPinnedCertificates() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf, world.foobar]), world.httpbinTrust, forDomain: nil, .accept)
    }
    @Test func testPolicyWithCertificatePinningAllowsHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndValidDomainName() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: "httpbin.org", .accept)
    }
    @Test func testPolicyWithCertificatePinningAndNoPinnedCertificatesDoesNotAllowHTTPBinOrgServerTrust() throws {
        try expect(policy(.certificate), world.httpbinTrust, forDomain: nil, .reject)
    }
    @Test func testPolicyWithCertificatePinningDoesNotAllowADNServerTrustWithHTTPBinOrgPinnedCertificate() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf]), world.adnTrust, forDomain: nil, .reject)
    }
    @Test func testPolicyWithCertificatePinningDoesNotAllowHTTPBinOrgServerTrustWithHTTPBinOrgLeafCertificatePinnedAndInvalidDomainName() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf]), world.httpbinTrust, forDomain: "invaliddomainname.com", .reject)
    }
    @Test func testPolicyWithCertificatePinningDoesNotAllowADNServerTrustWithMultipleInvalidPinnedCertificates() throws {
        try expect(policy(.certificate, pinned: [world.httpbinLeaf, world.foobar]), world.adnTrust, forDomain: nil, .reject)
    }

    // MARK: Domain name validation

    @Test func testThatPolicyWithoutDomainNameValidationAllowsServerTrustWithInvalidDomainName() throws {
        try expect(policy(.none, validatesDomainName: false), world.httpbinTrust, forDomain: "invalid.org", .accept)
    }
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedCommonNameCertificateAllowsServerTrust() throws {
        try expect(policy(.publicKey, pinned: [world.foobar], allowInvalid: true), [world.foobar], forDomain: "foobar.com", .accept)
    }
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedDNSCertificateAllowsServerTrust() throws {
        try expect(policy(.publicKey, pinned: [world.altName], allowInvalid: true), [world.altName], forDomain: "foobar.com", .accept)
    }
    @Test func testThatPolicyWithDomainNameValidationDoesNotAllowServerTrustWithInvalidDomainName() throws {
        try expect(AFNetworkingPolicy(), world.httpbinTrust, forDomain: "invalid.org", .reject)
    }
    @Test func testThatPolicyWithDomainNameValidationAndSelfSignedNoDomainCertificateDoesNotAllowServerTrust() throws {
        try expect(policy(.certificate, pinned: [world.noDomains], allowInvalid: true), [world.noDomains], forDomain: "foobar.com", .reject)
    }

    // MARK: Self-signed certificates

    @Test func testThatPolicyWithInvalidCertificatesAllowedAllowsSelfSignedServerTrust() throws {
        let verdict = try world.evaluate(policy(.none, allowInvalid: true), [world.altName], forDomain: nil)
        #expect(verdict.decision == .accept, "\(VerdictReport.text(verdict))")
        #expect(verdict.host == Verdict.noDomainHost)
        #expect(verdict.steps.first?.outcome.hasPrefix("skipped: no domain was given") == true, "\(verdict.steps)")
        // The same policy for a named domain meets the guard.
        try expect(policy(.none, allowInvalid: true), [world.altName], forDomain: "foobar.com", .reject)
    }
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndValidPinnedCertificatesDoesAllowSelfSignedServerTrustForValidDomainName() throws {
        try expect(policy(.publicKey, pinned: [world.altName], allowInvalid: true), [world.altName], forDomain: "foobar.com", .accept)
    }
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoSSLPinningAndDomainNameValidationDisabledDoesAllowSelfSignedServerTrustForValidDomainName() throws {
        try expect(policy(.none, allowInvalid: true, validatesDomainName: false), [world.altName], forDomain: "foobar.com", .accept)
    }
    @Test func testThatPolicyWithInvalidCertificatesDisabledDoesNotAllowSelfSignedServerTrust() throws {
        try expect(AFNetworkingPolicy(), [world.altName], forDomain: nil, .reject)
    }
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoPinnedCertificatesAndPublicKeyPinningModeDoesNotAllowSelfSignedServerTrustForValidDomainName() throws {
        try expect(policy(.publicKey, allowInvalid: true), [world.altName], forDomain: "foobar.com", .reject)
    }
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndValidPinnedCertificatesAndNoPinningModeDoesNotAllowSelfSignedServerTrustForValidDomainName() throws {
        try expect(policy(.none, pinned: [world.altName], allowInvalid: true), [world.altName], forDomain: "foobar.com", .reject)
    }
    @Test func testThatPolicyWithInvalidCertificatesAllowedAndNoValidPinnedCertificatesAndNoPinningModeAndDomainValidationDoesNotAllowSelfSignedServerTrustForValidDomainName() throws {
        try expect(policy(.none, allowInvalid: true), [world.altName], forDomain: "foobar.com", .reject)
    }
}
