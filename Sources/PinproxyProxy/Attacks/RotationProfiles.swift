import Foundation
import PinproxyCertificates

/// Legitimate changes of a real app's certificate, as profiles: with the CA that issues the
/// team's staging or test certificates (`serve --rotation-ca DIR`, a CA directory made by
/// `pinproxy ca init` or `ca import`), the proxy shows the app what the next rotation will
/// look like, per host and switchable at run time like the attacks. An app that refuses
/// one would go offline on that change; the events and `/health` name the profile.
///
/// The profiles are named `rotate-…`; the harness (`pinproxy check`) leaves them out of its
/// attack rows, as its own world rotates its own chain.
public struct RotationAuthorities: Sendable {
    /// Leaves with a fresh key from the team's CA: `rotate-rekey`.
    let rekey: LeafForger
    /// Leaves from an intermediate made at start under the team's CA: `rotate-new-intermediate`.
    let newIntermediate: LeafForger
    /// Leaves from the team's second CA: `rotate-ca-switch`; nil without one.
    let secondCA: LeafForger?
    /// The team's CA certificate, sent after an intermediate it issued.
    let issuer: Certificate

    /// `authorities`: the team's CA, then optionally a second one it also owns.
    public init(_ authorities: [CertificateAuthority], clock: @escaping @Sendable () -> Date) throws {
        guard let first = authorities.first else { throw PinproxyError(.invalidArgument, "a rotation needs the team's CA (--rotation-ca DIR)") }
        rekey = try LeafForger(authority: first, keyStrategy: .freshPerLeaf, clock: clock)
        let key = try PrivateKey.generate(.ecP256)
        let start = clock().addingTimeInterval(-86_400)
        let end = min(start.addingTimeInterval(365 * 86_400), first.certificate.notAfter)
        let intermediate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "pinproxy rotation: a new intermediate",
                                                             organization: first.certificate.subjectOrganization),
                                  notBefore: start, notAfter: end, pathLength: 0),
            subjectKey: key, signer: .authority(first.certificate, first.privateKey))
        newIntermediate = try LeafForger(authority: try CertificateAuthority(certificate: intermediate, privateKey: key),
                                         keyStrategy: .freshPerLeaf, clock: clock)
        secondCA = try authorities.dropFirst().first.map { try LeafForger(authority: $0, keyStrategy: .freshPerLeaf, clock: clock) }
        issuer = first.certificate
    }

    /// Why rotation profiles are unavailable.
    static let needsCA = "rotation profiles need the CA that issues your staging certificates: start the proxy with --rotation-ca DIR (a CA directory made by 'pinproxy ca init' or 'pinproxy ca import')"
}

extension AttackProfile {
    /// The leaf re-keyed by the team's CA.
    public static let rotateRekey = AttackProfile("rotate-rekey")
    /// The leaf from a new intermediate of the team's CA.
    public static let rotateNewIntermediate = AttackProfile("rotate-new-intermediate")
    /// The leaf from the team's second CA.
    public static let rotateCASwitch = AttackProfile("rotate-ca-switch")

    /// Whether the profile shows a legitimate change (`rotate-…`) rather than an attack.
    public var isRotation: Bool { name.hasPrefix("rotate-") }
}

/// A rotation profile: which forger of ``RotationAuthorities`` signs, and what follows the leaf.
struct RotationProfile: AttackStrategy {
    enum Change: Sendable { case rekey, newIntermediate, caSwitch }
    let change: Change

    var shows: String {
        switch change {
        case .rekey: return "the leaf re-keyed: a new key, issued by your CA (--rotation-ca)"
        case .newIntermediate: return "the leaf from a new intermediate under your CA (--rotation-ca)"
        case .caSwitch: return "the leaf from your second CA (a second --rotation-ca)"
        }
    }

    var catches: String {
        switch change {
        case .rekey: return "nothing: a legitimate re-key; a client that refuses it pins the old leaf key (an outage)"
        case .newIntermediate: return "nothing: a legitimate new intermediate; a refusal means a pin on the old intermediate with no backup (an outage)"
        case .caSwitch: return "nothing: a legitimate CA switch; a refusal means pins on the old CA (an outage)"
        }
    }

    func unavailability(in configuration: ProxyConfiguration) -> String? {
        if configuration.rotationAuthorities.isEmpty { return RotationAuthorities.needsCA }
        if change == .caSwitch && configuration.rotationAuthorities.count < 2 {
            return Self.needsSecondCA
        }
        return nil
    }

    func present(_ context: AttackContext) throws -> PresentedChain {
        guard let rotation = context.resources.rotation else { throw PinproxyError(.invalidArgument, RotationAuthorities.needsCA) }
        let request = context.imitatingRequest
        let (profile, forger): (AttackProfile, LeafForger)
        switch change {
        case .rekey: (profile, forger) = (.rotateRekey, rotation.rekey)
        case .newIntermediate: (profile, forger) = (.rotateNewIntermediate, rotation.newIntermediate)
        case .caSwitch:
            guard let second = rotation.secondCA else { throw PinproxyError(.invalidArgument, Self.needsSecondCA) }
            (profile, forger) = (.rotateCASwitch, second)
        }
        let leaf = try context.leaves.leaf(for: context.cacheKey(profile)) { try forger.forge(request) }
        var presented = PresentedChain(leaf)
        // The new intermediate is no one's anchor: the team's CA follows it, as a server sends its chain.
        if change == .newIntermediate { presented.chain.append(rotation.issuer) }
        return presented
    }

    static let needsSecondCA = "rotate-ca-switch needs a second CA you own: give --rotation-ca twice (your CA, then the one you move to)"

    /// The three rotation profiles, for a catalog.
    static let entries: [(AttackProfile, any AttackStrategy)] = [
        (.rotateRekey, RotationProfile(change: .rekey)),
        (.rotateNewIntermediate, RotationProfile(change: .newIntermediate)),
        (.rotateCASwitch, RotationProfile(change: .caSwitch)),
    ]
}

extension AttackCatalog {
    /// The standard catalog with the rotation profiles after it (`serve --rotation-ca`).
    public static let withRotations: AttackCatalog = {
        var catalog = AttackCatalog.standard
        for (profile, strategy) in RotationProfile.entries { catalog.register(profile, strategy) }
        return catalog
    }()
}
