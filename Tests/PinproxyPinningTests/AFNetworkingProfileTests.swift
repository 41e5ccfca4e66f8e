import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

@Suite("AFNetworking steps, profiles and weaknesses")
struct AFNetworkingProfileTests {
    let pki = PKI.shared

    @Test func version251AcceptsAnythingInModeNone() {
        let forged = pki.trust([pki.forgedLeaf, pki.proxyCA.certificate])  // CA not installed
        let current = AFNetworkingPolicy(mode: .none).evaluate(forged)
        #expect(current.decision == .reject)
        let old = AFNetworkingPolicy(mode: .none, profile: .v2_5_1).evaluate(forged)
        #expect(old.decision == .accept)
        #expect(old.weaknesses == [.afnetworking251])
        #expect(old.profile == "2.5.1")
    }

    @Test func version252SkipsTheHostInModeNone() {
        let wrongHost = pki.trust([pki.otherLeaf, pki.intermediate])
        #expect(AFNetworkingPolicy(mode: .none).evaluate(wrongHost).decision == .reject)
        let old = AFNetworkingPolicy(mode: .none, profile: .v2_5_2).evaluate(wrongHost)
        #expect(old.decision == .accept)
        #expect(old.weaknesses.contains(.cve2015_3996))
        #expect(old.steps.contains { $0.description.contains("CVE-2015-3996") })
        // Pinning modes are not affected.
        let pinned = AFNetworkingPolicy(mode: .certificate, pinnedCertificates: [pki.leaf], profile: .v2_5_2).evaluate(wrongHost)
        #expect(pinned.decision == .reject)
        // An untrusted chain is still refused by 2.5.2.
        let selfSigned = AFNetworkingPolicy(mode: .none, profile: .v2_5_2).evaluate(pki.trust([pki.selfSigned]))
        #expect(selfSigned.decision == .reject)
    }

    @Test func stepsSayWhatHappened() {
        let verdict = AFNetworkingPolicy(mode: .none).evaluate(pki.trust([pki.leaf]))
        let text = verdict.steps.map(\.description).joined(separator: "\n")
        #expect(text.contains("trust evaluation with the SSL policy for api.example.com"))
        #expect(text.contains("failed — unknown issuer"))
        #expect(verdict.disposition == AFNetworkingPolicy.cancelChallenge)
    }

    @Test func guardQuotesTheLibrary() {
        let verdict = AFNetworkingPolicy(mode: .none, allowInvalidCertificates: true).evaluate(pki.trust([pki.leaf, pki.intermediate]))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.outcome.contains("you MUST use pinning") == true)
    }

    @Test func publicKeyModeWithoutRevalidationIsNamed() {
        let policy = AFNetworkingPolicy(mode: .publicKey, allowInvalidCertificates: true, validatesDomainName: false, pinnedCertificates: [pki.leaf])
        let verdict = policy.evaluate(Scenario.expired.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.weaknesses == [.publicKeyWithoutRevalidation])
        #expect(verdict.matchedPins == [pki.leaf.spkiPin.okhttp])
        // A valid chain matched the same way names no weakness.
        let genuine = policy.evaluate(Scenario.genuine.trust(pki))
        #expect(genuine.decision == .accept)
        #expect(genuine.weaknesses.isEmpty)
    }

    @Test func fakeParentCarryingTheGenuineKeyFoolsPublicKeyModeWithInvalidCertificatesAllowed() throws {
        let window = (pki.now.addingTimeInterval(-3600), pki.now.addingTimeInterval(86_400))
        let fakeName = DistinguishedName(commonName: "Fake Parent")
        let attackerKey = try PrivateKey.generate(.ecP256)
        // A CA certificate with the genuine server key, signed by the attacker.
        let fakeParent = try Certificate.issue(.certificateAuthority(subject: fakeName, notBefore: window.0, notAfter: window.1),
                                               subjectKey: try PublicKey(of: pki.serverKey), signer: .named(fakeName, attackerKey))
        // Without key identifiers the leaf chains to the fake parent by name alone.
        var spec = CertificateSpec.serverLeaf(names: [pki.host], notBefore: window.0, notAfter: window.1)
        spec.includeKeyIdentifiers = false
        let forged = try Certificate.issue(spec, subjectKey: attackerKey, signer: .named(fakeName, attackerKey))
        let trust = pki.trust([forged, fakeParent])
        let lax = AFNetworkingPolicy(mode: .publicKey, allowInvalidCertificates: true, validatesDomainName: false, pinnedCertificates: [pki.leaf])
        let verdict = lax.evaluate(trust)
        #expect(verdict.decision == .accept)
        #expect(verdict.weaknesses == [.publicKeyWithoutRevalidation])
        #expect(verdict.steps.last?.outcome.contains("certificate #1 (CN=Fake Parent)") == true)
        let strict = AFNetworkingPolicy(mode: .publicKey, pinnedCertificates: [pki.leaf])
        #expect(strict.evaluate(trust).decision == .reject)
        let certificateMode = AFNetworkingPolicy(mode: .certificate, allowInvalidCertificates: true, validatesDomainName: false, pinnedCertificates: [pki.leaf])
        #expect(certificateMode.evaluate(trust).decision == .reject)
    }

    @Test func pinningTheIntermediateAcceptsAnyLeafItIssues() {
        // Certificate mode re-anchored on a pinned intermediate: the chain ends there.
        let policy = AFNetworkingPolicy(mode: .certificate, pinnedCertificates: [pki.intermediate])
        let verdict = policy.evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept)
        #expect(verdict.builtChain.map(\.subject).last == pki.intermediate.subject)
        // A misissued leaf from another trusted root does not chain to it.
        #expect(policy.evaluate(pki.trust([pki.misissuedLeaf])).decision == .reject)
        // Mode none accepts the misissued leaf: the other root is trusted.
        #expect(AFNetworkingPolicy(mode: .none).evaluate(pki.trust([pki.misissuedLeaf])).decision == .accept)
    }
}
