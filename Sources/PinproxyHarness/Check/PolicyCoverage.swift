import PinproxyCertificates
import PinproxyPinning

/// Whether a policy pins anything for the world's host, looked up as each library looks it up,
/// so a check of a host the policy does not cover says so before its rows do.
///
/// What covers a host, per family:
/// - OkHttp: a `CertificatePinner` pattern (`host`, `*.host`, `**.host`) that matches it;
/// - TrustKit: a domain equal to it, or a parent domain with `TSKIncludeSubdomains`;
/// - Android: the `domain-config` that matches it (exact, else the longest `includeSubdomains`
///   match) having a `pin-set`, its own or an enclosing one's;
/// - Alamofire: an evaluator under the host as its key (keys are exact strings);
/// - AFNetworking, curl and custom anchors apply to every connection made with them: no note.
///
/// The note changes no verdict: the rows still show what the library does with an unpinned host.
public enum PolicyCoverage {
    /// `the policy pins nothing for other.example.com: …`, or nil when it covers `host`.
    public static func note(_ policy: any PinningPolicy, host: HostName) -> String? {
        let name = host.description
        let why: String?
        switch policy {
        case let okhttp as OkHttpPolicy:
            why = okhttp.pins.contains { $0.matches(name) } ? nil
                : "no CertificatePinner pattern (\(list(okhttp.pins.map(\.pattern)))) matches it, so OkHttp checks the platform's trust alone"
        case let trustkit as TrustKitPolicy:
            if let entry = trustkit.configuration(for: name), entry.excludeSubdomainFromParentPolicy {
                why = "its TrustKit entry has TSKExcludeSubdomainFromParentPolicy, so TrustKit leaves it to the system's default handling"
                break
            }
            why = trustkit.configuration(for: name) != nil ? nil
                : "no TrustKit domain (\(list(trustkit.domains.map { $0.domain + ($0.includeSubdomains ? " with includeSubdomains" : "") }))) covers it, so TrustKit leaves it to the system's default handling"
        case let android as AndroidPolicy:
            why = androidGap(android.config, host: name)
        case let alamofire as AlamofirePolicy:
            why = alamofire.evaluators[name] != nil ? nil
                : "no Alamofire evaluator has it as its key (\(list(alamofire.evaluators.keys.sorted())))"
                    + (alamofire.allHostsMustBeEvaluated
                        ? ", so allHostsMustBeEvaluated refuses every connection to it, the genuine server's too"
                        : ", so URLSession's default handling applies")
        default:
            why = nil
        }
        return why.map { "the policy pins nothing for \(name): \($0); the rows below are those of an unpinned host" }
    }

    /// Why an Android network security config pins nothing for `host`, or nil when it does.
    static func androidGap(_ config: NetworkSecurityConfig, host: String) -> String? {
        guard let path = matchingDomainConfig(config, host: host) else {
            return "no domain-config names it (\(list(domainNames(config.domainConfigs)))), so base-config applies, without a pin-set"
        }
        if path.contains(where: { $0.pinSet != nil }) { return nil }
        return "its domain-config (line \(path.last!.line)) has no pin-set, nor does any enclosing one"
    }

    /// The matching domain-config with its ancestors, outermost first: an exact `<domain>` wins,
    /// else the longest one with `includeSubdomains` (Android's `getConfigForHostname`).
    static func matchingDomainConfig(_ config: NetworkSecurityConfig, host: String) -> [NetworkSecurityConfig.DomainConfig]? {
        var best: (path: [NetworkSecurityConfig.DomainConfig], length: Int, exact: Bool)?
        func visit(_ domainConfig: NetworkSecurityConfig.DomainConfig, ancestors: [NetworkSecurityConfig.DomainConfig]) {
            let path = ancestors + [domainConfig]
            for domain in domainConfig.domains {
                let exact = domain.name == host
                guard exact || (domain.includeSubdomains && host.hasSuffix("." + domain.name)) else { continue }
                if let current = best, current.exact && !exact || (current.exact == exact && current.length >= domain.name.count) { continue }
                best = (path, domain.name.count, exact)
            }
            domainConfig.children.forEach { visit($0, ancestors: path) }
        }
        config.domainConfigs.forEach { visit($0, ancestors: []) }
        return best?.path
    }

    private static func domainNames(_ configs: [NetworkSecurityConfig.DomainConfig]) -> [String] {
        configs.flatMap { $0.domains.map(\.name) + domainNames($0.children) }
    }

    /// `a, b, c` (each once, in order), or `none` for an empty list.
    private static func list(_ items: [String]) -> String {
        var seen = Set<String>()
        let distinct = items.filter { seen.insert($0).inserted }
        return distinct.isEmpty ? "none" : distinct.joined(separator: ", ")
    }
}
