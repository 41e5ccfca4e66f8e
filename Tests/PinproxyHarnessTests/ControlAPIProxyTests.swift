import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// `check --proxy --admin`: a running `pinproxy serve` driven through its control API.
@Suite(.timeLimit(.minutes(10)))
struct ControlAPIProxyTests {
    /// A `pinproxy serve` process; its proxy and control API addresses come from its ready line.
    final class Daemon {
        let process = Process()
        let proxy: String
        let admin: String

        /// `admin` is the `--admin` address; `log`, when given, receives the daemon's log lines.
        init(arguments: [String], admin: String = "127.0.0.1:0", environment: [String: String] = [:], log: String? = nil) throws {
            try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
            // serve creates a CA by itself only in the default directory; a test's --dir gets one first.
            if let flag = arguments.firstIndex(of: "--dir"), flag + 1 < arguments.count {
                let directory = CADirectory(path: arguments[flag + 1])
                if !directory.exists { try directory.store(try CertificateAuthority.create(), overwrite: false) }
            }
            process.executableURL = URL(fileURLWithPath: pinproxyBinary)
            process.arguments = ["serve", "--listen", "127.0.0.1:0", "--admin", admin] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let out = Pipe()
            process.standardOutput = out
            if let log {
                _ = FileManager.default.createFile(atPath: log, contents: nil)
                process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            } else {
                process.standardError = FileHandle.nullDevice
            }
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
                  let admin = words.first(where: { $0.hasPrefix("http://") }) else {
                process.terminate()
                throw PinproxyError(.connect, "no ready line from pinproxy serve: \(line)")
            }
            self.proxy = "http://\(proxy)"
            self.admin = String(admin)
        }

