import Foundation
import PinproxyProxy
import Testing

/// A request that meets the close of a reused upstream connection before any
/// response goes again, once, on a new connection when that is safe
/// (`UpstreamReplay`), and never otherwise. The origin (Support/closing_origin.py)
/// answers each connection's first request and closes every reused one
/// without answering, counting the closes and recording every body it read.
///
/// Serialized: the long runs below each hold a test thread, curl or h2load
/// and a Python origin for their duration; one at a time they leave the
/// rest of the suite room on a small machine.
@Suite("Upstream retry on a reused connection", .serialized, .timeLimit(.minutes(10)))
struct UpstreamRetryTests {
    struct Stats: Decodable {
        var closes: Int
        var freshCloses: Int
        var heads: [String: Int]
        var bodies: [String]
    }

    static func origin(_ mode: String, _ f: Fixtures, alpn: Bool = true) throws -> Origin {
        try Origin(script: "closing_origin.py", chain: f.originChainPath, key: f.originKeyPath,
                   arguments: [mode] + (alpn ? [] : ["--no-alpn"]))
    }

    /// What the origin counted, asked directly on a new connection.
    static func stats(_ origin: Origin, _ f: Fixtures) throws -> Stats {
        let r = try curl(["--cacert", f.originCAPath, "https://localhost:\(origin.port)/stats"])
        return try JSONDecoder().decode(Stats.self, from: Data(r.stdout.utf8))
    }

