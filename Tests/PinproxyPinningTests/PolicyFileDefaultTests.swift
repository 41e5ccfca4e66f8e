import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// What a policy file means when it leaves a key out (each library's own default), and the
/// spellings it takes for a value.
@Suite("Policy file defaults and spellings")
struct PolicyFileDefaultTests {
    let pki = PKI.shared

    func load(_ json: String, files: [String: String] = [:]) throws -> (any PinningPolicy, TemporaryDirectory) {
        try loadPolicyFile(json, files: files)
    }

    @Test("custom anchors without anchorCertificatesOnly replace the system and user anchors")
    func customAnchorsAreTheOnlyAnchorsByDefault() throws {
        // SecTrustSetAnchorCertificates alone disables the system anchors.
        let (policy, _) = try load(#"{"family":"custom-anchors","anchorCertificates":["app-ca.pem"]}"#,
                                   files: ["policies/app-ca.pem": pki.selfSigned.pemEncoded])
        let anchors = try #require(policy as? CustomAnchorsPolicy)
        #expect(anchors.anchorCertificatesOnly)
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .reject)
        #expect(policy.evaluate(Scenario.selfSigned.trust(pki)).decision == .accept)
    }

    @Test("an android-nsc wrapper without targetSdkVersion targets API 24, which ignores user CAs")
    func androidWrapperDefaultsToAPI24() throws {
        let dir = try TemporaryDirectory()
        try dir.write("res/xml/nsc.xml", "<network-security-config/>")
        let wrapper = try dir.write("android.json", #"{"family":"android-nsc","networkSecurityConfig":"res/xml/nsc.xml"}"#)
        let policy = try PolicyFile.load(contentsOf: wrapper)
        #expect(policy.profile == "API 24")
        #expect(policy.evaluate(Scenario.forged.trust(pki)).decision == .reject)
        #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
    }

    @Test("a TrustKit domain without TSKIncludeSubdomains pins that name only")
    func trustKitDomainsDoNotIncludeSubdomainsByDefault() throws {
        let backup = [UInt8](repeating: 3, count: 32).base64
        let (policy, _) = try load(#"{"family":"trustkit","TSKPinnedDomains":{"example.com":{"TSKPublicKeyHashes":["\#(pki.intermediate.spkiPin.base64)","\#(backup)"]}}}"#)
        let trustKit = try #require(policy as? TrustKitPolicy)
        #expect(trustKit.domains.map(\.includeSubdomains) == [false])
        // api.example.com is not pinned: the proxy CA the user installed passes default handling.
        let verdict = policy.evaluate(Scenario.forged.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.disposition == TrustKitPolicy.performDefaultHandling)
    }

    @Test("SSLPinningMode takes the AFSSLPinningMode constant names", arguments: [
        ("AFSSLPinningModeNone", AFNetworkingPolicy.PinningMode.none),
        ("AFSSLPinningModePublicKey", .publicKey),
        ("AFSSLPinningModeCertificate", .certificate),
    ])
    func afnetworkingModeConstantNames(name: String, mode: AFNetworkingPolicy.PinningMode) throws {
        let (policy, _) = try load(#"{"family":"afnetworking","SSLPinningMode":"\#(name)","pinnedCertificates":["server.pem"]}"#,
                                   files: ["policies/server.pem": pki.leaf.pemEncoded])
        #expect((policy as? AFNetworkingPolicy)?.mode == mode)
    }
}
