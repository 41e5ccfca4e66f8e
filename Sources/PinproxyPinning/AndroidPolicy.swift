import Foundation
import PinproxyCertificates

/// Android 7+ (API 24+) network security config evaluation.
///
/// The config for a host is the `domain-config` with an exact `<domain>` match,
/// else the one with the longest `includeSubdomains` match; a nested config
/// inherits what it does not set from its parents, then from `base-config`, then
/// from the platform default: system anchors only for apps targeting API 24+,
/// system and user anchors below. The chain must validate against the chosen
/// anchors with the host name. Then, unless the pin-set has expired or the chain
/// ends at an anchor whose `<certificates>` has `overridePins="true"`, a
/// certificate of the validated chain must have one of the pinned SPKI hashes.
/// `debug-overrides` is ignored (release build). `<certificateTransparency>` is reported in the
/// verdict but not checked: pinproxy does not model Certificate Transparency.
///
/// The host is looked up without a trailing dot (`ApplicationConfig.getConfigForHostname`
/// strips it), and matched against subjectAltNames only, under Conscrypt's algorithm floor.
public struct AndroidPolicy: PinningPolicy {
    public var config: NetworkSecurityConfig
    public var targetSdkVersion: Int

    public init(config: NetworkSecurityConfig, targetSdkVersion: Int = 24) {
        self.config = config
        self.targetSdkVersion = targetSdkVersion
    }

    public var family: PolicyFamily { .androidNSC }
    public var profile: String { "API \(targetSdkVersion)" }

    /// The matching domain-config with its ancestors (outermost first), and the matched domain.
    func match(_ host: String) -> (path: [NetworkSecurityConfig.DomainConfig], domain: NetworkSecurityConfig.Domain)? {
        var best: (path: [NetworkSecurityConfig.DomainConfig], domain: NetworkSecurityConfig.Domain, exact: Bool)?
        func visit(_ config: NetworkSecurityConfig.DomainConfig, ancestors: [NetworkSecurityConfig.DomainConfig]) {
            let path = ancestors + [config]
            for domain in config.domains {
                let exact = domain.name == host
                let sub = domain.includeSubdomains && host.hasSuffix("." + domain.name)
                guard exact || sub else { continue }
                if let current = best {
                    if current.exact && !exact { continue }
                    if current.exact == exact && current.domain.name.count >= domain.name.count { continue }
                }
                best = (path, domain, exact)
            }
            for child in config.children { visit(child, ancestors: path) }
        }
        for config in config.domainConfigs { visit(config, ancestors: []) }
        return best.map { ($0.path, $0.domain) }
    }

