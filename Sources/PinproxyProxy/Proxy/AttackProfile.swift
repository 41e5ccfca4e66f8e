import Foundation
import PinproxyCertificates

/// How the proxy serves a client that asked for a host: the name of an attack.
///
/// `forge` (the default) shows a leaf forged by the proxy CA; `passthrough`
/// tunnels the genuine connection untouched. Further profiles (stuff,
/// self-signed, wrong-host, expired, misissued, fake-parent) are added by
/// registering an ``AttackStrategy`` under a new name in an ``AttackCatalog``.
public struct AttackProfile: Hashable, Sendable, Codable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    public init(from decoder: any Decoder) throws { name = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    /// A leaf for the host signed by the proxy CA.
    public static let forge = AttackProfile("forge")
    /// The genuine chain, untouched: the connection is tunnelled.
    public static let passthrough = AttackProfile("passthrough")
}

/// What an attack needs to decide what to show the client.
public struct AttackContext: Sendable {
    /// The host the client asked for (SNI, else the CONNECT host).
    public var host: HostName
    /// The genuine chain the upstream presented (leaf first); empty when unknown.
    public var upstreamChain: [Certificate]
    /// Forged leaves, cached.
    public var leaves: LeafCache
    /// The proxy's CA.
    public var authority: CertificateAuthority
}

/// The certificate, key and chain a client is shown.
public struct PresentedChain: Sendable {
    public var certificate: Certificate
    public var privateKey: PrivateKey
    /// Certificates sent after the leaf.
    public var chain: [Certificate]

    public init(certificate: Certificate, privateKey: PrivateKey, chain: [Certificate]) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }
}

/// One way of serving the client side of an intercepted connection.
public protocol AttackStrategy: Sendable {
    /// Whether the connection is intercepted at all (false: tunnelled raw).
    var intercepts: Bool { get }
    /// The chain to present; only called when ``intercepts`` is true.
    func present(_ context: AttackContext) throws -> PresentedChain
}

/// The classic interception: a leaf for the host, imitating the genuine
/// certificate's names, signed by the proxy CA.
public struct ForgeAttack: AttackStrategy {
    public init() {}
    public var intercepts: Bool { true }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let leaf = try context.leaves.leaf(for: LeafRequest(names: [context.host], imitating: context.upstreamChain.first))
        return PresentedChain(certificate: leaf.certificate, privateKey: leaf.privateKey, chain: Array(leaf.chain.dropFirst()))
    }
}

/// No interception: bytes are relayed as they are.
public struct PassthroughAttack: AttackStrategy {
    public init() {}
    public var intercepts: Bool { false }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        throw PinproxyError(.invalidArgument, "passthrough presents no certificate")
    }
}

/// The attack strategies by profile name.
public struct AttackCatalog: Sendable {
    private var strategies: [AttackProfile: any AttackStrategy]

    /// `forge` and `passthrough`.
    public static let standard = AttackCatalog(strategies: [.forge: ForgeAttack(), .passthrough: PassthroughAttack()])

    public init(strategies: [AttackProfile: any AttackStrategy]) { self.strategies = strategies }

    public mutating func register(_ profile: AttackProfile, _ strategy: any AttackStrategy) {
        strategies[profile] = strategy
    }

    public func strategy(for profile: AttackProfile) -> (any AttackStrategy)? { strategies[profile] }

    public var profiles: [AttackProfile] { strategies.keys.sorted { $0.name < $1.name } }
}

/// A host pattern with OkHttp's semantics: `host` exactly, `*.host` exactly
/// one more label, `**.host` any number of labels including none.
public struct HostPattern: Hashable, Sendable, Codable, CustomStringConvertible {
    public let text: String
    private let suffix: String
    private enum Kind: Hashable { case exact, oneLabel, anyLabels }
    private let kind: Kind

    public init(parsing text: String) throws {
        let lower = text.lowercased()
        let body: String
        if lower.hasPrefix("**.") { kind = .anyLabels; body = String(lower.dropFirst(3)) }
        else if lower.hasPrefix("*.") { kind = .oneLabel; body = String(lower.dropFirst(2)) }
        else { kind = .exact; body = lower }
        guard let host = try? HostName(validating: body), !host.isWildcard else {
            throw PinproxyError(.invalidArgument, "invalid host pattern '\(text)': use host, *.host or **.host")
        }
        self.text = text
        self.suffix = host.description
    }

    public init(from decoder: any Decoder) throws {
        try self.init(parsing: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(text)
    }

    public func matches(_ host: HostName) -> Bool {
        let name = host.description
        switch kind {
        case .exact: return name == suffix
        case .anyLabels: return name == suffix || name.hasSuffix("." + suffix)
        case .oneLabel:
            guard name.hasSuffix("." + suffix) else { return false }
            let head = name.dropLast(suffix.count + 1)
            return !head.isEmpty && !head.contains(".")
        }
    }

    public var description: String { text }
}

/// Which attack serves which host; changeable at run time through `PUT /rules`.
public struct InterceptionRules: Sendable, Codable, Equatable {
    /// One host pattern and the profile that serves it.
    public struct Rule: Sendable, Codable, Equatable {
        public var pattern: HostPattern
        public var profile: AttackProfile
        public init(pattern: HostPattern, profile: AttackProfile) {
            self.pattern = pattern
            self.profile = profile
        }

        private enum CodingKeys: String, CodingKey, CaseIterable { case pattern, profile }

        public init(from decoder: any Decoder) throws {
            try RulesKeys.refuseUnknown(in: decoder, known: CodingKeys.allCases.map(\.rawValue), what: "a rule")
            let c = try decoder.container(keyedBy: CodingKeys.self)
            pattern = try c.decode(HostPattern.self, forKey: .pattern)
            profile = try c.decode(AttackProfile.self, forKey: .profile)
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

    /// Checks every named profile exists in `catalog`.
    public func validate(against catalog: AttackCatalog) throws {
        for profile in [defaultProfile] + rules.map(\.profile) where catalog.strategy(for: profile) == nil {
            throw PinproxyError(.invalidArgument, "unknown attack profile '\(profile)'; known: \(catalog.profiles.map(\.name).joined(separator: ", "))")
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
