import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

@Suite("Trust evaluation")
struct TrustEvaluatorTests {
    let pki = PKI.shared

    func evaluate(_ chain: [Certificate], host: HostName?, anchors: TrustAnchors, at time: Date? = nil) -> TrustEvaluation {
        TrustEvaluator.evaluate(chain, policy: .ssl(host: host, platform: .apple), at: time ?? pki.now, anchors: anchors)
    }

    @Test func genuineChainEndsAtSystemAnchor() {
        let result = evaluate([pki.leaf, pki.intermediate], host: pki.host, anchors: .device(pki.store()))
        #expect(result.isValid, "\(result.reason)")
        #expect(result.builtChain == [pki.leaf, pki.intermediate, pki.root])
        #expect(result.anchor == .system)
    }

    @Test func presentedOrderDoesNotMatterAndExtrasAreInvisible() {
        let chain = [pki.leaf, pki.otherLeaf, pki.root, pki.intermediate, pki.selfSigned]
        let result = evaluate(chain, host: pki.host, anchors: .device(pki.store()))
        #expect(result.isValid, "\(result.reason)")
        #expect(result.builtChain == [pki.leaf, pki.intermediate, pki.root])
    }

    @Test func forgedChainEndsAtUserAnchorOnlyWhenInstalled() {
        let chain = [pki.forgedLeaf, pki.proxyCA.certificate]
        let installed = evaluate(chain, host: pki.host, anchors: .device(pki.store(proxyCAInstalled: true)))
        #expect(installed.isValid)
        #expect(installed.anchor == .user)
        let excluded = evaluate(chain, host: pki.host, anchors: .device(pki.store(proxyCAInstalled: true), includingUser: false))
        #expect(!excluded.isValid)
        #expect(excluded.failureKinds == [.selfSigned])
        // The partial chain reached the proxy CA, which is not an anchor here.
        #expect(excluded.builtChain == chain)
        #expect(excluded.anchor == nil)
    }

    @Test func unknownIssuerKeepsThePartialChain() {
        let result = evaluate([pki.leaf, pki.intermediate], host: pki.host, anchors: .only([pki.otherRoot]))
        #expect(!result.isValid)
        #expect(result.failureKinds.first == .unknownIssuer)
        #expect(result.builtChain == [pki.leaf, pki.intermediate])
        #expect(result.reason.contains("unknown issuer"))
    }

