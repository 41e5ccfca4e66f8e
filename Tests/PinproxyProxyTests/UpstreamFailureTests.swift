import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS
import Testing

/// Upstreams that stall, close or refuse: the client gets a prompt 502 that
/// says why, and the event blames the upstream, not the client.
@Suite("Upstream failures", .timeLimit(.minutes(10)))
struct UpstreamFailureTests {
    @Test("an upstream that never answers TLS: 502 after the upstream handshake timeout, upstream-failed event")
    func stalledUpstreamHandshake() throws {
        let f = try Fixtures()
        let upstream = try Origin(misbehaving: "silent")
        // The client's handshake limit is shorter than the upstream's: it must
        // not run while the proxy waits on the upstream.
        let proxy = try RunningProxy(f) {
            $0.timeouts.handshake = 1
            $0.timeouts.upstreamHandshake = 2
        }
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}",
                          "https://localhost:\(upstream.port)/"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("TLS handshake with the upstream localhost:\(upstream.port) timed out"), "\(r.stdout)")
        let event = proxy.waitForEvent(.upstreamFailed)
        #expect(event?.reason?.contains("localhost:\(upstream.port)") == true, "\(String(describing: event))")
        #expect(proxy.server.recorder.recent.events.allSatisfy { $0.kind != .handshakeTimeout })
    }

    /// What a `silent-watched` upstream saw: connections accepted, and closed by the other side.
    static func watchedStatus(_ port: Int) throws -> (accepted: Int, closed: Int) {
        let script = "import socket; s = socket.create_connection(('127.0.0.1', \(port))); s.sendall(b'STATUS'); print(s.makefile().readline().strip())"
        let r = try runProcess("/usr/bin/env", ["python3", "-c", script], input: [], timeout: 10)
        let parts = r.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard parts.count == 2 else { throw HarnessError("no status from the watched upstream: \(r.stdout) \(r.stderr)") }
        return (parts[0], parts[1])
    }

    @Test("a client that leaves while the proxy is still opening the upstream: that connection is closed at once, no other is opened, and no refusal is recorded",
          arguments: ["curl gives up", "close", "reset"])
    func clientLeavesWhileTheUpstreamIsOpening(how: String) throws {
        let f = try Fixtures()
        let upstream = try Origin(misbehaving: "silent-watched")
        // The upstream's own limit is far away: only the client's leaving can close it.
        let proxy = try RunningProxy(f) { $0.timeouts.upstreamHandshake = 300 }
        if how == "curl gives up" {
            let r = try curl(["--max-time", "1", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "https://localhost:\(upstream.port)/"])
            #expect(r.status == 28, "curl gave up waiting for the handshake: \(r.status) \(r.stderr)")
        } else {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/leave_during_upstream.py").path
            let r = try runProcess("/usr/bin/env", ["python3", script, "\(proxy.port)", "\(upstream.port)", how], input: [], timeout: 60)
            #expect(r.stdout.contains("left"), "\(r.stdout) \(r.stderr)")
        }
        var status = try Self.watchedStatus(upstream.port)
        let deadline = Date().addingTimeInterval(30)
        while status.closed < status.accepted || status.accepted == 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            status = try Self.watchedStatus(upstream.port)
        }
        #expect(status.accepted == 1, "upstream connections opened for one client: \(status.accepted)")
        #expect(status.closed == status.accepted, "still open at the upstream: \(status.accepted - status.closed)")
        #expect(!proxy.server.recorder.recent.events.contains { $0.kind.isClientRejection },
                "\(proxy.server.recorder.recent.events.map(\.kind))")
        withExtendedLifetime(upstream) {}
    }

    @Test("an HTTP/1.1 upstream that never answers: 504 after the response timeout, naming it, and a flow")
    func upstreamNeverAnswersOverHTTP1() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f) { $0.timeouts.upstreamResponse = 1 }
        let r = try curl(["--max-time", "20", "--http1.1", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}",
                          "https://localhost:\(origin.port)/hang"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n504"), "\(r.stdout)")
        #expect(r.stdout.contains("the upstream sent no response within 1 s"), "\(r.stdout)")
        let hung = proxy.server.recorder.recent.flows.first { $0.request.url.hasSuffix("/hang") }
        #expect(hung?.response?.status == 504, "\(String(describing: hung))")
        #expect(hung?.error?.contains("no response within 1 s") == true, "\(String(describing: hung?.error))")
    }

    /// What nginx does with an upstream that sends more than its response framed: the
    /// response goes to the client, the connection goes (a stray CRLF is tolerated).
    @Test("an upstream that sends more than its response framed: the response goes through, the connection is not used again",
          arguments: [("overlong", false), ("overlong-junk", false), ("overlong-partial", false), ("overlong-crlf", false),
                      ("overlong", true), ("overlong-junk", true)])
    func upstreamOverlongResponseIsNotReused(mode: String, http2: Bool) throws {
        let f = try Fixtures()
        let upstream = try Origin(misbehaving: mode, chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        // Two requests on one client connection (HTTP/2: two streams one after the other, each
        // translated to HTTP/1.1): the second must not be answered by what the upstream sent
        // after the first response, nor go on that connection.
        let base = "https://localhost:\(upstream.port)"
        let r = try curl(["--max-time", "20", http2 ? "--http2" : "--http1.1", "--proxy", proxy.url, "--cacert", f.proxyCAPath,
                          "-w", "[%{http_code}]\n", "\(base)/a", "\(base)/b"])
        #expect(r.status == 0, "\(r.stderr)")
        let tolerated = mode == "overlong-crlf"
        #expect(r.stdout == (tolerated ? "first\n[200]\nlater\n[200]\n" : "first\n[200]\nfirst\n[200]\n"), "\(r.stdout)")
        let count = try curl(["--cacert", f.originCAPath, "\(base)/connections"])
        // One connection per request through the proxy (one for both when tolerated), and this one.
        #expect(count.stdout == (tolerated ? "2\n" : "3\n"), "\(count.stdout)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.filter { $0.response?.status == 200 && $0.error == nil }.count == 2, "\(flows.map { ($0.request.url, $0.response?.status, $0.error) })")
    }

    @Test("an upstream that closes right after its handshake: an immediate 502 saying so")
    func upstreamClosesAfterHandshake() throws {
        let f = try Fixtures()
        let upstream = try Origin(misbehaving: "close-after-handshake", chain: f.originChainPath, key: f.originKeyPath)
        // The response timeout is longer than curl's limit, so only a prompt 502 passes.
        let proxy = try RunningProxy(f) { $0.timeouts.upstreamResponse = 60 }
        let r = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}",
                          "https://localhost:\(upstream.port)/"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        // Closed, or reset when the request reached a socket that was closing unread.
        #expect(r.stdout.contains("the upstream localhost:\(upstream.port) closed the connection before responding")
                    || r.stdout.contains("the upstream localhost:\(upstream.port) reset the connection before responding"), "\(r.stdout)")
    }

    @Test("an upstream that requires a client certificate: 502 naming the alert; with --upstream-client-cert it answers")
    func upstreamRequiresClientCertificate() throws {
        let f = try Fixtures()
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        let clientCert = f.directory.file("client.pem"), clientKey = f.directory.file("client-key.pem")
        let made = try runProcess(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                            "-subj", "/CN=pinproxy test client", "-days", "1", "-keyout", clientKey, "-out", clientCert])
        try #require(made.status == 0, "\(made.stderr)")
        let server = try SServer(openssl, ["-cert", f.originChainPath, "-key", f.originKeyPath,
                                           "-Verify", "1", "-CAfile", clientCert, "-www"])
        let url = "https://localhost:\(server.port)/"

        let refused = try RunningProxy(f) { $0.timeouts.upstreamResponse = 60 }
        let r = try curl(["--max-time", "15", "--proxy", refused.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}", url])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("sent alert"), "\(r.stdout)")
        #expect(r.stdout.contains("it asks for a client certificate"), "\(r.stdout)")

        let mutual = try RunningProxy(f) {
            $0.upstreamClientCertificate = ClientCertificateFiles(certificate: clientCert, key: clientKey)
        }
        let ok = try curl(["--max-time", "15", "--proxy", mutual.url, "--cacert", f.proxyCAPath, "-o", "/dev/null", "-w", "%{http_code}", url])
        #expect(ok.stdout == "200", "\(ok.stdout) \(ok.stderr)")
    }

    @Test("an upstream certificate from the trusted CA but for another name: 502, hostname mismatch", arguments: ["localhost", "127.0.0.1"])
    func upstreamCertificateForAnotherName(host: String) throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.otherNameChainPath, key: f.otherNameKeyPath)
        let proxy = try RunningProxy(f)  // trusts the origin CA (--upstream-ca)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}", "https://\(host):\(origin.port)/hello"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(!r.stdout.contains("hello from origin"), "\(r.stdout)")
        #expect(r.stdout.contains("mismatch"), "\(r.stdout)")
        // Trusting the CA would not help: the hint says what would.
        #expect(r.stdout.contains("the certificate does not name the host the client asked for: ask for a name it carries"), "\(r.stdout)")
        // One level of parentheses: the hint sits in the reason's, with none of its own.
        let hint = r.stdout.components(separatedBy: "(the certificate does not name").last ?? ""
        #expect(hint.prefix(while: { $0 != ")" }).contains("--upstream-insecure") && !hint.prefix(while: { $0 != ")" }).contains("("), "\(r.stdout)")
        #expect(!r.stdout.contains("--upstream-ca FILE"), "\(r.stdout)")
        let event = try #require(proxy.waitForEvent(.upstreamVerificationFailed))
        #expect(event.reason?.contains("mismatch") == true, "\(event)")
    }

    @Test("an unverifiable upstream: the 502 and the log line name --upstream-ca FILE and --upstream-insecure")
    func unverifiableUpstreamNamesTheWaysForward() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.untrustedChainPath, key: f.untrustedKeyPath)
        let lines = Locked<[String]>([])
        let proxy = try RunningProxy(f, logLines: lines)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("--upstream-ca FILE") && r.stdout.contains("--upstream-insecure"), "\(r.stdout)")
        #expect(proxy.waitForEvent(.upstreamVerificationFailed) != nil)
        let warning = waitForLine(in: lines) { $0.hasPrefix("warning ") && $0.contains("failed verification") }
        let line = try #require(warning, "no warning line: \(lines.withLock { $0 })")
        #expect(line.contains("--upstream-ca FILE") && line.contains("--upstream-insecure"), "\(line)")
    }

    @Test("an unreadable --upstream-client-cert fails at start with the file named")
    func badClientCertificate() throws {
        let f = try Fixtures()
        #expect(throws: PinproxyError.self) {
            _ = try RunningProxy(f) { $0.upstreamClientCertificate = ClientCertificateFiles(certificate: f.originCAPath, key: f.originKeyPath) }
        }
        do {
            _ = try RunningProxy(f) { $0.upstreamClientCertificate = ClientCertificateFiles(certificate: f.directory.file("missing.pem")) }
            Issue.record("a missing client certificate was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("cannot read the upstream client certificate"), "\(error)")
        }
    }
}

/// `openssl s_server` on an ephemeral loopback port, until the test ends.
final class SServer: @unchecked Sendable {
    let process = Process()
    let port: Int
    private let stdin = Pipe()

    init(_ openssl: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["s_server", "-accept", "127.0.0.1:0"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = stdin
        try process.run()
        let found = Locked<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var text = ""
            while true {
                let d = out.fileHandleForReading.availableData
                if d.isEmpty { break }
                text += String(decoding: d, as: UTF8.self)
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
                   let port = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
                    found.withLock { $0 = port }
                    break
                }
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success, let port = found.withLock({ $0 }) else {
            SServer.stop(process)
            throw HarnessError("openssl s_server did not start")
        }
        self.port = port
    }

    deinit {
        SServer.stop(process)
        try? stdin.fileHandleForWriting.close()
    }

    /// SIGKILL, not SIGTERM: the child inherits the signal mask of the dispatch
    /// thread that spawned it, where SIGTERM is blocked, so `terminate()` never lands.
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
