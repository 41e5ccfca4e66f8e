import Foundation
import PinproxyHarness
import PinproxyTestSupport
import Testing

/// Two `pinproxy check`s against one daemon, as two parallel CI jobs sharing it run them.
@Suite(.timeLimit(.minutes(10)))
struct ConcurrentCheckTests {
    /// A `pinproxy check` process whose standard output and error go to files.
    final class Check {
        let process = Process()
        let stdout: String
        let stderr: String

        /// `asFromAShell`: started with no signal blocked, as a terminal starts it (``startWithSignalsUnblocked(_:_:_:)``).
        init(_ arguments: [String], in directory: TemporaryDirectory, name: String, asFromAShell: Bool = false) throws {
            (stdout, stderr) = (directory.file("\(name).out"), directory.file("\(name).err"))
            for file in [stdout, stderr] { _ = FileManager.default.createFile(atPath: file, contents: nil) }
            if asFromAShell {
                startWithSignalsUnblocked(process, pinproxyBinary, ["check"] + arguments)
            } else {
                process.executableURL = URL(fileURLWithPath: pinproxyBinary)
                process.arguments = ["check"] + arguments
            }
            process.standardOutput = FileHandle(forWritingAtPath: stdout)
            process.standardError = FileHandle(forWritingAtPath: stderr)
            try process.run()
        }

        var output: String { (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "" }
        var errors: String { (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "" }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// Polls `condition` for up to 30 s; whether it came true.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            if Date() >= deadline { return false }
            usleep(20_000)
        }
        return true
    }

