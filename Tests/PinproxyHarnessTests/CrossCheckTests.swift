import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import PinproxyProxy
import Testing

/// A row passes only when the proxy's own record of the connection agrees with the client.
@Suite struct CrossCheckTests {
    /// The in-process proxy, except that it reports every connection as intercepted.
    final class MisreportingProxy: ForwardingProxy, @unchecked Sendable {
        override func event(clientPort: Int, since: Date, timeout: TimeInterval) -> TLSOutcomeEvent? {
            guard var event = inner.event(clientPort: clientPort, since: since, timeout: timeout) else { return nil }
            if event.kind != .passthrough { event.kind = .intercepted }
            return event
        }
    }

    @Test func aRefusalTheProxyRecordsAsInterceptedIsAHarnessError() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let harness = try Harness(world: world, proxy: MisreportingProxy(try InProcessProxy(world: world)))
        defer { harness.stop() }
        let policy = AFNetworkingPolicy(mode: .publicKey, pinnedCertificates: [world.leaf])
        let report = try harness.check(policy, selected: ["direct", "passthrough", "forge"])
        let forge = report.results.filter { $0.scenario == "forge" }
        #expect(forge.count == 2)
        for row in forge {
            #expect(row.status == .error, "\(row.reason)")
            #expect(row.reason.contains("the client refused during the handshake, but the proxy recorded intercepted"), "\(row.reason)")
        }
        #expect(report.results.filter { $0.scenario != "forge" }.allSatisfy { $0.status == .pass })
        #expect(report.exitStatus == 3)
    }

    @Test func anUnknownScenarioNameIsRefused() throws {
        let harness = try Harness.start()
        defer { harness.stop() }
        #expect(throws: PinproxyError.self) { try harness.check(AFNetworkingPolicy(), selected: ["forge", "frog"]) }
    }
}
