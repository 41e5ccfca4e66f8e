import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyProxy
import Testing

/// What a row's device trusts and what the row expects, as the matrix builds them.
@Suite("Scenario rows")
struct ScenarioTests {
    @Test("the proxy CA is on the device only in rows that say so: never in rotation rows or external-client rows")
    func theProxyCAIsOnTheDeviceOnlyWhenTheRowSaysSo() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        let proxyCA = world.misissuer
        func anchors(_ scenario: Scenario) -> [[UInt8]] { scenario.userAnchors(proxyCA: proxyCA).map(\.derEncoded) }

        #expect(anchors(Scenario(profile: .forge, deviceTrustsProxyCA: true)) == [proxyCA.derEncoded])
        #expect(anchors(Scenario(profile: .forge, deviceTrustsProxyCA: false)).isEmpty)
        #expect(anchors(Scenario(profile: .forge, deviceTrustsProxyCA: nil)).isEmpty)
        for row in Scenario.rotationRows(["re-key", "new-ca"], selected: nil) {
            #expect(row.deviceTrustsProxyCA == nil, "\(row.label)")
            #expect(anchors(row).isEmpty, "\(row.label)")
        }
        // The matrix: one row per setting, and the setting decides the anchors.
        let rows = Scenario.matrix(profiles: [.passthrough, .forge], selected: nil, deviceTrust: .both)
        #expect(rows.map(\.label) == ["direct, proxy CA on the device", "direct, proxy CA not on the device",
                                      "passthrough, proxy CA on the device", "passthrough, proxy CA not on the device",
                                      "forge, proxy CA on the device", "forge, proxy CA not on the device"])
        #expect(rows.map { anchors($0).count } == [1, 0, 1, 0, 1, 0])
        #expect(rows.map(\.expected) == [.accept, .accept, .accept, .accept, .reject, .reject])
        let external = Scenario.matrix(profiles: [.forge], selected: nil, deviceTrust: nil)
        #expect(external.map(\.label) == ["direct", "forge"])
        #expect(external.allSatisfy { anchors($0).isEmpty })
    }
}
