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
/// The model is TrustKit 3.0.7 (configuration_utils.m, parse_configuration.m, TSKPinningValidator.m).
/// The host is looked up as the URL wrote it, as `getPinningConfigurationKeyForDomain` does:
/// first as an exact key, then among the domains with `TSKIncludeSubdomains` by `isSubdomain`,
/// taking the longest match when several cover the host (TrustKit ≥ 1.6.2). `isSubdomain`
/// requires the host to be longer than the domain, the two registries (public suffixes) to be
/// the same text (≥ 1.5.1), and the host's part before its registry to end with a dot and the
/// domain's part before its registry (≥ 1.5.3): `good.com.otherdomaingood.com` is not under
/// `good.com`, `test.good.com` is not under `good.net`. A trailing dot changes the registry,
/// so `api.example.com.` is not pinned by an entry for `api.example.com`. An entry with
/// `TSKExcludeSubdomainFromParentPolicy` (≥ 1.4.2) is found by its exact name and leaves that
/// name unpinned (`TSKTrustDecisionDomainNotPinned`); names below it still fall to the parent.
///
/// Configuration rules, as `parseTrustKitConfiguration` (parse_configuration.m) enforces
/// them at start — TrustKit raises an exception and the app does not start:
/// - a domain must sit under a suffix of the public-suffix list (`GetRegistryLength` is
///   not 0): `example.test` or `localhost` is refused;
/// - `TSKIncludeSubdomains` on a domain that is itself a public suffix is refused;
/// - two distinct pins are required when `TSKEnforcePinning` is true, one when it is false;
/// - `TSKPinnedDomains` must name at least one domain ("initialized with no pinned domains");
/// - an entry with `TSKExcludeSubdomainFromParentPolicy` true has no other key, and a parent
///   with `TSKIncludeSubdomains` must cover it (TrustKit looks the parent up for the name with
///   an `a` prepended, so the entry itself is not found).
///
/// The verdict's disposition is what `handleChallenge:completionHandler:` answers:
/// `UseCredential` for an allowed connection, `PerformDefaultHandling` for a domain that is not
/// pinned, `CancelAuthenticationChallenge` for a blocked one.
public struct TrustKitPolicy: PinningPolicy {
    /// One entry of `TSKPinnedDomains`.
    public struct DomainPinning: Sendable {
        public var domain: String
        public var publicKeyHashes: [SPKIPin]
        public var includeSubdomains: Bool
        public var enforcePinning: Bool
        public var expirationDate: Date?
        public var reportURIs: [String]
        /// `TSKExcludeSubdomainFromParentPolicy`: this name is left out of its parent's policy.
        public var excludeSubdomainFromParentPolicy: Bool

        public init(domain: String, publicKeyHashes: [SPKIPin], includeSubdomains: Bool = false,
                    enforcePinning: Bool = true, expirationDate: Date? = nil, reportURIs: [String] = []) {
            self.domain = domain.lowercased()
            self.publicKeyHashes = publicKeyHashes
            self.includeSubdomains = includeSubdomains
            self.enforcePinning = enforcePinning
            self.expirationDate = expirationDate
            self.reportURIs = reportURIs
            self.excludeSubdomainFromParentPolicy = false
        }

        /// An entry with `TSKExcludeSubdomainFromParentPolicy` true, which TrustKit allows no other key beside.
        public static func excluded(_ domain: String) -> DomainPinning {
            var entry = DomainPinning(domain: domain, publicKeyHashes: [])
            entry.excludeSubdomainFromParentPolicy = true
            return entry
        }
    }

    public let domains: [DomainPinning]

    /// Checks TrustKit's configuration rules (see the type's documentation) and that no
    /// domain is configured twice.
    public init(domains: [DomainPinning]) throws {
        guard !domains.isEmpty else {
            throw PinproxyError(.policy, "no pinned domain; TrustKit refuses to start (\"TrustKit was initialized with no pinned domains\")")
        }
        var seen = Set<String>()
        let suffixes = PublicSuffixList.shared
        for entry in domains {
            guard seen.insert(entry.domain).inserted else {
                throw PinproxyError(.policy, "domain \(entry.domain) is configured twice")
            }
            guard suffixes.registryLength(of: entry.domain) > 0 else {
                throw PinproxyError(.policy, "domain \(entry.domain) is not under a suffix of TrustKit's public-suffix list; TrustKit refuses to start (\"initialized with an invalid domain\"); use a name under a real suffix, such as api.example.com")
            }
            if entry.excludeSubdomainFromParentPolicy { continue }
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
        for entry in domains where entry.excludeSubdomainFromParentPolicy {
            // parse_configuration.m looks the parent up for "a" + the name, so the entry itself is not found.
            guard let parent = configuration(for: "a" + entry.domain), !parent.excludeSubdomainFromParentPolicy else {
                throw PinproxyError(.policy, "domain \(entry.domain) has TSKExcludeSubdomainFromParentPolicy but no domain with TSKIncludeSubdomains covers it; TrustKit refuses to start (\"could not find a policy for a parent domain\")")
            }
        }
    }

    public var family: PolicyFamily { .trustkit }
    public var profile: String { "TrustKit" }

    static let useCredential = "NSURLSessionAuthChallengeUseCredential"
    static let performDefaultHandling = "NSURLSessionAuthChallengePerformDefaultHandling"
    static let cancelChallenge = "NSURLSessionAuthChallengeCancelAuthenticationChallenge"

    /// The configuration entry that applies to `host` (as the URL wrote it, lower case):
    /// `getPinningConfigurationKeyForDomain`.
    public func configuration(for host: String) -> DomainPinning? {
        if let exact = domains.first(where: { $0.domain == host }) { return exact }
        return domains
            .filter { $0.includeSubdomains && Self.isSubdomain(host, of: $0.domain) }
            .max { $0.domain.utf8.count < $1.domain.utf8.count }
    }

    /// TrustKit's `isSubdomain(domain, subdomain)` (configuration_utils.m, 3.0.7).
    static func isSubdomain(_ host: String, of domain: String) -> Bool {
        let suffixes = PublicSuffixList.shared
        let registry = suffixes.registryLength(of: domain)
        let hostBytes = Array(host.utf8), domainBytes = Array(domain.utf8)
        guard hostBytes.count > domainBytes.count, registry > 0, domainBytes.count > registry,
              suffixes.registryLength(of: host) == registry,
              hostBytes.suffix(registry) == domainBytes.suffix(registry) else { return false }
        // "." + the domain's labels before its registry must end the host's labels before it.
        let domainLabel = [UInt8(ascii: ".")] + domainBytes.dropLast(registry + 1)
        let hostLabel = hostBytes.dropLast(registry + 1)
        return hostLabel.count >= domainLabel.count && hostLabel.suffix(domainLabel.count).elementsEqual(domainLabel)
    }

    /// The `TSKPublicKeyHashes` of every domain.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        domains.flatMap(\.publicKeyHashes).pinsKey(of: certificate)
    }

