import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// The pinning modes' own steps: what 2.5.2's host downgrade does not touch, and
/// the re-evaluation with the pinned certificates as the only anchors.
@Suite("AFNetworking pinning steps")
struct AFNetworkingPinningStepTests {
    let pki = PKI.shared

    @Test("2.5.2 drops the host check in mode none only (CVE-2015-3996); the pinning modes still check it")
    func hostDowngradeIsModeNoneOnly() {
        for mode in [AFNetworkingPolicy.PinningMode.certificate, .publicKey] {
            let policy = AFNetworkingPolicy(mode: mode, pinnedCertificates: [pki.intermediate], profile: .v2_5_2)
            #expect(policy.evaluate(Scenario.genuine.trust(pki)).decision == .accept, "\(mode)")
            let wrongHost = policy.evaluate(Scenario.wrongHost.trust(pki))
            #expect(wrongHost.decision == .reject, "\(mode): \(wrongHost.steps)")
            #expect(wrongHost.weaknesses.isEmpty, "\(mode): \(wrongHost.weaknesses)")
        }
    }

    @Test("certificate mode with invalid certificates allowed still needs the chain valid with the pins as anchors")
    func certificateModeRevalidatesWithThePins() {
        let policy = AFNetworkingPolicy(mode: .certificate, allowInvalidCertificates: true, pinnedCertificates: [pki.expiredLeaf])
        let verdict = policy.evaluate(Scenario.expired.trust(pki))
        #expect(verdict.decision == .reject, "\(verdict.steps)")
        #expect(verdict.steps.last?.outcome.contains("not valid with the pinned certificates as anchors") == true, "\(verdict.steps)")
    }
}
