import Foundation
import PinproxyCertificates

extension AlamofirePolicy {
    /// `RevocationTrustEvaluator.Options`: Apple's revocation policy constants.
    public struct RevocationOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// `kSecRevocationOCSPMethod`.
        public static let ocsp = RevocationOptions(rawValue: 1 << 0)
        /// `kSecRevocationCRLMethod`.
        public static let crl = RevocationOptions(rawValue: 1 << 1)
        /// `kSecRevocationPreferCRL`.
        public static let preferCRL = RevocationOptions(rawValue: 1 << 2)
        /// `kSecRevocationRequirePositiveResponse`: a failure to get a response is fatal.
        public static let requirePositiveResponse = RevocationOptions(rawValue: 1 << 3)
        /// `kSecRevocationNetworkAccessDisabled`: cached responses only.
        public static let networkAccessDisabled = RevocationOptions(rawValue: 1 << 4)
        /// `kSecRevocationUseAnyAvailableMethod` (OCSP and CRL), Alamofire's default.
        public static let any: RevocationOptions = [.ocsp, .crl]

        /// The names a policy file uses, as Alamofire spells the static members.
        public static let names: [(String, RevocationOptions)] = [
            ("any", .any), ("ocsp", .ocsp), ("crl", .crl), ("preferCRL", .preferCRL),
            ("requirePositiveResponse", .requirePositiveResponse), ("networkAccessDisabled", .networkAccessDisabled),
        ]

        public var description: String {
            var words: [String] = []
            var rest = self
            if rest.isSuperset(of: .any) { words.append("any"); rest.subtract(.any) }
            for (name, option) in Self.names.dropFirst() where rest.contains(option) { words.append(name) }
            return "[" + words.map { "." + $0 }.joined(separator: ", ") + "]"
        }
    }

    /// The last step of `RevocationTrustEvaluator.evaluate`: `evaluate(afterApplying: revocation)`.
    ///
    /// `apply(policy:)` replaces the trust's policies (`SecTrustSetPolicies`), so this evaluation
    /// runs the revocation policy alone, modelled as basic X.509 (chain, validity, signatures,
    /// no name, no EKU) plus the revocation check. pinproxy fetches no CRL and asks no OCSP
    /// responder — the harness world names none and runs no network — so it can show no
    /// revoked certificate: without `requirePositiveResponse` Apple treats a missing response
    /// as no failure ("best attempt"), and the evaluation passes as the chain does; with it,
    /// no positive response is had, and the evaluation fails.
    func checkRevocation(_ options: RevocationOptions, trust: ServerTrust, state: inout TrustState, record: inout VerdictRecorder) -> Bool {
        let evaluation = trust.evaluate(.basicX509(platform: .apple), anchors: state.anchors)
        state.lastEvaluation = evaluation
        record.use(evaluation)
        let action = "RevocationTrustEvaluator: the revocation policy \(options) alone (apply(policy:) replaces the trust's policies) against \(state.anchors.summary)"
        guard evaluation.isValid else {
            record.step(action, evaluation.outcomeSummary + " (.revocationCheckFailed)")
            return false
        }
        if options.contains(.requirePositiveResponse) {
            record.step(action, "reject: requirePositiveResponse needs a positive revocation response, and pinproxy obtains none (it fetches no CRL and asks no OCSP responder); a device that reaches the CA's responder passes a certificate in good standing (.revocationCheckFailed)")
            return false
        }
        record.step(action, "pass: the chain is valid; revocation is checked on a best-attempt basis, and pinproxy has no revocation status to consult (no CRL or OCSP fetched), so no certificate counts as revoked — revocation itself is not modelled")
        return true
    }
}
