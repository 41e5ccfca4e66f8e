import Foundation
@testable import PinproxyCertificates
@testable import PinproxyPinning
import Testing

extension NameRulesTests {
    /// A constrained root that issues the wildcard leaf itself (a two-certificate
    /// chain, as an enterprise root installed on a device can be): its exclusions
    /// bind the wildcard as an intermediate's do.
    @Test func aConstrainedAnchorThatIssuesTheWildcardItselfIsChecked() throws {
        let rootKey = try PrivateKey.generate(.ecP256)
        let excluded = NameConstraints(permittedDNS: [], permittedIP: [], excludedDNS: ["bar.example.com"], excludedIP: [])
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Constrained Root"), notBefore: window.0, notAfter: window.1,
                                  nameConstraints: excluded),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let leaf = try Certificate.issue(.serverLeaf(names: [try HostName(validating: "*.example.com")], notBefore: window.0, notAfter: window.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(root, rootKey))
        let evaluation = TrustEvaluator.evaluate([leaf], policy: .ssl(host: try HostName(validating: "bar.example.com"), platform: .apple),
                                                 at: pki.now, anchors: TrustAnchors(system: [root]))
        #expect(evaluation.builtChain == [leaf, root])
        #expect(!evaluation.isValid)
        #expect(evaluation.failures.contains { $0.kind == .nameConstraints }, "\(evaluation.failures)")
    }
}
