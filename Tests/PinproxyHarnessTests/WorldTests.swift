import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import Testing

@Suite struct WorldTests {
    @Test func generatedChainValidatesAgainstTheWorldRoot() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        defer { world.removeFiles() }
        let evaluation = TrustEvaluator.evaluate(world.originChain, policy: .ssl(host: world.host, platform: .apple), at: Date(),
                                                 anchors: .device(world.deviceStore(userAnchors: [])))
        #expect(evaluation.isValid, "\(evaluation.reason)")
        #expect(evaluation.builtChain.count == 3)
    }
}
