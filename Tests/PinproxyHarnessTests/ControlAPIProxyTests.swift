import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `check --proxy --admin`: a running `pinproxy serve` driven through its control API.
@Suite(.timeLimit(.minutes(2)))
struct ControlAPIProxyTests {
    /// A `pinproxy serve` process; its proxy and control API addresses come from its ready line.
    final class Daemon {
        let process = Process()
        let proxy: String
        let admin: String

        init(arguments: [String]) throws {
            try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
            process.executableURL = URL(fileURLWithPath: pinproxyBinary)
            process.arguments = ["serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"] + arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var data = Data()
            while !data.contains(0x0a) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data += chunk
            }
            let line = String(decoding: data, as: UTF8.self)
            let words = line.split(whereSeparator: { $0 == " " || $0 == ";" || $0 == "\n" })
            guard let proxy = words.first(where: { $0.hasPrefix("127.0.0.1:") }),
                  let admin = words.first(where: { $0.hasPrefix("http://127.0.0.1:") }) else {
                process.terminate()
                throw PinproxyError(.connect, "no ready line from pinproxy serve: \(line)")
            }
            self.proxy = "http://\(proxy)"
            self.admin = String(admin)
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
    }

    @Test func checksThroughARunningDaemonAndRestoresItsRules() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        try CADirectory(path: directory.file("misissuer")).store(world.misissuer, overwrite: false)
        let daemon = try Daemon(arguments: [
            "--dir", directory.file("ca"), "--upstream-ca", world.rootPath,
            "--misissuing-ca", directory.file("misissuer"), "--rule", "other.example.com=passthrough",
        ])
        let rulesBefore = try rules(daemon.admin)
        let proxy = try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin)
        let harness = try Harness(world: world, proxy: proxy)
        defer { harness.stop() }
        let path = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf", "world:intermediate"]}}"#, to: "okhttp.json")
        let report = try harness.check(try harness.loadPolicy(contentsOf: path))
        #expect(report.results.count == 22, "\(TableReport.text(report))")
        #expect(report.passed == 22, "\(TableReport.text(report))")
        #expect(report.proxy.hasPrefix("daemon 127.0.0.1:"))
        // The same rows fail through the daemon as in process: no pinning accepts what the device trusts.
        let none = try harness.check(AFNetworkingPolicy(), selected: ["forge", "misissued"])
        #expect(Set(none.results.filter { $0.status == .fail }.map { "\($0.scenario)/\($0.deviceTrustText)" })
                == ["forge/yes", "misissued/yes", "misissued/no"], "\(TableReport.text(none))")
        proxy.close()
        #expect(try rules(daemon.admin) == rulesBefore)
    }

    @Test func aDaemonThatCannotVerifyTheOriginIsAHarnessErrorNotAPass() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        // No --upstream-ca: the daemon trusts the system store, which does not hold the world's root.
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")])
        let harness = try Harness(world: world, proxy: try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin))
        defer { harness.stop() }
        let report = try harness.check(OkHttpPolicy(pins: [try .init(pattern: Matrix.host, pin: world.leaf.spkiPin.okhttp)]),
                                       deviceTrust: .yes, selected: ["forge"])
        let row = try #require(report.results.first)
        #expect(row.status == .error, "\(row.reason)")
        #expect(row.reason.contains("upstream-verification-failed"), "\(row.reason)")
        #expect(report.exitStatus == 3)
    }

    private func rules(_ admin: String) throws -> String {
        let r = try run(["curl", "-sS", "\(admin)/rules"])
        return r.stdout
    }
}
