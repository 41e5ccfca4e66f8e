import Foundation
import PinproxyCertificates

/// A leaf for the host, imitating the genuine names, from a CA generated for
/// this run, kept in memory and trusted by no one (badssl.com's
/// `untrusted-root`). The chain is leaf then that CA, as `forge` sends leaf
/// then the proxy CA. One signature per host (and one, once, for the CA).
public struct UntrustedCAAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a leaf for the host from a CA generated for this run that no one trusts" }
    public var catches: String { "chain validation skipped: a CA no one trusts is accepted" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let forger = try context.resources.untrustedForger()
        let request = context.imitatingRequest
        let leaf = try context.leaves.leaf(for: context.cacheKey(.untrustedCA)) { try forger.forge(request) }
        return PresentedChain(leaf)
    }
}
