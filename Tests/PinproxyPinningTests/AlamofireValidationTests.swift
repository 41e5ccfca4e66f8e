import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

extension AlamofireTests {
    /// `performDefaultValidation` without `validateHost` still validates the chain
    /// (SSL policy without a host) before the pins are looked at.
    @Test func performDefaultValidationWithoutTheHostStillValidatesTheChain() {
        let certificates = AlamofirePolicy(evaluators: [host: .pinnedCertificates(
            certificates: [pki.selfSigned], acceptSelfSignedCertificates: false, performDefaultValidation: true, validateHost: false)])
        let refused = certificates.evaluate(pki.trust([pki.selfSigned]))
        #expect(refused.decision == .reject, "\(refused.steps)")
        #expect(refused.steps.contains { $0.action.contains("default validation") }, "\(refused.steps)")
        let unchecked = AlamofirePolicy(evaluators: [host: .pinnedCertificates(
            certificates: [pki.selfSigned], acceptSelfSignedCertificates: false, performDefaultValidation: false, validateHost: false)])
        #expect(unchecked.evaluate(pki.trust([pki.selfSigned])).decision == .accept)

        let keys = AlamofirePolicy(evaluators: [host: .publicKeys(
            keys: [pki.selfSigned.spkiPin], performDefaultValidation: true, validateHost: false)])
        #expect(keys.evaluate(pki.trust([pki.selfSigned])).decision == .reject)
        // A valid chain for another host passes: the host is not checked.
        let wrongHost = AlamofirePolicy(evaluators: [host: .publicKeys(
            keys: [pki.intermediate.spkiPin], performDefaultValidation: true, validateHost: false)])
        #expect(wrongHost.evaluate(Scenario.wrongHost.trust(pki)).decision == .accept)
    }

    /// The keys are those of the certificates in the evaluated trust, not of the
    /// list the server sent: the genuine chain appended to a forged one (CVE-2016-2402) does not pass.
    @Test func validatingTheHostValidatesTheChainWithoutPerformDefaultValidation() {
        let key = PKI.shared.leaf.spkiPin
        // Host validation runs the whole SSL evaluation: such an evaluator validates, beside a disabled one too.
        #expect(AlamofirePolicy.Evaluator.publicKeys(keys: [key], performDefaultValidation: false, validateHost: true).validates)
        #expect(!AlamofirePolicy.Evaluator.publicKeys(keys: [key], performDefaultValidation: false, validateHost: false).validates)
        #expect(AlamofirePolicy.Evaluator.composite([.disabled, .publicKeys(keys: [key], performDefaultValidation: false, validateHost: true)]).validates)
    }

    @Test func publicKeysAreLookedForInTheEvaluatedChainOnly() {
        let keys = AlamofirePolicy(evaluators: [host: .publicKeys(
            keys: [pki.intermediate.spkiPin], performDefaultValidation: true, validateHost: true)])
        #expect(keys.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        let stuffed = keys.evaluate(Scenario.stuffed.trust(pki))
        #expect(stuffed.decision == .reject, "\(stuffed.steps)")
    }
}