    /// The pins of every `pin-set` and the certificates of every resource `trust-anchors`
    /// source (base-config's too), for any domain.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        var pins: [SPKIPin] = []
        var anchors = (config.baseTrustAnchors ?? []).flatMap(\.certificates)
        func visit(_ domainConfig: NetworkSecurityConfig.DomainConfig) {
            pins += domainConfig.pinSet?.pins ?? []
            anchors += (domainConfig.trustAnchors ?? []).flatMap(\.certificates)
            domainConfig.children.forEach(visit)
        }
        config.domainConfigs.forEach(visit)
        return pins.pinsKey(of: certificate) || anchors.holdsKey(of: certificate)
    }

    /// Why the `domain-config` that matches `host` (exact, else the longest `includeSubdomains`
    /// match: ``match(_:)``) has no `pin-set`, its own or an enclosing one's.
    public func uncoveredReason(host: HostName) -> String? {
        guard let path = match(host.description)?.path else {
            return "no domain-config names it (\(Self.domainNames(config.domainConfigs).distinctList)), so base-config applies, without a pin-set"
        }
        guard let config = path.last(where: { $0.pinSet != nil }), let pinSet = config.pinSet else {
            return "its domain-config (line \(path.last!.line)) has no pin-set, nor does any enclosing one"
        }
        if pinSet.pins.isEmpty { return "the pin-set that applies to it (line \(config.line)) holds no pin, which Android reads as no pinning" }
        return nil
    }

    /// Whether Android requires Certificate Transparency for the matched config, and why; nil when
    /// no `<certificateTransparency>` is written anywhere on the way to base-config. As
    /// `NetworkSecurityConfig.Builder.getCertificateTransparencyVerificationRequired`: a config's own
    /// setting wins; without one, a config whose own `<trust-anchors>` name user or inline (resource)
    /// certificates does not require it; otherwise its parent decides, base-config last.
    private func certificateTransparency(_ path: [NetworkSecurityConfig.DomainConfig]) -> (Bool, String)? {
        guard config.baseCertificateTransparency != nil || path.contains(where: { $0.certificateTransparency != nil }) else { return nil }
        func disablesCT(_ sources: [NetworkSecurityConfig.CertificatesSource]?) -> Bool {
            sources?.contains { $0.kind != .system } ?? false
        }
        for (depth, domainConfig) in path.enumerated().reversed() {
            let name = depth == path.count - 1 ? "the domain-config" : "an enclosing domain-config"
            if let ct = domainConfig.certificateTransparency { return (ct, "enabled=\"\(ct)\" in \(name)") }
            if disablesCT(domainConfig.trustAnchors) { return (false, "not inherited: \(name) trusts user or inline certificates") }
        }
        if let ct = config.baseCertificateTransparency { return (ct, "enabled=\"\(ct)\" in base-config") }
        return (false, "not required by default")
    }

    private static func domainNames(_ configs: [NetworkSecurityConfig.DomainConfig]) -> [String] {
        configs.flatMap { $0.domains.map(\.name) + domainNames($0.children) }
    }

    /// Inside the handshake: the network security config's trust manager checks the chain and
    /// the pin set together in `checkServerTrusted`.
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint { .handshake }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let host = trust.host.description
        if config.hasDebugOverrides {
            record.step("debug-overrides", "ignored: the app is a release build (android:debuggable false)")
        }
        let matched = match(host)
        let path = matched?.path ?? []
        if let matched {
            record.step("configuration for \(host)",
                        "domain-config at line \(matched.path.last!.line) (\(matched.domain.name)\(matched.domain.includeSubdomains && matched.domain.name != host ? " with includeSubdomains" : ""))")
        } else {
            record.step("configuration for \(host)", "no domain-config matches; base-config applies")
        }
        // Nearest setting wins: the matched config, its parents, base-config, the platform default.
        let sources: [NetworkSecurityConfig.CertificatesSource]
        let sourceOrigin: String
        if let i = path.lastIndex(where: { $0.trustAnchors != nil }) {
            sources = path[i].trustAnchors!
            sourceOrigin = i == path.count - 1 ? "the domain-config" : "an enclosing domain-config"
        } else if let base = config.baseTrustAnchors {
            sources = base
            sourceOrigin = "base-config"
        } else {
            sources = [.init(kind: .system, certificates: [], overridePins: false)]
                + (targetSdkVersion < 24 ? [.init(kind: .user, certificates: [], overridePins: false)] : [])
            sourceOrigin = "the platform default for API \(targetSdkVersion) (\(targetSdkVersion < 24 ? "system and user CAs" : "system CAs only; user-installed CAs are ignored"))"
        }
        var anchors = TrustAnchors()
        for source in sources {
            switch source.kind {
            case .system: anchors.system += trust.store.systemAnchors
            case .user: anchors.user += trust.store.userAnchors
            case .resource: anchors.application += source.certificates
            }
        }
        record.step("trust anchors", "from \(sourceOrigin): \(sources.map { $0.label + ($0.overridePins ? " (overridePins)" : "") }.joined(separator: ", "))")
        if let (ct, origin) = certificateTransparency(path) {
            record.step("<certificateTransparency> \(origin)",
                        ct ? "not modelled: Android 16+ then requires Signed Certificate Timestamps for the chain; pinproxy does not check Certificate Transparency, so a chain Android refuses for missing SCTs is judged here on trust and pins alone"
                           : "Certificate Transparency is not required for this host")
        }

        let evaluation = trust.evaluate(.ssl(host: trust.host, platform: .android), anchors: anchors)
        record.use(evaluation)
        record.step("chain validation and hostname verification for \(host) against \(anchors.summary)", evaluation.outcomeSummary)
        guard evaluation.isValid else {
            record.step("result", "reject: CertificateException / SSLPeerUnverifiedException")
            return record.finish(.reject)
        }

        guard let pinSet = path.last(where: { $0.pinSet != nil })?.pinSet else {
            record.step("pin-set", "none for this host; accept")
            return record.finish(.accept)
        }
        if pinSet.pins.isEmpty {
            record.step("pin-set", "holds no pin: nothing to enforce (NetworkSecurityTrustManager.checkPins returns for an empty set), accept")
            return record.finish(.accept)
        }
        if let expiration = pinSet.expiration, trust.time > expiration {
            record.step("pin-set", "expired on \(ISO8601DateFormatter().string(from: expiration)); pins are no longer enforced, accept")
            return record.finish(.accept)
        }
        let anchorCertificate = evaluation.builtChain.last!
        let overriding = sources.filter { source in
            guard source.overridePins else { return false }
            switch source.kind {
            case .system: return trust.store.systemAnchors.contains(anchorCertificate)
            case .user: return trust.store.userAnchors.contains(anchorCertificate)
            case .resource: return source.certificates.contains(anchorCertificate)
            }
        }
        if let source = overriding.first {
            record.step("pin-set", "skipped: the chain ends at \(ChainSummary.name(of: anchorCertificate)) from <certificates src=\"\(source.label)\" overridePins=\"true\">")
            return record.finish(.accept)
        }
        let action = "pin-set of \(pinSet.pins.count) over the validated chain (\(evaluation.builtChain.countText))"
        if record.matchSPKIPins(pinSet.pins, over: evaluation.builtChain, step: action) {
            return record.finish(.accept)
        }
        record.step(action, "reject: Pin verification failed")
        return record.finish(.reject)
    }
}
