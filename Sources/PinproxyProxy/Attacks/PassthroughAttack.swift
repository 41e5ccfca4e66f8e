import Foundation
import PinproxyCertificates

/// No interception: bytes are relayed as they are, so the client sees the
/// genuine chain. The baseline every correct client accepts.
public struct PassthroughAttack: AttackStrategy {
    public init() {}
    public var shows: String { "the genuine chain, untouched (the connection is tunnelled)" }
    public var catches: String { "nothing: the genuine chain, the baseline every client accepts" }
    public var intercepts: Bool { false }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        throw PinproxyError(.invalidArgument, "passthrough presents no certificate")
    }
}
