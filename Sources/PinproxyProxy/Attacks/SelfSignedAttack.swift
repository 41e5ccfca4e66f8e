import Foundation
import PinproxyCertificates

/// A leaf for the host, imitating the genuine names, signed by its own key:
/// issuer and subject are one name, and no CA is involved (nogotofail's
/// `selfsigned`, badssl.com's `self-signed`). One signature per host.
public struct SelfSignedAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a leaf for the host signed by its own key" }
    public var catches: String { "trust evaluation skipped (allowInvalidCertificates, trust-all)" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let request = context.imitatingRequest
        let leaf = try context.leaves.leaf(for: context.cacheKey(.selfSigned)) {
            try context.resources.forger.forge(request, variant: LeafVariant(issuer: .selfSigned))
        }
        return PresentedChain(leaf)
    }
}