    /// curl through the proxy, trusting its CA.
    static func throughProxy(_ proxy: RunningProxy, _ f: Fixtures, _ arguments: [String], timeout: TimeInterval = 30) throws -> ProcessResult {
        try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath] + arguments, timeout: timeout)
    }

    /// Status codes printed one a line by `-w "%{http_code}\n"`, with how many of each.
    static func statusCounts(_ output: String) -> [String: Int] {
        output.split(separator: "\n").reduce(into: [:]) { $0[String($1), default: 0] += 1 }
    }

    static func retries(_ proxy: RunningProxy) -> Int { proxy.server.counters.counts.upstreamRetries }

    @Test("2,000 keep-alive GETs from an HTTP/1.1 client: no 502, one retry per close (1,000 on arrival, 300 without ALPN)",
          arguments: [("after-head", true), ("on-arrival", true), ("on-arrival", false)])
    func http1KeepAlive(mode: String, alpn: Bool) throws {
        let f = try Fixtures()
        let origin = try Self.origin(mode, f, alpn: alpn)
        let proxy = try RunningProxy(f)
        // Without ALPN, fewer: that a close of a reused connection is not taken for an HTTP/2-only upstream.
        let count = !alpn ? 300 : mode == "on-arrival" ? 1_000 : 2_000
        let r = try Self.throughProxy(proxy, f, ["--http1.1", "-o", "/dev/null", "-w", "%{http_code}\n",
                                                 "https://localhost:\(origin.port)/n/[1-\(count)]"], timeout: 240)
        #expect(Self.statusCounts(r.stdout) == ["200": count], "\(Self.statusCounts(r.stdout)) \(r.stderr.suffix(300))")
        let stats = try Self.stats(origin, f)
        // Every request after the first met a reused connection that closed.
        #expect(stats.closes >= count / 2, "the origin closed only \(stats.closes) connections")
        #expect(Self.retries(proxy) == stats.closes)
        // Each request reached the origin once answered, plus once per close.
        #expect(stats.heads.filter { $0.key.hasPrefix("/n/") }.values.reduce(0, +) == (mode == "after-head" ? count + stats.closes : count))
    }

    @Test("2,000 GETs on HTTP/2 streams translated to HTTP/1.1: no 502, one retry per close (1,000 on arrival)",
          arguments: ["after-head", "on-arrival"])
    func translatedStreams(mode: String) throws {
        let h2load = try #require(findExecutable("/usr/bin/h2load", "h2load"))
        let f = try Fixtures()
        let origin = try Self.origin(mode, f)
        // Reverse mode; h2load offers `h2` alone, so the streams are translated to the origin's HTTP/1.1.
        let proxy = try RunningProxy(f) { c in
            c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
        }
        let count = mode == "on-arrival" ? 1_000 : 2_000
        // Four streams at once: the translation uses up to four upstream connections, each reused and closed.
        let r = try runProcess(h2load, ["--npn-list=h2", "-n", String(count), "-c", "1", "-m", "4",
                                        "https://127.0.0.1:\(proxy.port)/n"], timeout: 240)
        #expect(r.stdout.contains("requests: \(count) total, \(count) started, \(count) done, \(count) succeeded"), "\(r.stdout)")
        #expect(r.stdout.contains("status codes: \(count) 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(r.stdout)")
        #expect(r.stdout.contains("Application protocol: h2"), "\(r.stdout)")
        let stats = try Self.stats(origin, f)
        #expect(stats.closes >= count / 2, "the origin closed only \(stats.closes) connections")
        #expect(Self.retries(proxy) == stats.closes)
    }

    @Test("a connection taken from the idle pool that the origin closes: the request goes on a new one",
          arguments: ["after-head", "on-arrival"])
    func idlePoolConnection(mode: String) throws {
        let f = try Fixtures()
        let origin = try Self.origin(mode, f)
        let proxy = try RunningProxy(f, admin: true)
        let clients = 12
        for index in 1...clients {
            // One client connection each; the proxy parks the upstream for the next.
            let r = try Self.throughProxy(proxy, f, ["--http1.1", "-H", "Connection: close", "-w", "\n%{http_code}",
                                                     "https://localhost:\(origin.port)/pooled/\(index)"])
            #expect(r.stdout.hasSuffix("\n200"), "client \(index): \(r.stdout) \(r.stderr)")
        }
        let stats = try Self.stats(origin, f)
        #expect(stats.closes == clients - 1, "the pool did not serve the later clients: \(stats.closes) closes")
        #expect(Self.retries(proxy) == stats.closes)
        // The count is in the control API's /health, beside the daemon's other counters.
        let health = try curl(["\(try ControlAPITests.admin(proxy))/health"])
        let counts = (try JSONSerialization.jsonObject(with: Data(health.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any]
        #expect(counts?["upstreamRetries"] as? Int == stats.closes, "\(health.stdout)")
    }

    @Test("a new connection that closes before answering is a 502, sent once, from HTTP/1.1 and HTTP/2 clients")
    func freshConnectionIsNotRetried() throws {
        let f = try Fixtures()
        let origin = try Self.origin("after-head", f)
        let proxy = try RunningProxy(f)
        let r = try Self.throughProxy(proxy, f, ["--http1.1", "-w", "\n%{http_code}", "https://localhost:\(origin.port)/close-fresh"])
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("closed the connection before responding"), "\(r.stdout)")
        // An HTTP/2 client (offering `h2` alone): its stream is translated, on a new connection too.
        let h2 = try H2Peers.client("get", proxyPort: proxy.port, connect: "localhost:\(origin.port)", path: "/close-fresh")
        #expect(h2.stdout.contains("ANSWER 1 502 ") && h2.stdout.contains("closed the connection before responding"), "\(h2.stdout) \(h2.stderr)")
        let stats = try Self.stats(origin, f)
        #expect(stats.heads["/close-fresh"] == 2, "sent again: \(stats.heads)")
        #expect(stats.freshCloses == 2)
        #expect(Self.retries(proxy) == 0)
    }

    @Test("a reused connection that sent one byte of its response before closing: a 502, sent once, from HTTP/1.1 and HTTP/2 clients")
    func partResponseIsNotRetried() throws {
        let f = try Fixtures()
        let origin = try Self.origin("one-byte", f)
        let proxy = try RunningProxy(f) { $0.timeouts.idleUpstream = 0 }
        let r = try Self.onReused(proxy, f, origin, [], path: "/one-byte")
        #expect(r.status == "502", "\(r)")
        let h2 = try H2Peers.client("get-reused", proxyPort: proxy.port, connect: "localhost:\(origin.port)", path: "/h2-one-byte")
        #expect(h2.stdout.contains("ANSWER 3 502 "), "\(h2.stdout) \(h2.stderr)")
        let stats = try Self.stats(origin, f)
        #expect(stats.closes == 2)
        #expect(stats.heads["/one-byte"] == 1 && stats.heads["/h2-one-byte"] == 1, "\(stats.heads)")
        #expect(Self.retries(proxy) == 0)
    }

    @Test("the retry goes on a new connection, not on another idle one the origin would close as well")
    func retryTakesNoIdleConnection() throws {
        let f = try Fixtures()
        let origin = try Self.origin("after-head", f)
        let proxy = try RunningProxy(f)
        // Two client connections at once (the origin answers /slow after half a
        // second): two upstream connections, both parked in the idle pool after.
        let both = try Self.throughProxy(proxy, f, ["--http1.1", "--parallel", "--parallel-immediate", "-H", "Connection: close",
                                                    "-o", "/dev/null", "-w", "%{http_code}\n",
                                                    "https://localhost:\(origin.port)/slow/[1-2]"])
        #expect(Self.statusCounts(both.stdout) == ["200": 2], "\(both.stdout) \(both.stderr)")
        // The next client takes one, which the origin closes; the other idle one would be closed too.
        let r = try Self.throughProxy(proxy, f, ["--http1.1", "-w", "\n%{http_code}", "https://localhost:\(origin.port)/next"])
        #expect(r.stdout.hasSuffix("\n200"), "\(r.stdout)")
        let stats = try Self.stats(origin, f)
        #expect(stats.closes == 1, "\(stats.closes) closes")
        #expect(Self.retries(proxy) == 1)
    }

    /// A request on a reused connection (after `/warm` on the same client
    /// connection), with curl's own options for it; its status and body.
    static func onReused(_ proxy: RunningProxy, _ f: Fixtures, _ origin: Origin, version: String = "--http1.1",
                         _ arguments: [String], path: String) throws -> (status: String, body: String) {
        let r = try throughProxy(proxy, f, [version, "-o", "/dev/null", "https://localhost:\(origin.port)/warm", "--next",
                                            "--proxy", proxy.url, "--cacert", f.proxyCAPath, version, "-w", "\n%{http_code}"]
                                            + arguments + ["https://localhost:\(origin.port)\(path)"])
        let parts = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(parts.last ?? ""), parts.dropLast().joined(separator: "\n"))
    }

    @Test("bodies are never sent twice: a sent body or a complete non-idempotent request is a 502; a held body goes once, after a retry")
    func requestsWithBodies() throws {
        let f = try Fixtures()
        let origin = try Self.origin("after-head", f)
        // Without the idle pool: each client's first request goes on a new connection.
        let proxy = try RunningProxy(f) { $0.timeouts.idleUpstream = 0 }

        // The body went with the head: the origin read it, so it is not sent again.
        let post = try Self.onReused(proxy, f, origin, ["-H", "Expect:", "--data-binary", "body-post-1"], path: "/post")
        #expect(post.status == "502", "\(post)")
        #expect(post.body.contains("its body had already gone to the upstream"), "\(post.body)")
        // Idempotent, but its body is gone all the same.
        let put = try Self.onReused(proxy, f, origin, ["-X", "PUT", "-H", "Expect:", "--data-binary", "body-put-1"], path: "/put")
        #expect(put.status == "502", "\(put)")
        #expect(put.body.contains("its body had already gone to the upstream"), "\(put.body)")
        // No body: the head is the whole request, and POST is not idempotent.
        let empty = try Self.onReused(proxy, f, origin, ["-X", "POST"], path: "/post-empty")
        #expect(empty.status == "502", "\(empty)")
        #expect(empty.body.contains("POST is not idempotent"), "\(empty.body)")
        #expect(Self.retries(proxy) == 0)

        // The client holds the body until 100 Continue: the origin had the
        // head alone, and the request goes again, its body then sent once.
        let held = try Self.onReused(proxy, f, origin, ["-H", "Expect: 100-continue", "--expect100-timeout", "30",
                                                        "--data-binary", "body-held-1"], path: "/held")
        #expect(held.status == "200" && held.body == "got 11 bytes\n", "\(held)")
        #expect(Self.retries(proxy) == 1)

        // HTTP/2 streams translated to HTTP/1.1 (the client offers `h2` alone): the same rule.
        let h2 = try H2Peers.client("bodies", proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        let answers = h2.stdout.split(separator: "\n").filter { $0.hasPrefix("ANSWER ") }
        #expect(answers.count == 2, "\(h2.stdout) \(h2.stderr)")
        #expect(answers.first?.hasPrefix("ANSWER 3 502 ") == true && answers.first?.contains("its body had already gone to the upstream") == true,
                "\(answers)")
        #expect(answers.last == "ANSWER 7 200 got 14 bytes", "\(answers)")
        #expect(Self.retries(proxy) == 2)

        let stats = try Self.stats(origin, f)
        for body in ["body-post-1", "body-put-1", "body-held-1", "body-h2-post-1", "body-h2-held-1"] {
            #expect(stats.bodies.filter { $0 == body }.count == 1, "\(body): \(stats.bodies)")
        }
        #expect(stats.heads["/post"] == 1 && stats.heads["/put"] == 1 && stats.heads["/post-empty"] == 1 && stats.heads["/h2-post"] == 1,
                "\(stats.heads)")
        #expect(stats.heads["/held"] == 2 && stats.heads["/h2-held"] == 2, "\(stats.heads)")
        #expect(Self.retries(proxy) == 2)
    }
}
