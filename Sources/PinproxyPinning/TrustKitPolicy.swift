import Foundation
import PinproxyCertificates

/// TrustKit's pinning validator (`TSKPinningValidator`).
///
/// For a pinned domain: the chain must evaluate valid with the SSL policy for the
/// host (an invalid chain is blocked whatever `TSKEnforcePinning` says); then
/// the SPKI SHA-256 of a certificate of the evaluated chain must be one of the
/// domain's `TSKPublicKeyHashes`. A mismatch blocks the connection when
/// `TSKEnforcePinning` is true and is only reported (REPORT-ONLY) when false.
/// After `TSKExpirationDate` (00:00 UTC of that day) the domain is no longer
/// pinned. Domains are matched exactly first, then by the longest parent with
/// `TSKIncludeSubdomains`. An unpinned host gets the system's default handling.
///
/// Configuration rule: every domain needs at least two pins (a backup pin); fewer
/// is a configuration error, as TrustKit refuses to initialise.
public struct TrustKitPolicy: PinningPolicy {
    /// One entry of `TSKPinnedDomains`.
    public struct DomainPinning: Sendable {
        public var domain: String
        public var publicKeyHashes: [SPKIPin]
        public var includeSubdomains: Bool
        public var enforcePinning: Bool
        public var expirationDate: Date?
        public var reportURIs: [String]

        public init(domain: String, publicKeyHashes: [SPKIPin], includeSubdomains: Bool = false,
                    enforcePinning: Bool = true, expirationDate: Date? = nil, reportURIs: [String] = []) {
            self.domain = domain.lowercased()
            self.publicKeyHashes = publicKeyHashes
            self.includeSubdomains = includeSubdomains
            self.enforcePinning = enforcePinning
            self.expirationDate = expirationDate
            self.reportURIs = reportURIs
        }
    }

    public let domains: [DomainPinning]

    /// Checks TrustKit's configuration rules (two pins per domain, distinct domains).
    public init(domains: [DomainPinning]) throws {
        var seen = Set<String>()
        for entry in domains {
            guard seen.insert(entry.domain).inserted else {
                throw PinproxyError(.policy, "domain \(entry.domain) is configured twice")
            }
            let distinct = Set(entry.publicKeyHashes)
            guard distinct.count >= 2 else {
                throw PinproxyError(.policy, "domain \(entry.domain) has \(distinct.count) distinct pin\(distinct.count == 1 ? "" : "s"); TrustKit requires at least two (a backup pin) and refuses to start with fewer")
            }
        }
        self.domains = domains
    }

    public var family: PolicyFamily { .trustkit }
    public var profile: String { "TrustKit" }

    /// The configuration entry that applies to `host`.
    public func configuration(for host: String) -> DomainPinning? {
        if let exact = domains.first(where: { $0.domain == host }) { return exact }
        return domains
            .filter { $0.includeSubdomains && host.hasSuffix("." + $0.domain) }
            .max { $0.domain.count < $1.domain.count }
    }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let host = trust.host.description
        let anchors = TrustAnchors.device(trust.store)
        func defaultHandling(_ why: String) -> Verdict {
            let evaluation = trust.evaluate(host: trust.host, anchors: anchors)
            record.use(evaluation)
            record.step("pinning configuration for \(host)", why)
            record.step("default handling: evaluation with the SSL policy for \(host) against \(anchors.summary)", evaluation.outcomeSummary)
            return record.finish(evaluation.isValid ? .accept : .reject)
        }
        guard let entry = configuration(for: host) else {
            return defaultHandling("none (TSKTrustDecisionDomainNotPinned)")
        }
        let scope = entry.domain == host ? "domain \(entry.domain)" : "domain \(entry.domain) with TSKIncludeSubdomains"
        if let expiry = entry.expirationDate, expiry < trust.time {
            return defaultHandling("\(scope) stopped being pinned at TSKExpirationDate \(ISO8601DateFormatter().string(from: expiry))")
        }
        record.step("pinning configuration for \(host)", "\(scope), \(entry.publicKeyHashes.count) pins, TSKEnforcePinning \(yes(entry.enforcePinning))")

        let evaluation = trust.evaluate(host: trust.host, anchors: anchors)
        record.use(evaluation)
        record.step("evaluation with the SSL policy for \(host) against \(anchors.summary)", evaluation.outcomeSummary)
        guard evaluation.isValid else {
            record.step("validation result", "reject: TSKTrustEvaluationFailedInvalidCertificateChain blocks the connection even without enforcement")
            return record.finish(.reject)
        }
        let action = "TSKPublicKeyHashes over the evaluated chain (\(evaluation.builtChain.countText))"
        if record.matchSPKIPins(entry.publicKeyHashes, over: evaluation.builtChain, step: action) {
            return record.finish(.accept)
        }
        let reports = entry.reportURIs.isEmpty ? "" : "; a pin failure report goes to \(entry.reportURIs.joined(separator: ", "))"
        if entry.enforcePinning {
            record.step(action, "reject: TSKTrustEvaluationFailedNoMatchingPin with TSKEnforcePinning YES\(reports)")
            return record.finish(.reject)
        }
        record.step(action, "report only: no pin matched, but TSKEnforcePinning is NO so the connection proceeds\(reports)")
        return record.finish(.reportOnly)
    }
}