    @Test func hostMismatchUsesSANsOnly() throws {
        let wrong = evaluate([pki.otherLeaf, pki.intermediate], host: pki.host, anchors: .device(pki.store()))
        #expect(wrong.failureKinds == [.hostMismatch])
        #expect(wrong.reason.contains("other.example.com"))
        #expect(wrong.anchor == .system)
        #expect(evaluate([pki.otherLeaf, pki.intermediate], host: nil, anchors: .device(pki.store())).isValid)

        // A CN naming the host does not help when the SAN does not.
        let key = try PrivateKey.generate(.ecP256)
        var spec = CertificateSpec.serverLeaf(names: [pki.otherHost], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400))
        spec.subject = DistinguishedName(commonName: "api.example.com")
        let cnOnly = try Certificate.issue(spec, subjectKey: key, signer: .authority(pki.intermediate, pki.intermediateKey))
        #expect(!evaluate([cnOnly, pki.intermediate], host: pki.host, anchors: .device(pki.store())).isValid)
    }

    @Test func wildcardsMatchOneWholeLabel() throws {
        let key = try PrivateKey.generate(.ecP256)
        let wildcard = try Certificate.issue(
            .serverLeaf(names: [try HostName(validating: "*.example.com")], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400)),
            subjectKey: key, signer: .authority(pki.intermediate, pki.intermediateKey))
        let anchors = TrustAnchors.device(pki.store())
        #expect(evaluate([wildcard, pki.intermediate], host: pki.host, anchors: anchors).isValid)
        #expect(!evaluate([wildcard, pki.intermediate], host: try HostName(validating: "a.api.example.com"), anchors: anchors).isValid)
        #expect(!evaluate([wildcard, pki.intermediate], host: try HostName(validating: "example.com"), anchors: anchors).isValid)
    }

    @Test func ipLiteralsMatchIPSANs() throws {
        let ip = try HostName(validating: "127.0.0.1")
        let key = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(
            .serverLeaf(names: [ip], notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400)),
            subjectKey: key, signer: .authority(pki.intermediate, pki.intermediateKey))
        let anchors = TrustAnchors.device(pki.store())
        #expect(evaluate([leaf, pki.intermediate], host: ip, anchors: anchors).isValid)
        #expect(evaluate([leaf, pki.intermediate], host: try HostName(validating: "127.0.0.2"), anchors: anchors).failureKinds == [.hostMismatch])
    }

    @Test func expiryAndNotYetValidFollowTheEvaluationTime() {
        let anchors = TrustAnchors.device(pki.store())
        let expired = evaluate([pki.expiredLeaf, pki.intermediate], host: pki.host, anchors: anchors)
        #expect(expired.failureKinds == [.expired])
        #expect(expired.builtChain.count == 3)
        // Evaluated back when it was valid, it passes.
        #expect(evaluate([pki.expiredLeaf, pki.intermediate], host: pki.host, anchors: anchors, at: pki.now.addingTimeInterval(-100 * 86_400)).isValid)
        let early = evaluate([pki.leaf, pki.intermediate], host: pki.host, anchors: anchors, at: pki.now.addingTimeInterval(-60 * 86_400))
        #expect(early.failureKinds.contains(.notYetValid))
    }

    @Test func everyFailureIsReported() {
        // Expired and for the wrong host: both are named.
        let result = evaluate([pki.expiredLeaf, pki.intermediate], host: pki.otherHost, anchors: .device(pki.store()))
        #expect(Set(result.failureKinds) == [.expired, .hostMismatch])
    }

    @Test func selfSignedLeafIsNotTrustedUnlessAnAnchor() {
        let untrusted = evaluate([pki.selfSigned], host: pki.host, anchors: .device(pki.store()))
        #expect(untrusted.failureKinds == [.selfSigned])
        let anchored = evaluate([pki.selfSigned], host: pki.host, anchors: .only([pki.selfSigned]))
        #expect(anchored.isValid, "\(anchored.reason)")
        #expect(anchored.anchor == .application)
    }

    @Test func leafAsAnchorEndsTheChain() {
        let result = evaluate([pki.leaf, pki.intermediate], host: pki.host, anchors: .only([pki.leaf]))
        #expect(result.isValid, "\(result.reason)")
        #expect(result.builtChain == [pki.leaf])
    }

    @Test func notACAAndPathLength() throws {
        let anchors = TrustAnchors.device(pki.store())
        let window = (pki.now.addingTimeInterval(-3600), pki.now.addingTimeInterval(86_400))
        // A leaf "issued" by another leaf.
        let key = try PrivateKey.generate(.ecP256)
        let underLeaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                              subjectKey: key, signer: .authority(pki.otherLeaf, pki.serverKey))
        // signed with the wrong key too, but the CA check is what matters here
        let notCA = evaluate([underLeaf, pki.otherLeaf, pki.intermediate], host: pki.host, anchors: anchors)
        #expect(notCA.failureKinds.contains(.notACA), "\(notCA.reason)")
        #expect(notCA.failureKinds.contains(.badSignature), "\(notCA.reason)")

        // The intermediate has pathlen 0: a CA below it exceeds the path length.
        let subKey = try PrivateKey.generate(.ecP256)
        let subCA = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Sub CA"), notBefore: window.0, notAfter: window.1),
                                          subjectKey: subKey, signer: .authority(pki.intermediate, pki.intermediateKey))
        let deepLeaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                             subjectKey: key, signer: .authority(subCA, subKey))
        let deep = evaluate([deepLeaf, subCA, pki.intermediate], host: pki.host, anchors: anchors)
        #expect(deep.failureKinds.contains(.pathLength), "\(deep.reason)")
    }

    @Test func nameConstraintsAreEnforced() throws {
        let window = (pki.now.addingTimeInterval(-3600), pki.now.addingTimeInterval(86_400))
        let caKey = try PrivateKey.generate(.ecP256)
        let constrained = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Constrained Root"), notBefore: window.0, notAfter: window.1,
                                  nameConstraints: try NameConstraints(permittedDNS: ["allowed.test"], permittedIP: [])),
            subjectKey: caKey, signer: .selfSigned(caKey))
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(constrained, caKey))
        let result = evaluate([leaf], host: pki.host, anchors: .only([constrained]))
        #expect(result.failureKinds.contains(.nameConstraints), "\(result.reason)")
    }

    /// A root, an intermediate under it and a leaf under that, each in `window`; the CAs
    /// optionally constrained to `permitted` names.
    private func threeLevels(intermediateWindow: (Date, Date)? = nil, leafWindow: (Date, Date)? = nil, leafName: HostName? = nil,
                             permitted: [String]? = nil) throws -> (root: Certificate, intermediate: Certificate, leaf: Certificate) {
        let window = (pki.now.addingTimeInterval(-10 * 86_400), pki.now.addingTimeInterval(86_400))
        let constraints = try permitted.map { try NameConstraints(permittedDNS: $0, permittedIP: []) }
        let rootKey = try PrivateKey.generate(.ecP256), interKey = try PrivateKey.generate(.ecP256)
        let root = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Three Root"), notBefore: window.0,
                                                               notAfter: window.1, nameConstraints: constraints),
                                         subjectKey: rootKey, signer: .selfSigned(rootKey))
        let inter = intermediateWindow ?? window
        let intermediate = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Three Inter"), notBefore: inter.0,
                                                                       notAfter: inter.1, nameConstraints: constraints),
                                                 subjectKey: interKey, signer: .authority(root, rootKey))
        let leafSpan = leafWindow ?? window
        let leaf = try Certificate.issue(.serverLeaf(names: [leafName ?? pki.host], notBefore: leafSpan.0, notAfter: leafSpan.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(intermediate, interKey))
        return (root, intermediate, leaf)
    }

    @Test("one failure per problem and certificate: the same error at two depths is named twice, the same error at one depth once")
    func eachFailureOncePerDepth() throws {
        let past = (pki.now.addingTimeInterval(-9 * 86_400), pki.now.addingTimeInterval(-86_400))
        let expired = try threeLevels(intermediateWindow: past, leafWindow: past)
        for platform in [TrustPlatform.curl, .apple] {
            let result = TrustEvaluator.evaluate([expired.leaf, expired.intermediate], policy: .ssl(host: pki.host, platform: platform),
                                                 at: pki.now, anchors: .only([expired.root]))
            #expect(result.failures.filter { $0.kind == .expired }.map(\.depth).sorted() == [0, 1], "\(platform): \(result.reason)")
        }
        // Both CAs constrain the names; OpenSSL reports the leaf's violation once for each.
        let constrained = try threeLevels(leafName: try HostName(validating: "www.other.test"), permitted: ["example.com"])
        let result = TrustEvaluator.evaluate([constrained.leaf, constrained.intermediate],
                                             policy: .ssl(host: try HostName(validating: "www.other.test"), platform: .curl),
                                             at: pki.now, anchors: .only([constrained.root]))
        let violations = result.failures.filter { $0.kind == .nameConstraints }
        #expect(violations.count == 1 && violations.first?.depth == 0, "\(result.failures.map { "\($0.code)@\($0.depth)" })")
    }

    @Test("an intermediate whose key signed the leaf but whose name is not the leaf's issuer is not its issuer, on every platform")
    func anIssuerIsNamedAsWellAsSigned() throws {
        let window = (pki.now.addingTimeInterval(-3_600), pki.now.addingTimeInterval(86_400))
        let rootKey = try PrivateKey.generate(.ecP256), interKey = try PrivateKey.generate(.ecP256)
        let root = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Named Root"), notBefore: window.0, notAfter: window.1),
                                         subjectKey: rootKey, signer: .selfSigned(rootKey))
        let intermediate = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "Inter"), notBefore: window.0, notAfter: window.1),
                                                 subjectKey: interKey, signer: .authority(root, rootKey))
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .named(DistinguishedName(commonName: "Someone Else"), interKey))
        for platform in TrustPlatform.allCases {
            let result = TrustEvaluator.evaluate([leaf, intermediate], policy: .ssl(host: pki.host, platform: platform), at: pki.now, anchors: .only([root]))
            #expect(!result.isValid, "\(platform) linked the leaf to an intermediate of another name")
            #expect(result.failureKinds.contains(.unknownIssuer), "\(platform): \(result.reason)")
        }
    }

    /// OpenSSL (and the platforms modelled on it) checks a common name against name constraints
    /// in the leaf only (check_name_constraints): an intermediate below a constrained CA may have a
    /// host-like CN outside the subtree and no SAN. The JDK checks such a CN in every certificate
    /// of the path (its NameConstraintsExtension), and refuses it.
    @Test func anIntermediatesCommonNameIsNotAName() throws {
        let window = (pki.now.addingTimeInterval(-3_600), pki.now.addingTimeInterval(86_400))
        let rootKey = try PrivateKey.generate(.ecP256), constrainedKey = try PrivateKey.generate(.ecP256), lowerKey = try PrivateKey.generate(.ecP256)
        // The anchor constrained too: the platforms that do not apply an anchor's constraints
        // still apply the intermediate's.
        let root = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "CN Root"), notBefore: window.0, notAfter: window.1,
                                                               nameConstraints: try NameConstraints(permittedDNS: ["example.com"], permittedIP: [])),
                                         subjectKey: rootKey, signer: .selfSigned(rootKey))
        let constrained = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Constrained CA"), notBefore: window.0, notAfter: window.1,
                                  nameConstraints: try NameConstraints(permittedDNS: ["example.com"], permittedIP: [])),
            subjectKey: constrainedKey, signer: .authority(root, rootKey))
        let lower = try Certificate.issue(.certificateAuthority(subject: DistinguishedName(commonName: "ca.other.test"), notBefore: window.0, notAfter: window.1),
                                          subjectKey: lowerKey, signer: .authority(constrained, constrainedKey))
        let leaf = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(lower, lowerKey))
        for platform in TrustPlatform.allCases {
            let result = TrustEvaluator.evaluate([leaf, lower, constrained], policy: .ssl(host: pki.host, platform: platform),
                                                 at: pki.now, anchors: .only([root]))
            #expect(result.failureKinds.contains(.nameConstraints) == (platform == .jvm), "\(platform): \(result.reason)")
        }
    }

    @Test func fakeParentFailsOnTheSignature() throws {
        // A CA certificate carrying the genuine server key, "issuing" a forged leaf by name:
        // the built chain holds the genuine key, the chain does not validate.
        let window = (pki.now.addingTimeInterval(-3600), pki.now.addingTimeInterval(86_400))
        let fakeName = DistinguishedName(commonName: "Example Issuing CA 1", organization: "Example Trust")
        let attackerKey = try PrivateKey.generate(.ecP256)
        let fakeParent = try Certificate.issue(.certificateAuthority(subject: fakeName, notBefore: window.0, notAfter: window.1),
                                               subjectKey: pki.intermediateKey, signer: .selfSigned(attackerKey))
        let forged = try Certificate.issue(.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1),
                                           subjectKey: attackerKey, signer: .named(fakeName, attackerKey))
        let result = evaluate([forged, fakeParent], host: pki.host, anchors: .device(pki.store()))
        #expect(!result.isValid)
        #expect(result.builtChain.contains(fakeParent) || result.builtChain == [forged])
    }

    @Test func emptyChainIsInvalid() {
        let result = evaluate([], host: pki.host, anchors: .device(pki.store()))
        #expect(!result.isValid)
        #expect(result.reason.contains("no certificate"))
    }
}
