import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

extension AttackStrategyTests {
    /// A built chain is this server's only when it starts at the leaf the server
    /// presented; any other (a path built for another leaf) is ignored, and the
    /// chain attacks fall back to what the server sent.
    @Test func aGenuineChainThatDoesNotStartAtThePresentedLeafIsIgnored() throws {
        let other = [world.proxyCA.certificate, world.root.certificate]
        let context = AttackContext(host: .dns("localhost"), upstreamChain: world.presented, genuineChain: other, resources: resources)
        #expect(context.genuineChain == world.presented)
        let stuffed = try AttackCatalog.standard.requireStrategy(for: .stuff).present(context)
        #expect(stuffed.chain == [world.proxyCA.certificate] + world.presented)
        let matching = AttackContext(host: .dns("localhost"), upstreamChain: world.presented, genuineChain: world.genuine, resources: resources)
        #expect(matching.genuineChain == world.genuine)
    }
}
