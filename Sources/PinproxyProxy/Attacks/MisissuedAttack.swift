import Foundation
import PinproxyCertificates

/// A leaf for the host, imitating the genuine names, from a second CA the
/// device trusts as if it were public (`--misissuing-ca`): what a compromised
/// or coerced public CA issues. The chain validates on that device; only
/// pinning the leaf or its key (not that CA's root) refuses it. One signature
/// per host.
public struct MisissuedAttack: AttackStrategy {
    /// Why the profile is unavailable without a second CA.
    public static let needsCA =
        "the misissued profile needs a second CA: start the proxy with --misissuing-ca DIR (a CA directory made by 'pinproxy ca init --dir DIR')"

    public init() {}
    public var shows: String { "a leaf for the host from a second, device-trusted CA (--misissuing-ca DIR)" }
    public var catches: String { "no pinning: a trusted CA that misissues goes unnoticed" }
    public func unavailability(in configuration: ProxyConfiguration) -> String? {
        configuration.misissuingAuthority == nil ? Self.needsCA : nil
    }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        guard let forger = context.resources.misissuing else { throw PinproxyError(.invalidArgument, Self.needsCA) }
        let request = context.imitatingRequest
        return PresentedChain(try context.leaves.leaf(for: context.cacheKey(.misissued)) { try forger.forge(request) })
    }
}
