import Foundation
import PinproxyCertificates
import Testing
@testable import PinproxyPinning

/// `RevocationTrustEvaluator`: what the policy file takes and what the verdict says about revocation.
@Suite("Alamofire RevocationTrustEvaluator")
struct AlamofireRevocationTests {
    let pki = PKI.shared

    private func policy(_ evaluator: String) throws -> AlamofirePolicy {
        let dir = try TemporaryDirectory()
        let file = try dir.write("af.json", #"{"family": "alamofire", "evaluators": {"api.example.com": \#(evaluator)}}"#)
        return try #require(try PolicyFile.load(contentsOf: file) as? AlamofirePolicy)
    }

    @Test func bestAttemptPassesAValidChainAndSaysRevocationIsNotModelled() throws {
        let verdict = try policy(#"{"type": "RevocationTrustEvaluator"}"#).evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept, "\(VerdictReport.text(verdict))")
        #expect(verdict.steps.last?.action.contains("revocation policy [.any]") == true, "\(verdict.steps)")
        #expect(verdict.steps.last?.outcome.contains("revocation itself is not modelled") == true)
    }

    /// It validates but pins nothing: a forged chain to a CA the user installed passes, as with DefaultTrustEvaluator.
    @Test func validationRejectsExpiredWrongHostAndSelfSignedChainsButPinsNothing() throws {
        let revocation = try policy(#"{"type": "RevocationTrustEvaluator", "options": ["ocsp"]}"#)
        for scenario in [Scenario.expired, .wrongHost, .selfSigned] {
            #expect(revocation.evaluate(scenario.trust(pki)).decision == .reject, "\(scenario)")
        }
        #expect(revocation.evaluate(Scenario.forged.trust(pki)).decision == .accept)
    }

    @Test func requirePositiveResponseFailsForWantOfAResponse() throws {
        let verdict = try policy(#"{"type": "RevocationTrustEvaluator", "options": ["crl", "requirePositiveResponse"]}"#)
            .evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .reject)
        #expect(verdict.steps.last?.outcome.contains("pinproxy obtains none") == true, "\(verdict.steps)")
        #expect(verdict.steps.last?.action.contains("[.crl, .requirePositiveResponse]") == true)
    }

    /// Without default or host validation, the revocation policy alone still checks the chain (basic X.509).
    @Test func revocationAloneChecksTheChainButNotTheName() throws {
        let alone = try policy(#"{"type": "RevocationTrustEvaluator", "performDefaultValidation": false, "validateHost": false}"#)
        #expect(alone.evaluate(Scenario.wrongHost.trust(pki)).decision == .accept)
        #expect(alone.evaluate(Scenario.expired.trust(pki)).decision == .reject)
    }

    @Test func unknownOptionsAreRefused() {
        #expect { _ = try policy(#"{"type": "RevocationTrustEvaluator", "options": ["sometimes"]}"#) } throws: {
            "\($0)".contains("entry 0 is not one of any, ocsp, crl, preferCRL, requirePositiveResponse, networkAccessDisabled")
        }
    }

    /// It validates the chain, so a pin check beside it in a composite is not "validation disabled".
    @Test("a RevocationTrustEvaluator in a composite covers a pin check that validates nothing itself")
    func revocationCoversAPinCheckInAComposite() {
        let pinOnly = AlamofirePolicy.Evaluator.publicKeys(keys: [pki.intermediate.spkiPin], performDefaultValidation: false, validateHost: false)
        let composite = AlamofirePolicy(evaluators: ["api.example.com": .composite([
            .revocation(performDefaultValidation: true, validateHost: true, options: .any), pinOnly])])
        let verdict = composite.evaluate(Scenario.genuine.trust(pki))
        #expect(verdict.decision == .accept, "\(verdict.steps)")
        #expect(verdict.weaknesses.isEmpty, "\(verdict.weaknesses)")
        // Alone, the same pin check validates nothing.
        let alone = AlamofirePolicy(evaluators: ["api.example.com": pinOnly]).evaluate(Scenario.genuine.trust(pki))
        #expect(alone.weaknesses == [.validationDisabled])
    }
}
