import Foundation
import PinproxyCertificates

/// The attack strategies by profile name, in the order help texts list them.
public struct AttackCatalog: Sendable {
    private var strategies: [AttackProfile: any AttackStrategy]
    /// Registration order.
    public private(set) var profiles: [AttackProfile]

    /// The ten profiles: passthrough, forge, stuff, self-signed, wrong-host,
    /// expired, not-yet-valid, untrusted-ca, misissued, fake-parent.
    public static let standard = AttackCatalog([
        (.passthrough, PassthroughAttack()),
        (.forge, ForgeAttack()),
        (.stuff, StuffAttack()),
        (.selfSigned, SelfSignedAttack()),
        (.wrongHost, WrongHostAttack()),
        (.expired, ExpiredAttack()),
        (.notYetValid, NotYetValidAttack()),
        (.untrustedCA, UntrustedCAAttack()),
        (.misissued, MisissuedAttack()),
        (.fakeParent, FakeParentAttack()),
    ])

    /// A catalog of `entries`, in that order.
    public init(_ entries: [(AttackProfile, any AttackStrategy)]) {
        strategies = [:]
        profiles = []
        for (profile, strategy) in entries { register(profile, strategy) }
    }

    /// A catalog of `strategies`, ordered by name.
    public init(strategies: [AttackProfile: any AttackStrategy]) {
        self.init(strategies.sorted { $0.key.name < $1.key.name }.map { ($0.key, $0.value) })
    }

    /// Adds `strategy` under `profile`, or replaces the one registered there.
    public mutating func register(_ profile: AttackProfile, _ strategy: any AttackStrategy) {
        if strategies.updateValue(strategy, forKey: profile) == nil { profiles.append(profile) }
    }

    public func strategy(for profile: AttackProfile) -> (any AttackStrategy)? { strategies[profile] }

    /// The strategy for `profile`, or an error that lists the known names.
    public func requireStrategy(for profile: AttackProfile) throws -> any AttackStrategy {
        guard let strategy = strategies[profile] else {
            // A rotation profile this catalog was made without: the daemon runs without --rotation-ca.
            if RotationProfile.entries.contains(where: { $0.0 == profile }) {
                throw PinproxyError(.invalidArgument, "the \(profile) profile is not enabled: \(RotationAuthorities.needsCA)")
            }
            let names = profiles.map(\.name)
            throw PinproxyError(.invalidArgument, "unknown attack profile '\(profile)'\(NearestName.hint(for: profile.name, among: names)); known: \(names.joined(separator: ", "))")
        }
        return strategy
    }

    /// One line per profile, `name  what it catches`, for help texts.
    public var helpLines: [String] {
        let width = profiles.map(\.name.count).max() ?? 0
        return profiles.compactMap { profile in
            strategies[profile].map { "\(profile.name.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.catches)" }
        }
    }
}
