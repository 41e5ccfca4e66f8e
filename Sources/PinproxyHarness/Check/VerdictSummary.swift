import Foundation
import PinproxyPinning

/// The parts of a verdict a matrix row shows.
enum VerdictSummary {
    /// The deciding step (the last one), with the weakness it reproduces, e.g.
    /// "CertificatePinner.check over …: accept: pin sha256/… matched certificate #3 … [CVE-2016-2402]".
    static func reason(_ verdict: Verdict) -> String {
        guard let last = verdict.steps.last else { return verdict.decision.rawValue }
        var text = "\(last.action): \(last.outcome)"
        // A refusal that only concludes ("the trust is invalid") names the evaluation's failure too.
        if !verdict.connectionProceeds, let failed = verdict.steps.dropLast().last(where: { $0.outcome.hasPrefix("failed") }) {
            text += " (\(failed.outcome))"
        }
        // An accepted chain: say whose anchor it ended at (the proxy CA a tester installed, a public CA).
        if verdict.connectionProceeds, let anchor = verdict.builtChain.last?.anchor {
            text += " (the built chain ends at a \(anchor) anchor)"
        }
        let named = verdict.weaknesses.map(\.name)
        if !named.isEmpty { text += " [\(named.joined(separator: ", "))]" }
        return text
    }

    /// Whether the verdict compared pins with the chain of a failed evaluation.
    ///
    /// After a failed evaluation "the certificates in the trust" are the chain the
    /// evaluator reached, however far it got and whatever failed on the way; which
    /// certificates that holds depends on how the chain builder works (here
    /// OpenSSL's, as docs/policies.md describes), so such a verdict is a consequence
    /// of the model, not a fact about the library. `presentedChainIsValid` is the basic
    /// X.509 evaluation of the presented chain against the device's anchors. A family that
    /// compares the leaf's key only (curl: ``PolicyFamily/pinsTheLeafKeyOnly``) is excluded,
    /// whatever was built.
    static func isModelDependent(_ verdict: Verdict, presentedChainIsValid: Bool) -> Bool {
        guard !verdict.family.pinsTheLeafKeyOnly, !presentedChainIsValid else { return false }
        return !verdict.matchedPins.isEmpty || !verdict.missingPins.isEmpty
    }
}
