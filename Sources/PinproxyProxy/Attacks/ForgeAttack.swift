import Foundation
import PinproxyCertificates

/// The classic interception: a leaf for the host, imitating the genuine
/// certificate's names, signed by the proxy CA (one signature per host).
public struct ForgeAttack: AttackStrategy {
    public init() {}
    public var shows: String { "a leaf for the host signed by the proxy CA, imitating the genuine names" }
    public var catches: String { "clients without pinning that trust the proxy CA" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        PresentedChain(try context.leaves.leaf(for: context.imitatingRequest))
    }
}
