import Foundation
import PinproxyCertificates

/// Which attack serves which host; changeable at run time through `PUT /rules`.
public struct InterceptionRules: Sendable, Codable, Equatable {
    /// One host pattern and the profile that serves it.
    public struct Rule: Sendable, Codable, Equatable {
        public var pattern: HostPattern
        public var profile: AttackProfile
        /// Who set the rule, shown by `GET /rules` and kept as given: `pinproxy check` marks its
        /// own rules `pinproxy check pid N`, so a later check can remove those a killed one left.
        public var owner: String?
        public init(pattern: HostPattern, profile: AttackProfile, owner: String? = nil) {
            self.pattern = pattern
            self.profile = profile
            self.owner = owner
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case pattern, profile, owner }

        public init(from decoder: any Decoder) throws {
            try RulesKeys.refuseUnknown(in: decoder, known: CodingKeys.allCases.map(\.rawValue), what: "a rule")
            let c = try decoder.container(keyedBy: CodingKeys.self)
            pattern = try c.decode(HostPattern.self, forKey: .pattern)
            profile = try c.decode(AttackProfile.self, forKey: .profile)
            owner = try c.decodeIfPresent(String.self, forKey: .owner)
        }
    }

    /// The profile for hosts no rule matches.
    public var defaultProfile: AttackProfile
    /// Hosts tunnelled without interception (a shorthand for passthrough rules).
    public var passthrough: [HostPattern]
    /// Per-host rules; the first match wins, checked after ``passthrough``.
    public var rules: [Rule]

    public init(defaultProfile: AttackProfile = .forge, passthrough: [HostPattern] = [], rules: [Rule] = []) {
        self.defaultProfile = defaultProfile
        self.passthrough = passthrough
        self.rules = rules
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case defaultProfile, passthrough, rules }

    /// Decodes rules; missing fields take their defaults (`forge`, none, none).
    /// An unknown key is an error, as in policy files: a misspelt
    /// `passtrough` must not silently leave every host intercepted.
    public init(from decoder: any Decoder) throws {
        try RulesKeys.refuseUnknown(in: decoder, known: CodingKeys.allCases.map(\.rawValue), what: "the rules")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        defaultProfile = try c.decodeIfPresent(AttackProfile.self, forKey: .defaultProfile) ?? .forge
        passthrough = try c.decodeIfPresent([HostPattern].self, forKey: .passthrough) ?? []
        rules = try c.decodeIfPresent([Rule].self, forKey: .rules) ?? []
    }

    /// The profile serving `host`.
    public func profile(for host: HostName) -> AttackProfile {
        if passthrough.contains(where: { $0.matches(host) }) { return .passthrough }
        return rules.first { $0.pattern.matches(host) }?.profile ?? defaultProfile
    }

    /// Every profile the rules name, the default first.
    public var namedProfiles: [AttackProfile] { [defaultProfile] + rules.map(\.profile) }

    /// Checks every named profile exists in `catalog`.
    public func validate(against catalog: AttackCatalog) throws {
        for profile in namedProfiles { _ = try catalog.requireStrategy(for: profile) }
    }

    /// Checks every named profile exists in the configuration's catalog and can
    /// run with it (`misissued` needs a misissuing CA).
    public func validate(for configuration: ProxyConfiguration) throws {
        for profile in namedProfiles {
            if let why = try configuration.catalog.requireStrategy(for: profile).unavailability(in: configuration) {
                throw PinproxyError(.invalidArgument, why)
            }
        }
    }
}

/// Strict key checking for the rules JSON.
enum RulesKeys {
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    static func refuseUnknown(in decoder: any Decoder, known: [String], what: String) throws {
        guard let c = try? decoder.container(keyedBy: AnyKey.self) else { return }
        if let unknown = c.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw PinproxyError(.invalidArgument, "unknown key '\(unknown)' in \(what); known keys: \(known.joined(separator: ", "))")
        }
    }
}