        /// The control API's port.
        var adminPort: Int { Int(admin.split(separator: ":").last ?? "") ?? 0 }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
        }
    }

    @Test func checksThroughARunningDaemonAndRestoresItsRules() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        try CADirectory(path: directory.file("misissuer")).store(try #require(world.misissuingAuthority), overwrite: false)
        let daemon = try Daemon(arguments: [
            "--dir", directory.file("ca"), "--upstream-ca", world.rootPath,
            "--misissuing-ca", directory.file("misissuer"), "--rule", "other.example.com=passthrough", "--http2", "off",
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
        // The client offers h2; the daemon keeps its own serve --http2 (off here), the origin takes it.
        for row in report.results where row.refusedAt != .handshake {
            let direct = ["direct", "passthrough"].contains(row.scenario)
            #expect(row.applicationProtocol == (direct ? "h2" : "http/1.1"), "\(row.title): \(row.applicationProtocol ?? "none")")
        }
        // The same rows fail through the daemon as in process: no pinning accepts what the device trusts.
        let none = try harness.check(AFNetworkingPolicy(), selected: ["forge", "misissued"])
        #expect(Set(none.results.filter { $0.status == .fail }.map { "\($0.scenario)/\($0.deviceTrustText)" })
                == ["forge/yes", "misissued/yes", "misissued/no"], "\(TableReport.text(none))")
        // The daemon reached the origin by the world's name, as a device's CONNECT names it.
        let events = try run(["curl", "-sS", "\(daemon.admin)/events"]).stdout
        let listing = try #require(try JSONSerialization.jsonObject(with: Data(events.utf8)) as? [String: Any])
        let hosts = Set((listing["events"] as? [[String: Any]] ?? []).compactMap { $0["host"] as? String })
        #expect(hosts == ["api.example.com"], "\(events.prefix(600))")
        proxy.close()
        #expect(try rules(daemon.admin) == rulesBefore)
        #expect(try resolve(daemon.admin) == [:])
    }

    @Test func aDaemonWithHTTP2OnRelaysTheBuiltInClientsHTTP2() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-ca", world.rootPath, "--http2", "on"])
        let harness = try Harness(world: world, proxy: try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin))
        defer { harness.stop() }
        // No pinning: a device that installed the proxy CA accepts the forged chain, and refuses it otherwise.
        let report = try harness.check(AFNetworkingPolicy(), selected: ["direct", "forge"])
        #expect(report.errors == 0, "\(TableReport.text(report))")
        let accepted = try #require(report.results.first { $0.scenario == "forge" && $0.deviceTrustsProxyCA == true })
        let refused = try #require(report.results.first { $0.scenario == "forge" && $0.deviceTrustsProxyCA == false })
        #expect(accepted.proxyObserved == "intercepted" && refused.proxyObserved?.hasPrefix("client-alert") == true)
        #expect(report.results.allSatisfy { $0.applicationProtocol == "h2" }, "\(report.results.map { $0.applicationProtocol ?? "none" })")
        let port = try #require(accepted.clientPort)
        let flow = try #require(harness.proxy.flows(clientPort: port).first)
        #expect(flow.request.httpVersion == "HTTP/2.0" && flow.upstreamTLS?.alpn == "h2")
        #expect(harness.interceptedRequest(of: accepted)?.authorization == "Bearer \(harness.secret)")
    }

    @Test func aRealClientRunsThroughARunningDaemonAndItsResolveMapIsRestored() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        try CADirectory(path: directory.file("misissuer")).store(try #require(world.misissuingAuthority), overwrite: false)
        let daemon = try Daemon(arguments: [
            "--dir", directory.file("ca"), "--upstream-ca", world.rootPath, "--misissuing-ca", directory.file("misissuer"),
            "--resolve", "other.example.com:10.0.0.1", "--resolve", "api.example.com:192.0.2.1",
        ])
        let resolveBefore = try resolve(daemon.admin)
        #expect(resolveBefore == ["other.example.com": "10.0.0.1", "api.example.com": "192.0.2.1"])
        let harness = try Harness(world: world, proxy: try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin))
        // While the check runs, the world's host points at the origin; the other entry stays.
        #expect(try resolve(daemon.admin) == ["other.example.com": "10.0.0.1", "api.example.com": "127.0.0.1"])
        let report = try harness.check(client: try ClientCommand("curl -sS -o /dev/null --resolve {resolve} --cacert {ca} --pinnedpubkey {pin} {url}"))
        harness.stop()
        #expect(report.results.map(\.scenario) == ["direct", "passthrough"] + Matrix.attacks, "\(Matrix.dump(report))")
        #expect(report.passed == report.results.count, "\(Matrix.dump(report))")
        #expect(report.proxy.hasPrefix("daemon 127.0.0.1:"))
        #expect(try resolve(daemon.admin) == resolveBefore)
    }

    /// A daemon that verifies upstreams cannot verify a generated world's origin: found once,
    /// before the matrix, with the fix, instead of one ERROR row per scenario.
    @Test func aRealClientThroughADaemonThatCannotVerifyTheOriginIsFoundBeforeTheMatrix() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")])
        let harness = try Harness(world: world, proxy: try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin))
        defer { harness.stop() }
        let error = try #require(throws: PinproxyError.self) {
            try harness.check(client: try ClientCommand("curl -sS -o /dev/null --cacert {ca} --pinnedpubkey {pin} {url}"),
                              selected: ["forge", "expired"])
        }
        #expect(error.reason.contains("cannot serve the world's origin: the proxy could not verify the origin"), "\(error.reason)")
        #expect(error.reason.components(separatedBy: "--upstream-insecure").count == 2 && error.reason.contains("no scenario was run"), "\(error.reason)")
        // The direct row alone never goes through the daemon: nothing to probe.
        let direct = try harness.check(client: try ClientCommand("curl -sS -o /dev/null --resolve {resolve} --cacert {ca} {url}"),
                                       selected: ["direct"])
        #expect(direct.results.map(\.status) == [.pass], "\(Matrix.dump(direct))")
    }

    @Test func serveResolvePointsANameAtAnAddress() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        defer { world.removeFiles() }
        let origin = try OriginServer(host: world.host, chain: world.originChain, key: world.originKey)
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let url = "https://\(Matrix.host):\(origin.port)/"
        // The map decides, whatever DNS says of the name: the origin listens on 127.0.0.1 only.
        for address in ["127.0.0.1", "127.0.0.2"] {
            let daemon = try Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-ca", world.rootPath,
                                                "--resolve", "\(Matrix.host.uppercased()):\(address)"])
            let r = try run(["curl", "-sS", "--proxy", daemon.proxy, "--cacert", directory.file("ca/pinproxy-ca.pem"), url])
            if address == OriginServer.address {
                #expect(r.status == 0 && r.stdout == origin.greeting, "\(r.output)")
            } else {
                // Nothing listens there: the daemon answers the request itself.
                #expect(r.stdout.contains("502 Bad Gateway") && r.stdout.contains("refused"), "\(r.output)")
            }
        }
    }

    /// The daemon keeps its own misissuing CA's key; the world adopts its certificate, so the
    /// device trusts it and `world:misissuer` names it, and the row judges the policy.
    @Test func misissuedRunsThroughADaemonWithItsOwnMisissuingCA() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let directory = try TemporaryDirectory()
        let own = try CertificateAuthority.create()
        try CADirectory(path: directory.file("other")).store(own, overwrite: false)
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-ca", world.rootPath, "--misissuing-ca", directory.file("other")])
        let proxy = try ControlAPIProxy(proxy: daemon.proxy, admin: daemon.admin)
        #expect(proxy.misissuingCertificate == own.certificate)
        let harness = try Harness(world: world, proxy: proxy)
        defer { harness.stop() }
        #expect(harness.world.misissuer == own.certificate && harness.world.misissuingAuthority == nil)
        #expect(harness.world.deviceStore(userAnchors: []).systemAnchors.contains(own.certificate))
        let store = try Certificate.load(contentsOf: harness.world.systemStorePath)
        let generated = try #require(world.misissuingAuthority).certificate
        #expect(store.contains(own.certificate) && !store.contains(generated))
        let (scenarios, notes) = try harness.scenarios()
        #expect(scenarios.filter { $0.name == "misissued" }.count == 2 && scenarios.count == 22)
        #expect(notes.contains { $0.contains("world:misissuer is the proxy's misissuing CA") }, "\(notes)")
        // A pin on the misissuing root only: the misissued leaf chains to it, so the policy accepts the attack.
        let rootOnly = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:misissuer"]}}"#, to: "misissuer.json")
        let bad = try harness.check(try harness.loadPolicy(contentsOf: rootOnly), selected: ["misissued"])
        #expect(bad.results.count == 2 && bad.results.allSatisfy { $0.status == .fail }, "\(TableReport.text(bad))")
        #expect(bad.results.allSatisfy { $0.reason.contains("accept: pin") && $0.reason.contains("matched certificate #1") }, "\(TableReport.text(bad))")
        let good = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf", "world:intermediate"]}}"#, to: "good.json")
        let report = try harness.check(try harness.loadPolicy(contentsOf: good), selected: ["misissued"])
        #expect(report.results.count == 2 && report.passed == 2, "\(TableReport.text(report))")
        // A real client trusts the same store ({ca}): without a pin it takes the misissued leaf, with one it refuses.
        let unpinned = try harness.check(client: try ClientCommand("curl -sS -o /dev/null --cacert {ca} {url}"), selected: ["misissued"])
        #expect(unpinned.results.map(\.status) == [.fail], "\(TableReport.text(unpinned))")
        let pinned = try harness.check(client: try ClientCommand("curl -sS -o /dev/null --cacert {ca} --pinnedpubkey {pin} {url}"), selected: ["misissued"])
        #expect(pinned.results.map(\.status) == [.pass], "\(TableReport.text(pinned))")
        // The daemon signed those leaves: it recorded the misissued connections as its own.
        let events = try run(["curl", "-sS", "\(daemon.admin)/events"]).stdout
        #expect(events.contains("misissued"), "\(events.prefix(600))")
    }

    /// Only rules of a check process that is gone are leftovers, and only their host's entry that points at the origin.
    @Test func leftoversAreTheRulesOfChecksThatAreGone() throws {
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let dead = "pinproxy check pid \(gone.processIdentifier)"
        func rule(_ host: String, _ owner: String?) throws -> InterceptionRules.Rule {
            InterceptionRules.Rule(pattern: try HostPattern(parsing: host), profile: .forge, owner: owner)
        }
        let rules = InterceptionRules(rules: [
            try rule("a.example.com", dead), try rule("b.example.com", CheckLeftovers.owner),
            try rule("c.example.com", nil), try rule("d.example.com", "someone else"), try rule("e.example.com", dead),
        ])
        let resolve = ["a.example.com": "127.0.0.1", "c.example.com": "127.0.0.1", "e.example.com": "10.0.0.1"]
        let cleaned = CheckLeftovers.removing(from: rules, resolve: resolve, originAddress: "127.0.0.1")
        #expect(cleaned.rules.rules.map(\.pattern.description) == ["b.example.com", "c.example.com", "d.example.com"])
        #expect(cleaned.resolve == ["c.example.com": "127.0.0.1", "e.example.com": "10.0.0.1"])
        #expect(cleaned.removed == ["rule a.example.com → forge (set by \(dead))", "resolve a.example.com → 127.0.0.1",
                                    "rule e.example.com → forge (set by \(dead))"])
    }

    /// IPv6 addresses in every spelling, and a name that is itself an address, are taken as they are.
    @Test func serveResolveTakesAddressesInEveryForm() throws {
        let directory = try TemporaryDirectory()
        let entries = ["a.example.com:::1", "b.example.com:2001:db8::1", "C.example.com:[2001:DB8::2]", "[2001:db8::7]:127.0.0.1", "192.0.2.7:127.0.0.2"]
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")] + entries.flatMap { ["--resolve", $0] })
        #expect(try resolve(daemon.admin) == ["a.example.com": "::1", "b.example.com": "2001:db8::1", "c.example.com": "2001:db8::2",
                                              "2001:db8::7": "127.0.0.1", "192.0.2.7": "127.0.0.2"])
    }

    @Test func putResolveChecksEveryEntryAndChangesNothingOnAnError() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca"), "--resolve", "kept.example.com:10.0.0.1"])
        func put(_ body: String) throws -> ProcessResult {
            try run(["curl", "-sS", "-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", body, "-w", "\n%{http_code}", "\(daemon.admin)/resolve"])
        }
        let refused = [
            (#"{"a.example.com":"10.0.0.2","*.example.com":"10.0.0.3"}"#, "'*.example.com' is a wildcard"),
            (#"{"a.example.com":"example.org"}"#, "'example.org' for a.example.com is not a numeric IPv4 or IPv6 address"),
            (#"{"a.example.com":"fe80::1%eth0"}"#, "'fe80::1%eth0' for a.example.com is not a numeric IPv4 or IPv6 address"),
            (#"{"a b.example.com":"10.0.0.2"}"#, "invalid host name"),
            (#"["a.example.com"]"#, "a JSON object of host name to address"),
        ]
        for (body, message) in refused {
            let r = try put(body)
            #expect(r.stdout.hasSuffix("\n400") && r.stdout.contains(message), "\(body): \(r.stdout)")
        }
        #expect(try resolve(daemon.admin) == ["kept.example.com": "10.0.0.1"])
        let accepted = try put(#"{"API.example.com":"[::1]","b.example.com":"127.0.0.2","[2001:db8::7]":"127.0.0.3","My_API":"127.0.0.4"}"#)
        #expect(accepted.stdout.hasSuffix("\n200"), "\(accepted.stdout)")
        #expect(try resolve(daemon.admin) == ["api.example.com": "::1", "b.example.com": "127.0.0.2", "2001:db8::7": "127.0.0.3", "my_api": "127.0.0.4"])
        let post = try run(["curl", "-sS", "-X", "POST", "-o", "/dev/null", "-D", "-", "\(daemon.admin)/resolve"])
        #expect(post.stdout.contains("405") && post.stdout.contains("Allow: GET, HEAD, PUT"), "\(post.stdout)")
    }

    /// `check --proxy --admin` against a daemon that verifies upstreams: one line, exit 2, no rows.
    @Test func aDaemonThatCannotVerifyTheOriginIsSaidOnceBeforeAnyRow() throws {
        let directory = try TemporaryDirectory()
        // No --upstream-ca: the daemon trusts the system store, which does not hold the world's root.
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")])
        let r = try pinproxy(["check", "--proxy", daemon.proxy, "--admin", daemon.admin, "--policy", packageRoot + "/docs/examples/okhttp.json"])
        #expect(r.status == 2, "\(r.output)")
        #expect(!r.stdout.contains("SCENARIO") && !r.stdout.contains("ERROR"), "\(r.stdout)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("the daemon at 127.0.0.1:") && lines[0].contains("could not verify the origin"), "\(r.stderr)")
        #expect(lines.first.map { $0.components(separatedBy: "--upstream-insecure").count == 2 } == true, "\(r.stderr)")
        // Its rules are back as they were: the probe's profile is not left behind.
        let rulesAfter = try rules(daemon.admin)
        #expect(!rulesAfter.contains("pinproxy check pid"), "\(rulesAfter)")
    }

    private func resolve(_ admin: String) throws -> [String: String] {
        let r = try run(["curl", "-sS", "\(admin)/resolve"])
        return try JSONDecoder().decode([String: String].self, from: Data(r.stdout.utf8))
    }

    private func rules(_ admin: String) throws -> String {
        let r = try run(["curl", "-sS", "\(admin)/rules"])
        return r.stdout
    }
}
