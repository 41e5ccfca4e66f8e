import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Each platform's algorithm floor, where its library applies one: Apple's SSL policy refuses
/// SHA-1 signatures and RSA keys under 2048 bits, Conscrypt refuses SHA-1 signatures, curl on
/// OpenSSL 3 refuses SHA-1 at security level 1. Anchors' own signatures are never judged.
@Suite("Algorithm floors")
struct AlgorithmFloorTests {
    let pki = PKI.shared

    struct Weak {
        let sha1Leaf: Certificate
        let rsa1024Leaf: Certificate
        let sha1Root: Certificate
        let leafOfSHA1Root: Certificate
        let rsa1024Root: Certificate
        let leafOfRSA1024Root: Certificate
    }

    static let weak: Weak = {
        let pki = PKI.shared
        let extensions = OpenSSLIssued.serverExtensions(san: ["DNS:api.example.com"])
        let (sha1Root, sha1RootKey) = try! OpenSSLIssued.root(commonName: "SHA-1 Root", digest: "sha1")
        let (rsaRoot, rsaRootKey) = try! OpenSSLIssued.root(commonName: "RSA-1024 Root", digest: "sha256", keyAlgorithm: "rsa:1024")
        return Weak(
            sha1Leaf: try! OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: extensions, issuer: pki.intermediate,
                                              issuerKey: pki.intermediateKey, digest: "sha1"),
            rsa1024Leaf: try! OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: extensions, issuer: pki.intermediate,
                                                 issuerKey: pki.intermediateKey, keyAlgorithm: "rsa:1024"),
            sha1Root: sha1Root,
            leafOfSHA1Root: try! OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: extensions, issuer: sha1Root, issuerKey: sha1RootKey),
            rsa1024Root: rsaRoot,
            leafOfRSA1024Root: try! OpenSSLIssued.leaf(subject: "/CN=api.example.com", extensions: extensions, issuer: rsaRoot, issuerKey: rsaRootKey))
    }()

    /// The trust for `chain` at the present moment (the openssl-made leaves start now).
    func trust(_ chain: [Certificate], roots: [Certificate]? = nil) -> ServerTrust {
        ServerTrust(presentedChain: chain, host: pki.host, time: Date().addingTimeInterval(5),
                    store: TrustStore(systemAnchors: roots ?? [pki.root, pki.otherRoot]))
    }

    /// One policy of every family, none of which pins anything that matters here.
    func families(anchor: Certificate) throws -> [(String, any PinningPolicy)] {
        let backup = try SPKIPin(sha256: [UInt8](repeating: 9, count: 32))
        let other = try SPKIPin(sha256: [UInt8](repeating: 8, count: 32))
        return [
            ("afnetworking", AFNetworkingPolicy()),
            ("alamofire", AlamofirePolicy(evaluators: ["api.example.com": .defaultEvaluator(validateHost: true)])),
            ("custom-anchors", CustomAnchorsPolicy(anchorCertificates: [anchor])),
            ("trustkit", try TrustKitPolicy(domains: [.init(domain: "other.example.com", publicKeyHashes: [backup, other])])),
            ("android-nsc", AndroidPolicy(config: try NetworkSecurityConfig.parse(Data("<network-security-config/>".utf8), file: "nsc.xml") { _, _ in ("", []) })),
            ("okhttp", OkHttpPolicy(pins: [])),
            ("curl", CurlPolicy(pinnedPublicKeys: [], insecure: false)),
        ]
    }

    /// The families whose verdict is ACCEPT (curl is judged on its chain step alone: it pins nothing here).
    func accepting(_ chain: [Certificate], anchor: Certificate) throws -> [String] {
        try families(anchor: anchor).compactMap { name, policy in
            let verdict = policy.evaluate(trust(chain, roots: [anchor]))
            if name == "curl" { return verdict.steps.first?.outcome.hasPrefix("passed") == true ? name : nil }
            return verdict.decision == .accept ? name : nil
        }
    }

    @Test func sha1SignedLeaf() throws {
        let chain = [Self.weak.sha1Leaf, pki.intermediate]
        #expect(try accepting(chain, anchor: pki.root) == [])
        let verdict = AFNetworkingPolicy().evaluate(trust(chain))
        #expect(verdict.steps.contains { $0.outcome.contains("weak algorithm") && $0.outcome.contains("SHA-1") }, "\(verdict.steps)")
        let curl = CurlPolicy(pinnedPublicKeys: [Self.weak.sha1Leaf.spkiPin]).evaluate(trust(chain))
        #expect(curl.decision == .reject)
        #expect(curl.steps.contains { $0.outcome.contains("security level \(CurlSecurityLevel.current)") }, "\(curl.steps)")
        // Basic X.509 (AFNetworking without domain validation) has no SHA-1 floor.
        #expect(AFNetworkingPolicy(validatesDomainName: false).evaluate(trust(chain)).decision == .accept)
        #expect(CustomAnchorsPolicy(anchorCertificates: [pki.root], validatesDomainName: false).evaluate(trust(chain)).decision == .accept)
    }

    @Test func rsa1024Leaf() throws {
        let chain = [Self.weak.rsa1024Leaf, pki.intermediate]
        // Apple's SSL policy wants 2048 bits; Conscrypt takes 1024, and so does curl at OpenSSL's
        // level 1 (at level 2, the Debian and Ubuntu default, curl wants 2048 too).
        #expect(try accepting(chain, anchor: pki.root) == ["android-nsc", "okhttp"] + Self.curlAtLevelOne)
        let verdict = AlamofirePolicy(evaluators: ["api.example.com": .defaultEvaluator(validateHost: true)]).evaluate(trust(chain))
        #expect(verdict.steps.contains { $0.outcome.contains("RSA 1024") }, "\(verdict.steps)")
        #expect(AFNetworkingPolicy(validatesDomainName: false).evaluate(trust(chain)).decision == .accept)
        // Under a user-installed anchor too (the intercepting tester's set-up): Apple judges every key
        // unless the leaf itself is the user anchor.
        let underUserAnchor = ServerTrust(presentedChain: chain, host: pki.host, time: Date().addingTimeInterval(5),
                                          store: TrustStore(systemAnchors: [], userAnchors: [pki.root]))
        let apple = AFNetworkingPolicy().evaluate(underUserAnchor)
        #expect(apple.decision == .reject && apple.steps.contains { $0.outcome.contains("RSA 1024") }, "\(apple.steps)")
    }

    @Test func anchorsOwnSignatureIsNotJudged() throws {
        // A self-signed SHA-1 root is fine as an anchor everywhere: nobody verifies an anchor's own signature.
        #expect(try accepting([Self.weak.leafOfSHA1Root], anchor: Self.weak.sha1Root).count == 7)
    }

    @Test func applesKeySizeCountsTheAnchorToo() throws {
        // SecPolicyCheckKeySize covers every certificate of the path; Conscrypt and OpenSSL's level 1 do not refuse it
        // (level 2 judges every key, the anchor's included).
        #expect(try accepting([Self.weak.leafOfRSA1024Root], anchor: Self.weak.rsa1024Root) == ["android-nsc", "okhttp"] + Self.curlAtLevelOne)
    }

    /// "curl" when libssl here verifies at security level 1 or below (RSA 1024 passes), else nothing.
    static var curlAtLevelOne: [String] { CurlSecurityLevel.current <= 1 ? ["curl"] : [] }

    @Test func curlVerifiesAtTheSecurityLevelLibsslDefaultsToHere() {
        // What `openssl s_client` (libssl's defaults, as curl keeps them) says it runs at.
        let level = CurlSecurityLevel.current
        #expect((0...5).contains(level))
        #expect(CurlSecurityLevel.bits == [0, 80, 112, 128, 192, 256][level])
    }
}
