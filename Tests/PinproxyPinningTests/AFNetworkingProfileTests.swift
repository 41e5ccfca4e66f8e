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

    /// AFSecurityPolicy.m also fires the guard in a pinning mode with no pinned certificate
    /// (`[self.pinnedCertificates count] == 0`), before evaluating anything.
    @Test("the contradiction guard refuses a pinning mode with no pinned certificates", arguments: [AFNetworkingPolicy.PinningMode.publicKey, .certificate])
    func guardRefusesPinningModesWithoutPins(_ mode: AFNetworkingPolicy.PinningMode) {
        let verdict = AFNetworkingPolicy(mode: mode, allowInvalidCertificates: true).evaluate(pki.trust([pki.leaf, pki.intermediate]))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.count == 1, "\(verdict.steps)")
        #expect(verdict.steps.first?.action.hasPrefix("step 1, contradiction guard") == true)
        #expect(verdict.steps.first?.outcome.contains("you MUST use pinning") == true, "\(verdict.steps)")
    }

    /// CVE-2015-3996 changed the outcome only where the host check would have failed: step 3 says so then only.
    @Test("2.5.2 in mode none marks the acceptance with CVE-2015-3996 only when the host check would have failed")
    func version252MarksTheAcceptanceOnlyWhenTheHostWouldFail() {
        let policy = AFNetworkingPolicy(profile: .v2_5_2)
        let genuine = policy.evaluate(Scenario.genuine.trust(pki))
        #expect(genuine.decision == .accept)
        #expect(genuine.steps.last?.action == "step 3, mode none")
        #expect(genuine.steps.last?.weakness == nil, "\(genuine.steps)")
        let wrongHost = policy.evaluate(Scenario.wrongHost.trust(pki))
        #expect(wrongHost.decision == .accept)
        #expect(wrongHost.steps.last?.weakness == .cve2015_3996, "\(wrongHost.steps)")
        // An app that turned the host check off itself (validatesDomainName NO) accepts the wrong
        // host in every release: the acceptance is its setting's, not the 2.5.2 bug's.
        let unchecked = AFNetworkingPolicy(mode: .none, validatesDomainName: false, profile: .v2_5_2).evaluate(Scenario.wrongHost.trust(pki))
        #expect(unchecked.decision == .accept)
        #expect(!unchecked.weaknesses.contains(.cve2015_3996), "\(unchecked.steps)")
        #expect(AFNetworkingPolicy(mode: .none, validatesDomainName: false).evaluate(Scenario.wrongHost.trust(pki)).decision == .accept)
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
