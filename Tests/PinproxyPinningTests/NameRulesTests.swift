import Foundation
@testable import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Host names per family: Apple, Android and OkHttp match subjectAltNames only; curl falls
/// back to the subject CN when a certificate has no DNS or IP SAN at all. Wildcards are whole
/// leftmost labels, and never escape a CA's name constraints.
@Suite("Host names and name constraints")
struct NameRulesTests {
    let pki = PKI.shared
    var window: (Date, Date) { (pki.now.addingTimeInterval(-3600), pki.now.addingTimeInterval(86_400)) }

    /// A leaf from the PKI intermediate with exactly these SANs and this subject CN.
    func leaf(names: [HostName], commonName: String?) throws -> (Certificate, PrivateKey) {
        let key = try PrivateKey.generate(.ecP256)
        var spec = CertificateSpec.serverLeaf(names: names, notBefore: window.0, notAfter: window.1)
        spec.subject = DistinguishedName(commonName: commonName)
        return (try Certificate.issue(spec, subjectKey: key, signer: .authority(pki.intermediate, pki.intermediateKey)), key)
    }

    /// One policy per family that pins `leaf` (or its key) where the family pins, accepting nothing else.
    func families(pinning leaf: Certificate) throws -> [(PolicyFamily, any PinningPolicy)] {
        let backup = try SPKIPin(sha256: [UInt8](repeating: 9, count: 32))
        let androidXML = """
            <network-security-config><domain-config><domain includeSubdomains="true">example.com</domain>
            <pin-set><pin digest="SHA-256">\(leaf.spkiPin.base64)</pin></pin-set></domain-config></network-security-config>
            """
        return [
            (.afnetworking, AFNetworkingPolicy(mode: .publicKey, pinnedCertificates: [leaf])),
            (.customAnchors, CustomAnchorsPolicy(anchorCertificates: [pki.root])),
            (.alamofire, AlamofirePolicy(evaluators: ["api.example.com": .publicKeys(keys: [leaf.spkiPin], performDefaultValidation: true, validateHost: true)])),
            (.okhttp, OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: "**.example.com", pin: leaf.spkiPin.okhttp)])),
            (.trustkit, try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [leaf.spkiPin, backup])])),
            (.androidNSC, AndroidPolicy(config: try NetworkSecurityConfig.parse(Data(androidXML.utf8), file: "nsc.xml") { _, _ in ("", []) })),
            (.curl, CurlPolicy(pinnedPublicKeys: [leaf.spkiPin])),
        ]
    }

    func accepting(_ chain: [Certificate], host: String = "api.example.com") throws -> [PolicyFamily] {
        let trust = pki.trust(chain, host: try HostName(validating: host))
        return try families(pinning: chain[0]).filter { $0.1.evaluate(trust).decision == .accept }.map(\.0)
    }

    @Test func aLeafWithoutAnySANIsMatchedOnItsCNByCurlOnly() throws {
        let (noSAN, _) = try leaf(names: [], commonName: "api.example.com")
        #expect(noSAN.subjectAlternativeNames.isEmpty)
        #expect(try accepting([noSAN, pki.intermediate]) == [.curl])
        let curl = CurlPolicy(pinnedPublicKeys: [noSAN.spkiPin]).evaluate(pki.trust([noSAN, pki.intermediate]))
        #expect(curl.steps.first?.outcome.contains("passed") == true, "\(curl.steps)")
        let apple = AFNetworkingPolicy().evaluate(pki.trust([noSAN, pki.intermediate]))
        #expect(apple.steps.contains { $0.outcome.contains("host mismatch") && $0.outcome.contains("the CN is never used") }, "\(apple.steps)")
        // curl uses the CN, and only the CN: another name fails.
        let other = CurlPolicy(pinnedPublicKeys: [noSAN.spkiPin]).evaluate(pki.trust([noSAN, pki.intermediate], host: pki.otherHost))
        #expect(other.decision == .reject)
        #expect(other.steps.first?.outcome.contains("no DNS or IP subjectAltName, so curl compared the subject CN 'api.example.com'") == true, "\(other.steps)")
    }

    @Test func curlIgnoresTheCNWhenAnIPSANExists() throws {
        let (ipOnly, _) = try leaf(names: [try HostName(validating: "127.0.0.1")], commonName: "api.example.com")
        #expect(try accepting([ipOnly, pki.intermediate]) == [])
    }

    @Test func curlMatchesAWildcardCNAsItsHostcheckDoes() throws {
        let (wildcardCN, _) = try leaf(names: [], commonName: "*.example.com")
        #expect(try accepting([wildcardCN, pki.intermediate]) == [.curl])
        #expect(try accepting([wildcardCN, pki.intermediate], host: "a.api.example.com") == [])
    }

    @Test func partialLabelWildcardsNeverMatch() throws {
        let partial = try OpenSSLIssued.leaf(subject: "/CN=f*.example.com",
                                             extensions: OpenSSLIssued.serverExtensions(san: ["DNS:f*.example.com"]),
                                             issuer: pki.intermediate, issuerKey: pki.intermediateKey)
        let trust = ServerTrust(presentedChain: [partial, pki.intermediate], host: try HostName(validating: "foo.example.com"),
                                time: Date().addingTimeInterval(5), store: pki.store())
        for (family, policy) in try families(pinning: partial) {
            #expect(policy.evaluate(trust).decision == .reject, "\(family)")
        }
        // Nor as a CN that curl falls back to.
        let cnOnly = try OpenSSLIssued.leaf(subject: "/CN=f*.example.com", extensions: OpenSSLIssued.serverExtensions(san: []),
                                            issuer: pki.intermediate, issuerKey: pki.intermediateKey)
        let curl = CurlPolicy(pinnedPublicKeys: [cnOnly.spkiPin]).evaluate(
            ServerTrust(presentedChain: [cnOnly, pki.intermediate], host: try HostName(validating: "foo.example.com"),
                        time: Date().addingTimeInterval(5), store: pki.store()))
        #expect(curl.decision == .reject)
    }

    /// An intermediate under the PKI root with these constraints, and a leaf it issued for `names`.
    func constrained(_ constraints: NameConstraints, leafNames: [String]) throws -> [Certificate] {
        let caKey = try PrivateKey.generate(.ecP256)
        let ca = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Constrained Issuing CA"), notBefore: window.0, notAfter: window.1,
                                  nameConstraints: constraints),
            subjectKey: caKey, signer: .authority(pki.root, pki.rootKey))
        let leaf = try Certificate.issue(.serverLeaf(names: try leafNames.map(HostName.init(validating:)), notBefore: window.0, notAfter: window.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(ca, caKey))
        return [leaf, ca]
    }

    @Test func aWildcardDoesNotEscapeAnExcludedSubtree() throws {
        let excluded = NameConstraints(permittedDNS: [], permittedIP: [], excludedDNS: ["bar.example.com"], excludedIP: [])
        let wildcard = try constrained(excluded, leafNames: ["*.example.com"])
        // curl alone lets it pass: OpenSSL 3.0 compares the wildcard with the subtree as a literal string.
        #expect(try accepting(wildcard, host: "bar.example.com") == [.curl])
        let verdict = AFNetworkingPolicy().evaluate(pki.trust(wildcard, host: try HostName(validating: "bar.example.com")))
        #expect(verdict.steps.contains { $0.outcome.contains("name constraints violated") && $0.outcome.contains("*.example.com") }, "\(verdict.steps)")
        // The certificate itself is mis-issued, whichever name it is used for (as Go decides).
        #expect(try accepting(wildcard, host: "foo.example.com") == [.curl])
        // A name outside the excluded subtree, issued by the same CA, is fine.
        let plain = try constrained(excluded, leafNames: ["api.example.com"])
        #expect(try accepting(plain) == PolicyFamily.allCases)
        // A leading-dot exclusion covers every name below it, and so every name a wildcard there matches.
        let below = NameConstraints(permittedDNS: [], permittedIP: [], excludedDNS: [".example.com"], excludedIP: [])
        #expect(try accepting(try constrained(below, leafNames: ["*.example.com"]), host: "foo.example.com") == [])
    }

    @Test func aWildcardMustFitInsideAPermittedSubtree() throws {
        let permitted = try NameConstraints(permittedDNS: ["foo.example.com"])
        #expect(try accepting(try constrained(permitted, leafNames: ["*.example.com"]), host: "foo.example.com") == [])
        #expect(try accepting(try constrained(permitted, leafNames: ["*.foo.example.com"]), host: "api.foo.example.com") == PolicyFamily.allCases
            .filter { $0 != .alamofire })  // its evaluators are keyed by api.example.com
    }
}
