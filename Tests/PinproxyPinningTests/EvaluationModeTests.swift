import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Apple's two evaluation modes: the SSL policy demands the TLS-server extended key usage
/// (with or without a host name); basic X.509 checks validity, constraints, path and
/// signatures only.
@Suite("SSL policy and basic X.509")
struct EvaluationModeTests {
    let pki = PKI.shared

    /// A leaf for api.example.com whose extended key usage is clientAuth only.
    func clientAuthLeaf() throws -> Certificate {
        var spec = CertificateSpec.serverLeaf(names: [pki.host], notBefore: pki.now.addingTimeInterval(-3600),
                                              notAfter: pki.now.addingTimeInterval(86_400))
        spec.extendedKeyUsage = [.clientAuth]
        return try Certificate.issue(spec, subjectKey: try PrivateKey.generate(.ecP256),
                                     signer: .authority(pki.intermediate, pki.intermediateKey))
    }

    @Test func basicX509DoesNotDemandServerAuth() throws {
        let trust = pki.trust([try clientAuthLeaf(), pki.intermediate])
        let afNoHost = AFNetworkingPolicy(validatesDomainName: false).evaluate(trust)
        #expect(afNoHost.decision == .accept, "\(afNoHost.steps)")
        #expect(afNoHost.steps.contains { $0.action.contains("basic X.509 policy") && $0.action.contains("no EKU check") })
        let anchorsNoHost = CustomAnchorsPolicy(anchorCertificates: [pki.root], validatesDomainName: false).evaluate(trust)
        #expect(anchorsNoHost.decision == .accept, "\(anchorsNoHost.steps)")
        #expect(anchorsNoHost.steps.first?.action.contains("basic X.509 policy") == true)
        // 2.5.2's mode none evaluates with basic X.509 too.
        #expect(AFNetworkingPolicy(profile: .v2_5_2).evaluate(trust).decision == .accept)
    }

    @Test func sslPolicyDemandsServerAuthWithOrWithoutHost() throws {
        let trust = pki.trust([try clientAuthLeaf(), pki.intermediate])
        let af = AFNetworkingPolicy().evaluate(trust)
        #expect(af.decision == .reject)
        #expect(af.steps.contains { $0.outcome.contains("not valid for TLS server authentication") })
        // Alamofire's default validation is the SSL policy without a host: the EKU still counts.
        let alamofire = AlamofirePolicy(evaluators: ["api.example.com": .defaultEvaluator(validateHost: false)]).evaluate(trust)
        #expect(alamofire.decision == .reject)
        #expect(alamofire.steps.contains { $0.action.contains("SSL policy without a host name") })
        #expect(CustomAnchorsPolicy(anchorCertificates: [pki.root]).evaluate(trust).decision == .reject)
        let backup = try SPKIPin(sha256: [UInt8](repeating: 9, count: 32))
        #expect(try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: [pki.intermediate.spkiPin, backup])])
            .evaluate(trust).decision == .reject)
    }

    @Test func evaluatorModesDirectly() throws {
        let chain = [try clientAuthLeaf(), pki.intermediate]
        let anchors = TrustAnchors.device(pki.store())
        let basic = TrustEvaluator.evaluate(chain, policy: .basicX509(platform: .apple), at: pki.now, anchors: anchors)
        #expect(basic.isValid, "\(basic.reason)")
        let ssl = TrustEvaluator.evaluate(chain, policy: .ssl(host: nil, platform: .apple), at: pki.now, anchors: anchors)
        #expect(ssl.failureKinds == [.wrongPurpose])
        // Basic X.509 still checks the path, the validity and the signatures.
        let expired = TrustEvaluator.evaluate([pki.expiredLeaf, pki.intermediate], policy: .basicX509(platform: .apple), at: pki.now, anchors: anchors)
        #expect(expired.failureKinds == [.expired])
        let selfSigned = TrustEvaluator.evaluate([pki.selfSigned], policy: .basicX509(platform: .apple), at: pki.now, anchors: anchors)
        #expect(selfSigned.failureKinds == [.selfSigned])
    }
}
