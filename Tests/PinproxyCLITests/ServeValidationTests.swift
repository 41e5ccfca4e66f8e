import Foundation
import PinproxyTestSupport
import Testing

/// `pinproxy serve` command lines that cannot work are refused before anything starts.
@Suite struct ServeValidationTests {
    @Test(arguments: [
        (["--listen", "127.0.0.1:8092", "--admin", "127.0.0.1:8092"],
         "--listen and --admin are both 127.0.0.1:8092: the proxy and its control API need two ports (e.g. --admin 127.0.0.1:8093)"),
        (["--listen", "127.0.0.1:8092", "--log-level", "verbose"],
         "unknown --log-level 'verbose': use trace, debug, info, notice, warning or error"),
        (["--upstream-ca", "origin-ca.pem", "--upstream-insecure"], "--upstream-ca and --upstream-insecure contradict each other"),
        (["--upstream-client-key", "client-key.pem"], "--upstream-client-key needs --upstream-client-cert"),
        (["--capture-bodies=-1"], "--capture-bodies must be 0 or more"),
        (["--admin-token-file", "token.txt"], "--admin-token-file needs --admin: the token guards the control API"),
        (["--http2", "maybe"], "--http2 must be on or off, not 'maybe'"),
        (["--loops", "257"], "--loops must be 1–256"),
        (["--idle-timeout", "0"], "--idle-timeout must be more than 0 and at most 86400 seconds, not 0"),
        (["--header-timeout", "86401"], "--header-timeout must be more than 0 and at most 86400 seconds, not 86401"),
        (["--upstream-handshake-timeout=-2"], "--upstream-handshake-timeout must be more than 0 and at most 86400 seconds, not -2"),
        (["--idle-upstream-timeout=-1"], "--idle-upstream-timeout must be 0–3600 seconds, not -1"),
        (["--idle-upstream-timeout", "3601"], "--idle-upstream-timeout must be 0–3600 seconds, not 3601"),
        (["--upstream-hold", "86400.5"], "--upstream-hold must be 0–86400 seconds, not 86400.5"),
        (["--drain-timeout", "3601"], "--drain-timeout must be 0–3600 seconds, not 3601"),
        (["--drain-timeout=-1"], "--drain-timeout must be 0–3600 seconds, not -1"),
    ])
    func aCommandLineThatCannotWorkIsOneLine(arguments: [String], message: String) throws {
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["serve", "--dir", directory.file("ca")] + arguments)
        ErrorReportingTests.expectOneErrorLine(r, containing: message)
        #expect(!FileManager.default.fileExists(atPath: directory.file("ca")), "no CA is created for a refused command line")
    }
}

/// The edges of every range `serve` checks are inside it: a command line at them starts.
@Suite struct ServeRangeEdgeTests {
    @Test(arguments: [
        ["--idle-upstream-timeout", "3600", "--upstream-hold", "86400", "--capture-bodies", "0", "--loops", "256"],
        ["--idle-upstream-timeout", "0", "--upstream-hold", "0", "--loops", "1", "--drain-timeout", "0"],
        ["--idle-timeout", "86400", "--handshake-timeout", "86400", "--header-timeout", "86400",
         "--upstream-handshake-timeout", "86400", "--tunnel-idle-timeout", "86400"],
        ["--idle-timeout", "0.5", "--handshake-timeout", "0.001", "--http2", "off", "--upstream-http2", "off"],
    ])
    func aValueAtTheEdgeStarts(arguments: [String]) throws {
        let directory = try TemporaryDirectory()
        #expect(try pinproxy(["ca", "init", "--dir", directory.file("ca")]).status == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: pinproxyBinary)
        process.arguments = ["serve", "--dir", directory.file("ca"), "--listen", "127.0.0.1:0", "--log-level", "error"] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let ready = firstLineThenStop(process, out)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(ready.hasPrefix("pinproxy ready:"), "\(arguments) did not start: \(ready)\(errors)")
    }
}

/// The first line a started `serve` writes to `out` (its ready line), read until its newline
/// or the end of the output; then the process is stopped and waited for.
func firstLineThenStop(_ process: Process, _ out: Pipe) -> String {
    var data = Data()
    while !data.contains(0x0a) {
        let chunk = out.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        data += chunk
    }
    kill(process.processIdentifier, SIGTERM)
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// `serve` creates a CA only where one is expected, and writes nothing when it cannot listen.
@Suite struct ServeCAPlacementTests {
    /// `pinproxy serve arguments`, which must refuse to start: a serve that starts after all is
    /// ended after a minute (status 137) rather than holding the suite until its time limit.
    static func refusedServe(_ arguments: [String], in directory: String? = nil) throws -> ProcessResult {
        try pinproxy(["serve"] + arguments, wrapper: ["timeout", "-s", "KILL", "60"], in: directory)
    }

    @Test func aCADirectoryOutsideTheDefaultIsNeverCreated() throws {
        let directory = try TemporaryDirectory()
        let mistyped = directory.file("nonexistent/dir")
        let line = ErrorReportingTests.expectOneErrorLine(try Self.refusedServe(["--ca-dir", mistyped, "--listen", "127.0.0.1:0"]))
        #expect(line.contains("no CA in \(mistyped)") && line.contains("run 'pinproxy ca init --dir \(mistyped)' first"), "\(line)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("nonexistent")), "nothing is created for a mistyped directory")
        // An existing directory without a CA is refused the same way.
        let empty = directory.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
        #expect(try Self.refusedServe(["--ca-dir", empty, "--listen", "127.0.0.1:0"]).status == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty)
    }

    /// No --ca-dir, --ca-dir naming ./certs, and --ca-dir naming $PINPROXY_CA_DIR.
    @Test(arguments: [["certs"], ["certs", "./certs"], ["ca", "ca"]])
    func theDefaultDirectoryGetsACAOnFirstRun(case: [String]) throws {
        let environment = `case`[0] == "certs" ? [:] : ["PINPROXY_CA_DIR": `case`[0]]
        let arguments = (`case`.count > 1 ? ["--ca-dir", `case`[1]] : []) + ["--listen", "127.0.0.1:0"]
        let directory = try TemporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["-i", "PATH=/usr/bin:/bin"] + environment.map { "\($0)=\($1)" } + [pinproxyBinary, "serve"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let ready = firstLineThenStop(process, out)
        #expect(ready.hasPrefix("pinproxy ready:"), "\(ready)")
        let created = directory.file(environment["PINPROXY_CA_DIR"] ?? "certs") + "/pinproxy-ca.pem"
        #expect(FileManager.default.fileExists(atPath: created), "\(created)")
    }

    @Test(arguments: ["--listen", "--admin"])
    func aPortInUseWritesNothing(flag: String) throws {
        let busy = try LoopbackPort(listening: true)
        let directory = try TemporaryDirectory()
        let other = flag == "--listen" ? ["--admin", "127.0.0.1:0"] : ["--listen", "127.0.0.1:0"]
        // The default directory (none yet in the working directory), a HAR and an events file.
        let r = try Self.refusedServe([flag, "127.0.0.1:\(busy.port)", "--har", "flows.har", "--events", "events.jsonl"] + other,
                                      in: directory.path)
        ErrorReportingTests.expectOneErrorLine(r, containing: "cannot listen on 127.0.0.1:\(busy.port): Address already in use (\(flag)): another process holds that port; give \(flag) another address (\(flag) 127.0.0.1:0 picks a free port")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no CA, HAR or events file is written")
    }
}