    /// Why no TrustKit domain covers `host`: none equal to it, nor a parent with `TSKIncludeSubdomains`.
    public func uncoveredReason(host: HostName) -> String? {
        if let entry = configuration(for: host.description), entry.excludeSubdomainFromParentPolicy {
            return "its TrustKit entry has TSKExcludeSubdomainFromParentPolicy, so TrustKit leaves it to the system's default handling"
        }
        return configuration(for: host.description) != nil ? nil
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
            return record.finish(evaluation.isValid ? .accept : .reject, disposition: Self.performDefaultHandling)
        }
        guard let entry = configuration(for: host) else {
            if trust.hasTrailingDot, let dotless = configuration(for: trust.host.description), !dotless.excludeSubdomainFromParentPolicy {
                return defaultHandling("none (TSKTrustDecisionDomainNotPinned): \(host) as written is not \(dotless.domain), and its trailing dot changes the registry length, so TSKIncludeSubdomains does not cover it either",
                                       weakness: .trailingDotHost)
            }
            return defaultHandling("none (TSKTrustDecisionDomainNotPinned)")
        }
        var scope = entry.domain == host ? "domain \(entry.domain)" : "domain \(entry.domain) with TSKIncludeSubdomains"
        let parents = entry.domain == host ? [] : domains.filter { $0.includeSubdomains && Self.isSubdomain(host, of: $0.domain) }
        if parents.count > 1 {
            let names = parents.map(\.domain).sorted().joined(separator: ", ")
            scope += "; \(parents.count) domains with TSKIncludeSubdomains cover \(host) (\(names)): TrustKit takes the longest match"
        }
        if entry.excludeSubdomainFromParentPolicy {
            let parent = configuration(for: "a" + entry.domain).map { " of \($0.domain)" } ?? ""
            return defaultHandling("\(scope) has TSKExcludeSubdomainFromParentPolicy: it is left out of the policy\(parent), TSKTrustDecisionDomainNotPinned")
        }
        if let expiry = entry.expirationDate, expiry < trust.time {
            return defaultHandling("\(scope) stopped being pinned at TSKExpirationDate \(ISO8601DateFormatter().string(from: expiry)), TSKTrustDecisionDomainNotPinned")
        }
        record.step("pinning configuration for \(host)", "\(scope), \(entry.publicKeyHashes.count) pins, TSKEnforcePinning \(yes(entry.enforcePinning))")

        let evaluation = trust.evaluate(policy, anchors: anchors)
        record.use(evaluation)
        record.step("evaluation with the \(policy) against \(anchors.summary)", evaluation.outcomeSummary)
        guard evaluation.isValid else {
            record.step("validation result", "reject: TSKTrustEvaluationFailedInvalidCertificateChain blocks the connection even without enforcement")
            return record.finish(.reject, disposition: Self.cancelChallenge)
        }
        let action = "TSKPublicKeyHashes over the evaluated chain (\(evaluation.builtChain.countText))"
        if record.matchSPKIPins(entry.publicKeyHashes, over: evaluation.builtChain, step: action) {
            return record.finish(.accept, disposition: Self.useCredential)
        }
        let reports = entry.reportURIs.isEmpty ? "" : "; a pin failure report goes to \(entry.reportURIs.joined(separator: ", "))"
        if entry.enforcePinning {
            record.step(action, "reject: TSKTrustEvaluationFailedNoMatchingPin with TSKEnforcePinning YES\(reports)")
            return record.finish(.reject, disposition: Self.cancelChallenge)
        }
        record.step(action, "report only: no pin matched, but TSKEnforcePinning is NO so the connection proceeds\(reports)")
        return record.finish(.reportOnly, disposition: Self.useCredential)
    }
}
