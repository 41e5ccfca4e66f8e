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
/// pinned. An unpinned host gets the system's default handling.
///
/// The host is looked up as the URL wrote it, as `getPinningConfigurationKeyForDomain`
/// (configuration_utils.m) does: first as an exact key, then among the domains with
/// `TSKIncludeSubdomains` by `isSubdomain` — registries of the same length (only the length
/// is compared, see ``PublicSuffixList``), and the host's part before its registry ends
/// with the domain's, with no dot boundary (`badexample.com` and even `example.org` count as
/// under `example.com`: over-pinning, which fails closed). A trailing dot changes the registry
/// length, so `api.example.com.` is not pinned by an entry for `api.example.com`. Where
/// several parents match, TrustKit takes the first of an unordered dictionary; pinproxy
/// takes the longest.
///
/// Configuration rules, as `parseTrustKitConfiguration` (parse_configuration.m) enforces
/// them at start — TrustKit raises an exception and the app does not start:
/// - a domain must sit under a suffix of the public-suffix list (`GetRegistryLength` is
///   not 0): `example.test` or `localhost` is refused;
/// - `TSKIncludeSubdomains` on a domain that is itself a public suffix is refused;
/// - two distinct pins are required when `TSKEnforcePinning` is true, one when it is false.
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

    /// Checks TrustKit's configuration rules (see the type's documentation) and that no
    /// domain is configured twice.
    public init(domains: [DomainPinning]) throws {
        var seen = Set<String>()
        let suffixes = PublicSuffixList.shared
        for entry in domains {
            guard seen.insert(entry.domain).inserted else {
                throw PinproxyError(.policy, "domain \(entry.domain) is configured twice")
            }
            guard suffixes.registryLength(of: entry.domain) > 0 else {
                throw PinproxyError(.policy, "domain \(entry.domain) is not under a suffix of TrustKit's public-suffix list; TrustKit refuses to start (\"initialized with an invalid domain\"); use a name under a real suffix, such as api.example.com")
            }
            if entry.includeSubdomains && suffixes.isPublicSuffix(entry.domain) {
                throw PinproxyError(.policy, "TSKIncludeSubdomains on \(entry.domain), which is a public suffix; TrustKit refuses to start (\"initialized with includeSubdomains for a domain suffix\")")
            }
            let distinct = Set(entry.publicKeyHashes)
            if entry.enforcePinning && distinct.count < 2 {
                throw PinproxyError(.policy, "domain \(entry.domain) has \(distinct.count) distinct pin\(distinct.count == 1 ? "" : "s"); TrustKit requires at least two (a backup pin) when TSKEnforcePinning is true and refuses to start with fewer")
            }
            if distinct.isEmpty {
                throw PinproxyError(.policy, "domain \(entry.domain) has no pin; TrustKit requires at least one when TSKEnforcePinning is false and refuses to start without")
            }
        }
        self.domains = domains
    }

    public var family: PolicyFamily { .trustkit }
    public var profile: String { "TrustKit" }

    /// The configuration entry that applies to `host` (as the URL wrote it, lower case).
    public func configuration(for host: String) -> DomainPinning? {
        if let exact = domains.first(where: { $0.domain == host }) { return exact }
        return domains
            .filter { $0.includeSubdomains && Self.isSubdomain(host, of: $0.domain) }
            .max { $0.domain.count < $1.domain.count }
    }

    /// TrustKit's `isSubdomain(domain, subdomain)`.
    static func isSubdomain(_ host: String, of domain: String) -> Bool {
        let suffixes = PublicSuffixList.shared
        let registry = suffixes.registryLength(of: domain)
        guard registry > 0, suffixes.registryLength(of: host) == registry,
              domain.utf8.count > registry, host.utf8.count > registry else { return false }
        let domainLabel = domain.utf8.dropLast(registry + 1)
        let hostLabel = host.utf8.dropLast(registry + 1)
        return !domainLabel.isEmpty && hostLabel.count >= domainLabel.count && hostLabel.suffix(domainLabel.count).elementsEqual(domainLabel)
    }

    /// Why no TrustKit domain covers `host`: none equal to it, nor a parent with `TSKIncludeSubdomains`.
    public func uncoveredReason(host: HostName) -> String? {
        configuration(for: host.description) != nil ? nil
            : "no TrustKit domain (\(domains.map { $0.domain + ($0.includeSubdomains ? " with includeSubdomains" : "") }.distinctList)) covers it, so TrustKit leaves it to the system's default handling"
    }

    /// Inside the handshake: TrustKit validates the pins in NSURLSession's server-trust
    /// challenge, and a refusal cancels it, aborting the handshake.
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint { .handshake }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let host = trust.hostAsWritten
        let anchors = TrustAnchors.device(trust.store)
        let policy = TrustPolicy.ssl(host: trust.host, platform: .apple)
        func defaultHandling(_ why: String, weakness: Weakness? = nil) -> Verdict {
            let evaluation = trust.evaluate(policy, anchors: anchors)
            record.use(evaluation)
            record.step("pinning configuration for \(host)", why, weakness: evaluation.isValid ? weakness : nil)
            record.step("default handling: evaluation with the \(policy) against \(anchors.summary)", evaluation.outcomeSummary)
            return record.finish(evaluation.isValid ? .accept : .reject)
        }
        guard let entry = configuration(for: host) else {
            if trust.hasTrailingDot, let dotless = configuration(for: trust.host.description) {
                return defaultHandling("none (TSKTrustDecisionDomainNotPinned): \(host) as written is not \(dotless.domain), and its trailing dot changes the registry length, so TSKIncludeSubdomains does not cover it either",
                                       weakness: .trailingDotHost)
            }
            return defaultHandling("none (TSKTrustDecisionDomainNotPinned)")
        }
        var scope = entry.domain == host ? "domain \(entry.domain)" : "domain \(entry.domain) with TSKIncludeSubdomains"
        if entry.domain != host && !host.hasSuffix("." + entry.domain) {
            scope += " (TrustKit's isSubdomain compares the registries by length and the labels before them as text, without a dot boundary)"
        }
        let parents = entry.domain == host ? [] : domains.filter { $0.includeSubdomains && Self.isSubdomain(host, of: $0.domain) }
        if parents.count > 1 {
            let names = parents.map(\.domain).sorted().joined(separator: ", ")
            scope += "; \(parents.count) domains with TSKIncludeSubdomains cover \(host) (\(names)): TrustKit uses the first its NSDictionary enumerates, an order it does not define, so a device may apply another of them; pinproxy uses the longest"
        }
        if let expiry = entry.expirationDate, expiry < trust.time {
            return defaultHandling("\(scope) stopped being pinned at TSKExpirationDate \(ISO8601DateFormatter().string(from: expiry))")
        }
        record.step("pinning configuration for \(host)", "\(scope), \(entry.publicKeyHashes.count) pins, TSKEnforcePinning \(yes(entry.enforcePinning))")

        let evaluation = trust.evaluate(policy, anchors: anchors)
        record.use(evaluation)
        record.step("evaluation with the \(policy) against \(anchors.summary)", evaluation.outcomeSummary)
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
