import Foundation
import PinproxyCertificates

/// A proxy-CA leaf for the host, imitating the genuine names, whose notBefore
/// is in the future. One signature per host, made again halfway to notBefore
/// so it never becomes valid while cached.
///
/// Only the time is wrong: the leaf's whole window lies within the CA's, and
/// the CA is valid now, when the client evaluates it.
public struct NotYetValidAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a proxy-CA leaf for the host whose notBefore is in the future" }
    public var catches: String { "validity period not checked: a leaf not valid yet" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let request = context.imitatingRequest
        let clock = context.resources.clock
        let renewal = { (leaf: ForgedLeaf) in Self.renewal(of: leaf, now: clock()) }
        let leaf = try context.leaves.leaf(for: context.cacheKey(.notYetValid), renewal: renewal) {
            let window = try Self.window(now: context.resources.clock(), authority: context.authority.certificate)
            return try context.resources.forger.forge(request, variant: LeafVariant(validity: window))
        }
        return PresentedChain(leaf)
    }

    /// Begins a day from now (a third of the CA's remaining life, for a CA
    /// that ends sooner than three days) and lasts 30 days, never past the CA.
    public static func window(now: Date, authority: Certificate) throws -> DateInterval {
        let remaining = authority.notAfter.timeIntervalSince(now)
        guard remaining >= 6 else {
            throw PinproxyError(.invalidArgument, "not-yet-valid: the proxy CA expires within seconds, so no leaf can start later and still end before it")
        }
        let notBefore = now.addingTimeInterval(min(86_400, remaining / 3))
        let notAfter = min(notBefore.addingTimeInterval(30 * 86_400), authority.notAfter)
        return DateInterval(start: notBefore, end: notAfter)
    }

    /// Halfway from `now`, when the leaf was made, to its notBefore.
    static func renewal(of leaf: ForgedLeaf, now: Date) -> Date {
        now.addingTimeInterval(leaf.certificate.notBefore.timeIntervalSince(now) / 2)
    }
}