    @Test func aSecondCheckWaitsForTheFirstAndBothPass() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let daemon = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure",
                                                                 "--resolve", "kept.example.com:10.0.0.1", "--rule", "kept.example.com=expired"])
        func admin(_ path: String) throws -> String { try run(["curl", "-sS", "\(daemon.admin)\(path)"]).stdout }
        let (rulesBefore, resolveBefore) = (try admin("/rules"), try admin("/resolve"))
        // Each run notes that it started, then holds its check in the row until the test says go.
        let go = directory.file("go")
        func arguments(_ name: String) -> [String] {
            ["--proxy", daemon.proxy, "--admin", daemon.admin, "--profiles", "passthrough,forge", "--client",
             "echo run >> \(directory.file(name + ".runs")); while [ ! -e \(go) ]; do sleep 0.05; done; curl -sS -o /dev/null --cacert {ca} --pinnedpubkey {pin} {url}"]
        }
        func runs(_ name: String) -> Int {
            ((try? String(contentsOfFile: directory.file(name + ".runs"), encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        let first = try Check(arguments("first"), in: directory, name: "first")
        #expect(Self.eventually { runs("first") == 1 }, "the first check never ran its client: \(first.errors)")
        let owner = "pinproxy check pid \(first.process.processIdentifier)"

        let second = try Check(arguments("second"), in: directory, name: "second")
        #expect(Self.eventually { second.errors.contains("waiting") },
                "the second check did not wait for the first: \(second.errors) \(second.output)")
        #expect(second.errors == "pinproxy: \(owner) is using the daemon at \(daemon.admin); waiting up to 300 s for it to finish (--daemon-wait)\n")
        // While it waits, the daemon serves the first check's rule alone.
        let rules = try admin("/rules")
        #expect(rules.contains(owner) && !rules.contains("pinproxy check pid \(second.process.processIdentifier)"), "\(rules)")
        #expect(runs("second") == 0)

        // One that will not wait is refused at once, with who is in the way.
        let impatient = try pinproxy(["check"] + arguments("impatient") + ["--daemon-wait", "0"])
        #expect(impatient.status == 2, "\(impatient.output)")
        #expect(impatient.stderr.contains("the daemon at \(daemon.admin.dropFirst("http://".count)) is in use by \(owner): a check sets the daemon's rules and resolve map for its own world, so checks take turns"),
                "\(impatient.stderr)")
        #expect(runs("impatient") == 0)

        _ = FileManager.default.createFile(atPath: go, contents: nil)
        first.process.waitUntilExit()
        second.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0 && first.output.contains("2 scenarios: 2 passed"), "\(first.output)\(first.errors)")
        #expect(second.process.terminationStatus == 0 && second.output.contains("2 scenarios: 2 passed"), "\(second.output)\(second.errors)")
        #expect((runs("first"), runs("second")) == (2, 2))
        // Each put back what it found: the daemon is as it was before both.
        #expect(try admin("/rules") == rulesBefore)
        #expect(try admin("/resolve") == resolveBefore)
        // And the lock file is gone with the last of them.
        let port = daemon.admin.split(separator: ":").last.map(String.init) ?? ""
        let left = try FileManager.default.contentsOfDirectory(atPath: "/tmp").filter { $0.hasPrefix("pinproxy-check-") && $0.hasSuffix("-\(port).lock") }
        #expect(left.isEmpty, "\(left)")
    }

    /// Ctrl-C or SIGTERM while a check waits its turn: it leaves at once, deleting its world,
    /// and the daemon keeps serving the check that holds it.
    @Test(arguments: [SIGINT, SIGTERM])
    func aCheckWaitingForTheDaemonStopsOnASignalAndChangesNothing(signal: Int32) throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let daemon = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure"])
        func admin(_ path: String) throws -> String { try run(["curl", "-sS", "\(daemon.admin)\(path)"]).stdout }
        let go = directory.file("go")
        func arguments(_ name: String) -> [String] {
            ["--proxy", daemon.proxy, "--admin", daemon.admin, "--profiles", "forge", "--client",
             "echo run >> \(directory.file(name + ".runs")); while [ ! -e \(go) ]; do sleep 0.05; done; curl -sS -o /dev/null --cacert {ca} --pinnedpubkey {pin} {url}"]
        }
        let first = try Check(arguments("first"), in: directory, name: "first")
        #expect(Self.eventually { FileManager.default.fileExists(atPath: directory.file("first.runs")) }, "\(first.errors)")
        let rulesHeld = try admin("/rules")
        let second = try Check(arguments("second"), in: directory, name: "second", asFromAShell: true)
        #expect(Self.eventually { second.errors.contains("waiting") }, "\(second.errors)")
        kill(second.process.processIdentifier, signal)
        #expect(Self.eventually { !second.process.isRunning }, "the waiting check went on after signal \(signal)")
        second.process.waitUntilExit()
        #expect(second.process.terminationReason == .exit && second.process.terminationStatus == 130)
        #expect(second.errors.hasSuffix("pinproxy: interrupted while waiting for the daemon\n"), "\(second.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("second.runs")))
        #expect(try admin("/rules") == rulesHeld, "the daemon still serves the first check's rule")
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        first.process.waitUntilExit()
        #expect(first.process.terminationStatus == 0 && first.output.contains(": 1 passed, 0 failed"), "\(first.output)\(first.errors)")
    }

    /// A check that took no lock (another machine's /tmp, an older pinproxy) is known by its live
    /// rule: a new check waits for it too, then gives up with who was in the way.
    @Test func aLiveChecksRuleAloneHoldsOffANewCheck() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let daemon = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure"])
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sleep")
        holder.arguments = ["60"]
        try holder.run()
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        let owner = "pinproxy check pid \(holder.processIdentifier)"
        let rule = #"{"rules": [{"pattern": "api.example.com", "profile": "forge", "owner": "\#(owner)"}]}"#
        #expect(try run(["curl", "-sS", "-X", "PUT", "--data-binary", rule, "\(daemon.admin)/rules"]).stdout.contains(owner))
        let r = try pinproxy(["check", "--proxy", daemon.proxy, "--admin", daemon.admin, "--daemon-wait", "1", "--profiles", "passthrough",
                              "--policy", packageRoot + "/docs/examples/okhttp.json"])
        #expect(r.status == 2, "\(r.output)")
        #expect(r.stderr.hasPrefix("pinproxy: \(owner) is using the daemon at \(daemon.admin); waiting up to 1 s for it to finish (--daemon-wait)\n"), "\(r.stderr)")
        #expect(r.stderr.contains("is still in use by \(owner) after 1 s: a check sets the daemon's rules"), "\(r.stderr)")
        #expect(try run(["curl", "-sS", "\(daemon.admin)/rules"]).stdout.contains(owner), "the other check's rule stays")
    }
}
