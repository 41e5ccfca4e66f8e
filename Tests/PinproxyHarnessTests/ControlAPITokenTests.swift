import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// A control API beyond loopback (as in a container): only with a bearer token, which callers
/// and `pinproxy check` send, and which never shows in a log line or an answer.
@Suite(.timeLimit(.minutes(10)))
struct ControlAPITokenTests {
    typealias Daemon = ControlAPIProxyTests.Daemon

    static func newToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    @Test func aControlAPIBeyondLoopbackIsRefusedWithoutATokenBeforeAnythingIsWritten() throws {
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["serve", "--dir", directory.file("ca"), "--listen", "127.0.0.1:0", "--admin", "0.0.0.0:0"])
        #expect(r.status == 2, "\(r.output)")
        #expect(r.stderr.contains("the control API listens beyond loopback (0.0.0.0:0) only with a bearer token: give --admin-token-file FILE or set PINPROXY_ADMIN_TOKEN"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("ca")))
        // A token too short to be safe, and a file that is not there, are refused by name, never shown.
        let short = try directory.write("abc123\n", to: "short.token")
        let refused = try pinproxy(["serve", "--dir", directory.file("ca"), "--admin", "0.0.0.0:0", "--admin-token-file", short])
        #expect(refused.status == 2 && refused.stderr.contains("the control API token in \(short) is shorter than 16 characters"), "\(refused.output)")
        #expect(!refused.stderr.contains("abc123"), "\(refused.stderr)")
        let missing = try pinproxy(["serve", "--dir", directory.file("ca"), "--admin", "0.0.0.0:0", "--admin-token-file", directory.file("none")])
        #expect(missing.status == 2 && missing.stderr.contains("no such file"), "\(missing.output)")
        let alone = try pinproxy(["serve", "--dir", directory.file("ca"), "--admin-token-file", short])
        #expect(alone.status == 2 && alone.stderr.contains("--admin-token-file needs --admin"), "\(alone.output)")
    }

    @Test(arguments: ["file", "environment"])
    func theTokenIsRequiredOnEveryRequestAndNeverLogged(_ source: String) throws {
        let directory = try TemporaryDirectory()
        let token = Self.newToken()
        let log = directory.file("serve.log")
        var arguments = ["--dir", directory.file("ca"), "--log-level", "debug"]
        var environment: [String: String] = [:]
        if source == "file" {
            arguments += ["--admin-token-file", try directory.write(token + "\n", to: "admin.token")]
        } else {
            environment[AdminToken.environmentVariable] = token
        }
        let daemon = try Daemon(arguments: arguments, admin: "0.0.0.0:0", environment: environment, log: log)
        let api = "http://127.0.0.1:\(daemon.adminPort)"
        func status(_ method: String, _ path: String, _ headers: [String], body: String? = nil) throws -> (Int, String) {
            var command = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method]
            if let body { command += ["--data", body] }
            for header in headers { command += ["-H", header] }
            let r = try run(command + ["\(api)\(path)"])
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? -1, lines.dropLast().joined(separator: "\n"))
        }
        for (method, path, body) in ControlAPIAccessTests.endpoints {
            let (code, answer) = try status(method, path, [], body: body)
            #expect(code == 401, "\(method) \(path): \(code) \(answer)")
        }
        // Another token, another scheme, a token with more or fewer characters: all refused.
        for headers in [["Authorization: Bearer \(Self.newToken())"], ["Authorization: Basic \(token)"],
                        ["Authorization: Bearer \(token)x"], ["Authorization: Bearer \(token.prefix(32))"]] {
            for (method, path, body) in [("GET", "/flows", nil), ("PUT", "/rules", #"{"defaultProfile":"passthrough"}"#)] {
                let (code, answer) = try status(method, path, headers, body: body)
                #expect(code == 401, "\(method) \(path) \(headers): \(code) \(answer)")
                #expect(!answer.contains(token.prefix(32)), "\(answer)")
            }
        }
        let challenged = try run(["curl", "-sS", "-i", "\(api)/flows"])
        #expect(challenged.stdout.contains(#"WWW-Authenticate: Bearer realm="pinproxy control API""#), "\(challenged.stdout)")
        // With the token, whatever name reached it (a published port, a compose service name).
        for host in ["127.0.0.1:\(daemon.adminPort)", "pinproxy:8081", "localhost:18081"] {
            let (code, answer) = try status("GET", "/flows", ["Authorization: Bearer \(token)", "Host: \(host)"])
            #expect(code == 200, "Host \(host): \(code) \(answer)")
        }
        let (put, _) = try status("PUT", "/rules", ["Authorization: bearer \(token)"], body: #"{"defaultProfile":"passthrough"}"#)
        #expect(put == 200)
        // A web page that somehow holds the token still cannot write from its own origin.
        let (cross, _) = try status("PUT", "/rules", ["Authorization: Bearer \(token)", "Origin: http://attacker.example"], body: "{}")
        #expect(cross == 403)
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        #expect(logged.contains("control API refused GET /flows from 127.0.0.1:"), "\(logged)")
        #expect(!logged.contains(token.prefix(16)), "the token is in the log")
    }

    /// The `serve` arguments of docker/Dockerfile's CMD and docker/compose.yaml's `command` (JSON arrays both).
    static func containerCommands() throws -> [(String, [String])] {
        let dockerfile = try String(contentsOfFile: packageRoot + "/docker/Dockerfile", encoding: .utf8)
        let cmd = try #require(dockerfile.split(separator: "\n").first { $0.hasPrefix("CMD [") }).dropFirst(4)
        let compose = try String(contentsOfFile: packageRoot + "/docker/compose.yaml", encoding: .utf8)
        let start = try #require(compose.range(of: "command: ["))
        let end = try #require(compose[start.upperBound...].firstIndex(of: "]"))
        let command = "[" + compose[start.upperBound...end]
        return try [("Dockerfile", cmd), ("compose.yaml", Substring(command))].map { name, json in
            (name, try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String], "\(name): \(json)"))
        }
    }

    @Test func theContainersCommandsServeTheControlAPIWithTheTokenAndKeepCapturesApartFromTheCA() throws {
        for (name, command) in try Self.containerCommands() {
            #expect(command.first == "serve", "\(name): \(command)")
            let admin = try #require(command.firstIndex(of: "--admin").map { command[$0 + 1] }, "\(name): no --admin")
            #expect(!(try ListenAddress(parsing: admin)).isLoopback, "\(name): the control API is not reachable from outside the container")
            let directory = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory.file("captures"), withIntermediateDirectories: true)
            // The container's paths under a temporary directory; its ports free ones (the proxy's on loopback).
            let arguments = command.dropFirst().map { argument -> String in
                if argument == "/ca" { return directory.file("ca") }
                if argument.hasPrefix("/captures/") { return directory.path + argument }
                if argument == "0.0.0.0:8080" { return "127.0.0.1:0" }
                if argument == admin { return "0.0.0.0:0" }
                return argument
            }
            let environment = ["PINPROXY_CA_DIR": directory.file("ca")]
            // Without the token the container does not start, and says why.
            let refused = try pinproxy(["serve"] + arguments, environment: environment)
            #expect(refused.status == 2 && refused.stderr.contains("only with a bearer token"), "\(name): \(refused.output)")
            let token = Self.newToken()
            let daemon = try Daemon(arguments: arguments, admin: "0.0.0.0:0",
                                    environment: environment.merging([AdminToken.environmentVariable: token]) { $1 })
            let health = "http://127.0.0.1:\(daemon.adminPort)/health"
            #expect(try run(["curl", "-fsS", "-o", "/dev/null", health]).status != 0, "\(name): /health without the token")
            let healthy = try run(["curl", "-fsS", "-H", "Authorization: Bearer \(token)", health])
            #expect(healthy.status == 0 && healthy.stdout.contains(#""status" : "ready""#), "\(name): \(healthy.output)")
            // Captures are written where the command says, never next to the CA's key.
            #expect(command.contains { $0.hasPrefix("/captures/") && $0.hasSuffix(".har") } && command.contains { $0.hasPrefix("/captures/") && $0.hasSuffix(".jsonl") },
                    "\(name): \(command)")
            #expect(!command.contains { $0.hasPrefix("/ca/") }, "\(name): captures next to the CA: \(command)")
            #expect(FileManager.default.fileExists(atPath: directory.file("captures/flows.har")), "\(name)")
            #expect(FileManager.default.fileExists(atPath: directory.file("ca/pinproxy-ca.pem")), "\(name)")
        }
        let dockerfile = try String(contentsOfFile: packageRoot + "/docker/Dockerfile", encoding: .utf8)
        #expect(dockerfile.contains(#"Authorization: Bearer $PINPROXY_ADMIN_TOKEN"#) && dockerfile.contains("VOLUME /captures"))
        let compose = try String(contentsOfFile: packageRoot + "/docker/compose.yaml", encoding: .utf8)
        #expect(compose.contains("../captures:/captures") && compose.contains("PINPROXY_ADMIN_TOKEN: ${PINPROXY_ADMIN_TOKEN:?"))
    }

    @Test func checkSendsTheTokenFromItsFileOrTheEnvironment() throws {
        let directory = try TemporaryDirectory()
        let token = Self.newToken()
        let tokenFile = try directory.write(token, to: "admin.token")
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure", "--admin-token-file", tokenFile],
                                admin: "0.0.0.0:0")
        let admin = "http://127.0.0.1:\(daemon.adminPort)"
        let policy = packageRoot + "/docs/examples/okhttp.json"
        let base = ["check", "--proxy", daemon.proxy, "--admin", admin, "--policy", policy, "--profiles", "direct,forge"]
        let withFile = try pinproxy(base + ["--admin-token-file", tokenFile])
        #expect(withFile.status == 0 && withFile.stdout.contains("4 scenarios: 4 passed"), "\(withFile.output)")
        let withEnvironment = try pinproxy(base, environment: [AdminToken.environmentVariable: token])
        #expect(withEnvironment.status == 0, "\(withEnvironment.output)")
        let without = try pinproxy(base)
        #expect(without.status == 2 && without.stderr.contains("wants a bearer token: give --admin-token-file FILE or set PINPROXY_ADMIN_TOKEN"),
                "\(without.output)")
        let wrong = try pinproxy(base + ["--admin-token-file", try directory.write(Self.newToken(), to: "wrong.token")])
        #expect(wrong.status == 2 && wrong.stderr.contains("refused the bearer token"), "\(wrong.output)")
        #expect(!(without.output + wrong.output + withFile.output).contains(token.prefix(16)))
        // The rules are the daemon's own again.
        let rules = try run(["curl", "-sS", "-H", "Authorization: Bearer \(token)", "\(admin)/rules"])
        #expect(!rules.stdout.contains("pinproxy check pid"), "\(rules.stdout)")
    }
}
