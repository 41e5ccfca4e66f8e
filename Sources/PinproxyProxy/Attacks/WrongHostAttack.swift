import Foundation
import PinproxyCertificates

/// A proxy-CA leaf valid in every respect but the name: it names a host the
/// client did not ask for (nogotofail's `invalidhostname`, badssl.com's
/// `wrong.host`). One signature per host.
///
/// The name is a child of the host, `pinproxy-wrong-host.HOST`: name
/// constraints are subtrees, so a CA allowed to sign for the host is allowed
/// to sign for every name under it, and the leaf stays valid under them. A
/// sibling (`pinproxy-wrong-host.PARENT`) would fall outside a constraint that
/// names exactly the host, and fail for two reasons. An IP host gets its
/// neighbour (the last bit flipped), inside any network wider than one
/// address; the fallback is `pinproxy-wrong-host.invalid`, which a CA
/// constrained to IP networks may still sign (its DNS names are confined to
/// the reserved `invalid` domain). The genuine names are not imitated: one of
/// them could cover the host.
public struct WrongHostAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a proxy-CA leaf valid in every respect but the name (it names pinproxy-wrong-host.HOST)" }
    public var catches: String { "host names not checked (CVE-2015-3996, allow-all verifiers)" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let name = try Self.wrongName(for: context.host, authority: context.authority)
        let key = LeafCacheKey(names: [context.host], imitated: nil, variant: AttackProfile.wrongHost.name)
        return PresentedChain(try context.leaves.leaf(for: key) { try context.resources.forger.forge(LeafRequest(name)) })
    }

    /// The name the leaf carries instead of `host`: the first candidate the CA may sign for.
    public static func wrongName(for host: HostName, authority: CertificateAuthority) throws -> HostName {
        var candidates: [HostName] = []
        switch host {
        case .dns(let name):
            if let child = try? HostName(validating: "pinproxy-wrong-host." + name) { candidates.append(child) }
        case .ipv4(var bytes):
            bytes[bytes.count - 1] ^= 1
            candidates.append(.ipv4(bytes))
        case .ipv6(var bytes):
            bytes[bytes.count - 1] ^= 1
            candidates.append(.ipv6(bytes))
        }
        candidates.append(.dns("pinproxy-wrong-host.invalid"))
        guard let name = candidates.first(where: { $0 != host && authority.permits([$0]) }) else {
            throw PinproxyError(.invalidHostName,
                "wrong-host: the proxy CA's name constraints permit no other name near \(host) (tried \(candidates.map(\.description).joined(separator: ", ")))")
        }
        return name
    }
}
