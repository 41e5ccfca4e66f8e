import Foundation
import PinproxyCertificates

/// A proxy-CA leaf for the host, imitating the genuine names, whose notAfter
/// has passed (badssl.com's `expired`). One signature per host; the leaf never
/// needs remaking, since it stays expired.
///
/// Only the time is wrong: the leaf began no earlier than the CA did and
/// ended while the CA was valid, so a verifier that nests validity windows
/// finds nothing else, and the CA itself is valid now.
public struct ExpiredAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a proxy-CA leaf for the host whose notAfter has passed" }
    public var catches: String { "validity period not checked: an expired leaf" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let request = context.imitatingRequest
        let leaf = try context.leaves.leaf(for: context.cacheKey(.expired), renewal: { _ in .distantFuture }) {
            let window = try Self.window(now: context.resources.clock(), authority: context.authority.certificate)
            return try context.resources.forger.forge(request, variant: LeafVariant(validity: window))
        }
        return PresentedChain(leaf)
    }

    /// Ended a day ago (half the CA's age, for a CA younger than two days),
    /// began 30 days before that or when the CA did, whichever is later.
    public static func window(now: Date, authority: Certificate) throws -> DateInterval {
        let age = now.timeIntervalSince(authority.notBefore)
        guard age >= 2 else {
            throw PinproxyError(.invalidArgument, "expired: the proxy CA became valid less than 2 seconds ago, so no leaf can both start after it and have ended")
        }
        let notAfter = now.addingTimeInterval(-min(86_400, age / 2))
        let notBefore = max(authority.notBefore, notAfter.addingTimeInterval(-30 * 86_400))
        return DateInterval(start: notBefore, end: notAfter)
    }
}
