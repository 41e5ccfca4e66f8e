import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// Rotation rows with real clients: the origin serves the rotated chain while `{pin}` and the
/// pins on the command line stay those of the world's original certificates, as in an app
/// shipped before the change. Real curl and real OkHttp 3.13.1 must reach the built-in
/// emulation's verdict, and refuse at the same moment, on every rotation row.
// Serialized: a JVM or curl per row blocks a thread of the shared test pool; one case at a time.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct RealClientRotationTests {
    /// Every rotation row of `real` against the same row of `builtIn`.
    static func expectAgreement(_ real: CheckReport, _ builtIn: CheckReport, _ label: String) throws {
        #expect(real.errors == 0, "\(label)\n\(Matrix.dump(real))")
        #expect(real.results.count == 2 * Rotation.names.count && real.results.allSatisfy { $0.kind == .rotation }, "\(Matrix.dump(real))")
        for row in real.results {
            let emulated = try #require(builtIn.results.first { $0.title == row.title })
            #expect(row.actual == emulated.actual && row.status == emulated.status,
                    "\(label) \(row.title): real \(row.actual) (\(row.reason)), built-in \(emulated.actual) (\(emulated.reason))")
            #expect(row.refusedAt == emulated.refusedAt,
                    "\(label) \(row.title): real refused at \(String(describing: row.refusedAt)), built-in at \(String(describing: emulated.refusedAt))")
        }
    }

    @Test func curlWithTheOriginalLeafPinBreaksOnTheReKeyOnly() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let real = try harness.check(client: try ClientCommand("curl -sS -o /dev/null --resolve {resolve} --cacert {ca} --pinnedpubkey {pin} {url}"),
                                     kinds: .rotations)
        let builtIn = try harness.check(CurlPolicy(pinnedPublicKeys: [harness.world.leaf.spkiPin], source: "world:leaf"), kinds: .rotations)
        try Self.expectAgreement(real, builtIn, "curl")
        #expect(Matrix.outages(real) == Matrix.routes(["re-key"]), "\(Matrix.dump(real))")
        let rekey = try #require(real.results.first { $0.scenario == "re-key" && $0.route == "direct" })
        #expect(rekey.clientExitStatus == 90 && rekey.refusedAt == .afterHandshake, "\(Matrix.dump(real))")
    }

    /// The leaf's, the intermediate's and the root's key, each alone, as OkHttp pins.
    @Test(arguments: ["leaf", "intermediate", "root"])
    func realOkHttpAgreesOnEveryRotation(pinned: String) throws {
        let cache = try TemporaryDirectory()
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let world = harness.world
        let certificate = try #require(["leaf": world.leaf, "intermediate": world.intermediate, "root": world.root][pinned] ?? nil)
        let pin = certificate.spkiPin.okhttp
        let policy = OkHttpPolicy(pins: [try OkHttpPolicy.Pin(pattern: Matrix.host, pin: pin)], platform: .jvm)
        guard case .available(let runner) = OkHttpJVMRunner.prepare(pins: policy.pins, javaLibraries: RealLibraries.debianJavaLibraries,
                                                                    cacheDirectory: cache.path) else {
            Issue.record("real OkHttp cannot run here: install libokhttp-java and openjdk-17-jdk-headless (make deps)")
            return
        }
        let command = try runner.command(deviceTrustsProxyCA: false, in: harness)
        let real = try harness.check(client: command, kinds: .rotations, timeout: 60)
        let builtIn = try harness.check(policy, kinds: .rotations)
        try Self.expectAgreement(real, builtIn, "OkHttp pinning the \(pinned)")
        let expected = [
            "leaf": ["re-key"],
            "intermediate": ["new-intermediate", "root-migration", "root-migration-new-store", "ca-switch"],
            "root": ["root-migration-new-store", "ca-switch"],
        ][pinned] ?? []
        #expect(Matrix.outages(real) == Matrix.routes(expected), "\(Matrix.dump(real))")
    }
}
