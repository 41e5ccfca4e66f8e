import Foundation
import PinproxyCertificates

/// What attacks draw on beyond the host and the genuine chain, shared by every
/// connection of one proxy: the proxy CA and its leaf cache, the second CAs,
/// and the stand-in certificates of `fake-parent`.
///
/// Every leaf, whatever the profile, is cached in ``leaves`` under the
/// profile's name, the host and the genuine certificate (for `fake-parent`,
/// the whole genuine chain), so a host costs its signatures once per profile.
public final class AttackResources: Sendable {
    /// The proxy's CA.
    public let authority: CertificateAuthority
    /// Forges the proxy CA's leaves.
    public let forger: LeafForger
    /// Every forged leaf, of every profile.
    public let leaves: LeafCache
    /// Forges the misissuing CA's leaves (`misissued`), when one was given.
    public let misissuing: LeafForger?
    /// The forgers of the rotation profiles, when the team's CA was given.
    public let rotation: RotationAuthorities?
    /// The time attacks compute validity windows from.
    public let clock: @Sendable () -> Date
    let fakeParents: FakeParents
    private let untrusted: Locked<LeafForger?>

    /// - Parameters:
    ///   - misissuingAuthority: the second CA of `misissued`, a CA the device
    ///     under test trusts as if it were public; nil leaves that profile
    ///     unavailable.
    ///   - untrustedAuthority: the CA of `untrusted-ca`; nil generates one in
    ///     memory when it is first needed, once for the life of these resources.
    ///   - rotationAuthorities: the team's own CAs for the `rotate-…` profiles.
    public init(
        authority: CertificateAuthority, misissuingAuthority: CertificateAuthority? = nil,
        untrustedAuthority: CertificateAuthority? = nil, rotationAuthorities: [CertificateAuthority] = [],
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.authority = authority
        self.clock = clock
        forger = try LeafForger(authority: authority, clock: clock)
        leaves = LeafCache(forger: forger, clock: clock)
        misissuing = try misissuingAuthority.map { try LeafForger(authority: $0, clock: clock) }
        untrusted = Locked(try untrustedAuthority.map { try LeafForger(authority: $0, clock: clock) })
        fakeParents = try FakeParents()
        rotation = rotationAuthorities.isEmpty ? nil : try RotationAuthorities(rotationAuthorities, clock: clock)
    }

    /// The forger of the `untrusted-ca` CA, generating that CA on first use.
    public func untrustedForger() throws -> LeafForger {
        try untrusted.withLock { forger in
            if let forger { return forger }
            var options = CertificateAuthority.Options()
            options.commonName = "pinproxy untrusted CA - trusted by no one"
            let made = try LeafForger(authority: try CertificateAuthority.create(options, now: clock()), clock: clock)
            forger = made
            return made
        }
    }

    /// The `untrusted-ca` CA, once generated (or given).
    public var untrustedAuthority: CertificateAuthority? {
        untrusted.withLock { $0?.authority }
    }
}
