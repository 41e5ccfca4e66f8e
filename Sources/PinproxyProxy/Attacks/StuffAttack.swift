import Foundation
import PinproxyCertificates

/// The `forge` chain with the genuine chain appended (CVE-2016-2402): a client
/// that looks for its pin anywhere in what the server sent finds it, though
/// nothing it validated leads there. Costs nothing beyond `forge`: `forge`'s
/// cached leaf, with certificates the proxy already has.
public struct StuffAttack: AttackStrategy {
    public init() {}
    public var shows: String { "the forge chain with the genuine chain (up to its root) appended" }
    public var catches: String { "pins checked on the chain as sent (CVE-2016-2402)" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        var presented = try ForgeAttack().present(context)
        let sent = presented.all
        presented.chain += context.genuineChain.filter { !sent.contains($0) }
        return presented
    }
}
