import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// A client connection that sends nothing for the upstream hold
/// (`serve --upstream-hold`) gives its upstream connection up: to the idle
/// pool, or closed. Its next request, on the same client connection, takes
/// or opens one. curl sends two requests on one connection three seconds
/// apart (`--rate 20/m`, longer than the hold and the idle sweep that gives an
/// HTTP/2 session's frame buffer back; `%{num_connects}` 0 says the second reused the
/// client connection); the origins tell which upstream connection served
/// each: origin.py's `/peer` answers the TCP port a request came from,
/// h2_origin.py logs a number per connection.
@Suite("Upstream hold", .timeLimit(.minutes(10)))
struct UpstreamHoldTests {
    /// Two GETs of `path` on one client connection, three seconds apart: per
    /// transfer, the body, the status and how many connections curl opened.
    static func twoRequests(_ proxy: RunningProxy, _ f: Fixtures, port: Int, _ path: String, http2: Bool = false,
                            headers: [String] = []) throws -> [(body: String, status: String, connects: String)] {
        let url = "https://localhost:\(port)\(path)"
        var args = ["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--rate", "20/m", "-w", "\n=%{http_code} %{num_connects}\n"]
        args += http2 ? ["--http2"] : ["--http1.1"]
        for header in headers { args += ["-H", header] }
        let r = try curl(args + [url, url])
        try #require(r.status == 0, "curl: \(r.status) \(r.stderr)")
        var transfers: [(body: String, status: String, connects: String)] = []
        var body: [Substring] = []
        for line in r.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("=") {
                let parts = line.dropFirst().split(separator: " ")
                transfers.append((body.joined(separator: "\n"), String(parts.first ?? ""), String(parts.last ?? "")))
                body = []
            } else if !line.isEmpty {
                body.append(line)
            }
        }
        try #require(transfers.count == 2, "\(r.stdout)")
        return transfers
    }

    @Test("HTTP/1.1: the idle client's upstream goes to the pool and serves its next request; without the pool another is opened; a longer hold keeps it")
    func http1() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)

        let pooled = try RunningProxy(f) { $0.timeouts.upstreamHold = 0.3; $0.timeouts.idleUpstream = 30 }
        let a = try Self.twoRequests(pooled, f, port: origin.port, "/peer")
        #expect(a.map(\.status) == ["200", "200"] && a[1].connects == "0", "\(a)")
        #expect(a[0].body == a[1].body, "the parked connection was not taken back: \(a)")

        let unpooled = try RunningProxy(f) { $0.timeouts.upstreamHold = 0.3; $0.timeouts.idleUpstream = 0 }
        let b = try Self.twoRequests(unpooled, f, port: origin.port, "/peer")
        #expect(b.map(\.status) == ["200", "200"] && b[1].connects == "0", "\(b)")
        #expect(b[0].body != b[1].body, "the idle client kept its upstream past the hold: \(b)")

        let held = try RunningProxy(f) { $0.timeouts.upstreamHold = 30; $0.timeouts.idleUpstream = 0 }
        let c = try Self.twoRequests(held, f, port: origin.port, "/peer")
        #expect(c.map(\.status) == ["200", "200"] && c[0].body == c[1].body, "\(c)")
    }

    @Test("HTTP/2 relayed: after the hold and the idle sweep, a new upstream connection serves large fields sent as HPACK references both ways")
    func http2LargeHeadersAfterIdle() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        // Without the idle pool, which would hand the same connection back (below).
        let proxy = try RunningProxy(f) { $0.http2 = true; $0.timeouts.upstreamHold = 0.3; $0.timeouts.idleUpstream = 0 }
        // Indexed by the first request and response, sent as table references by the second.
        let values = ["x-large-a": String(repeating: "a", count: 1500), "x-large-b": String(repeating: "b", count: 1400)]
        let r = try Self.twoRequests(proxy, f, port: origin.port, "/headers", http2: true,
                                     headers: values.map { "\($0.key): \($0.value)" })
        #expect(r.map(\.status) == ["200", "200"] && r[1].connects == "0", "\(r.map { ($0.status, $0.connects) })")
        for transfer in r {
            for (name, value) in values { #expect(transfer.body.contains("\(name): \(value)"), "\(transfer.body.prefix(200))") }
        }
        // Each request reached the origin on its own connection: the first was let go while idle.
        let requests = origin.log.filter { $0.first == "REQUEST" && $0.count >= 4 && $0[3] == "/headers" }
        #expect(requests.count == 2 && Set(requests.map { $0[1] }).count == 2, "\(origin.log)")
    }

    /// One `curl --http2` GET of `/headers` through `proxy` with `header`, on
    /// a client connection of its own: the status and the body.
    static func http2Get(_ proxy: RunningProxy, _ f: Fixtures, port: Int, header: String) throws -> (status: String, body: String) {
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http2", "-H", header, "-w", "\n=%{http_code}",
                          "https://localhost:\(port)/headers"])
        try #require(r.status == 0, "curl: \(r.status) \(r.stderr)")
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last?.dropFirst() ?? ""), lines.dropLast().joined(separator: "\n"))
    }

    /// The origin connection of each `/headers` request, in order.
    static func connections(_ origin: H2Origin) -> [String] {
        origin.log.filter { $0.first == "REQUEST" && $0.count >= 4 && $0[3] == "/headers" }.map { $0[1] }
    }

    @Test("HTTP/2 relayed: client connections one after another go on with one upstream connection and its session (HPACK tables included); with --idle-upstream-timeout 0 each opens its own")
    func http2ReusedAcrossClients() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        let proxy = try RunningProxy(f) { $0.http2 = true }
        // A large field: indexed by the first request, a table reference in the ones after.
        let value = String(repeating: "v", count: 1500)
        for _ in 0..<3 {
            let r = try Self.http2Get(proxy, f, port: origin.port, header: "x-large: \(value)")
            #expect(r.status == "200" && r.body.contains("x-large: \(value)"), "\(r.status) \(r.body.prefix(200))")
            // The next client comes once this one's connection is over at the proxy.
            Thread.sleep(forTimeInterval: 0.2)
        }
        let used = Self.connections(origin)
        #expect(used.count == 3 && Set(used).count == 1, "\(origin.log)")
        // Every flow carries the chain the one handshake verified.
        let details = proxy.server.recorder.recent.flows.compactMap(\.upstreamTLS)
        #expect(details.count == 3 && details.allSatisfy(\.verified), "\(details)")

        let other = try H2Origin(f)
        let unpooled = try RunningProxy(f) { $0.http2 = true; $0.timeouts.idleUpstream = 0 }
        for _ in 0..<2 {
            let r = try Self.http2Get(unpooled, f, port: other.port, header: "x-large: \(value)")
            #expect(r.status == "200")
            Thread.sleep(forTimeInterval: 0.2)
        }
        let own = Self.connections(other)
        #expect(own.count == 2 && Set(own).count == 2, "\(other.log)")
        // The one the pool could not keep was told GOAWAY (NO_ERROR) before it closed.
        let told = other.log.filter { $0.first == "PEERGOAWAY" && $0.count >= 3 }
        #expect(told.contains { $0[1] == own.first && $0[2] == "0" }, "\(other.log)")
    }

    @Test("HTTP/2 relayed: an upstream connection that sent GOAWAY is not reused; the next client gets a new one")
    func http2GoneAwayIsNotReused() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f, goAwayAfter: 2)
        let proxy = try RunningProxy(f) { $0.http2 = true }
        for _ in 0..<4 {
            let r = try Self.http2Get(proxy, f, port: origin.port, header: "x-n: 1")
            #expect(r.status == "200", "\(r)")
            Thread.sleep(forTimeInterval: 0.2)
        }
        // Two requests per connection: its GOAWAY came with the second.
        let used = Self.connections(origin)
        #expect(used.count == 4, "\(origin.log)")
        #expect(used.count == 4 && used[0] == used[1] && used[2] == used[3] && used[1] != used[2], "\(used)")
    }

    /// The bodies of h2_client.py's peer-twice: an HTTP/2-only client (ALPN
    /// `h2` alone), so an HTTP/1.1 upstream is translated.
    static func peerTwice(_ proxy: RunningProxy, port: Int, sleep: Double) throws -> [String] {
        let r = try H2Peers.client("peer-twice", proxyPort: proxy.port, connect: "localhost:\(port)", arguments: ["--sleep", String(sleep)])
        try #require(r.status == 0, "\(r.stdout) \(r.stderr)")
        let bodies = r.stdout.split(separator: "\n").filter { $0.hasPrefix("BODY ") }.map { String($0.split(separator: " ").last ?? "") }
        try #require(bodies.count == 2, "\(r.stdout)")
        return bodies
    }

    @Test("HTTP/2 translated to HTTP/1.1: the idle client's connection goes to the pool, where the next HTTP/2 client takes it; without the pool another is opened")
    func http2Translated() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let pooled = try RunningProxy(f) { $0.http2 = true; $0.timeouts.upstreamHold = 0.3; $0.timeouts.idleUpstream = 30 }
        let a = try Self.peerTwice(pooled, port: origin.port, sleep: 2)
        // The first connection was opened at the ClientHello, offering h2 beside
        // http/1.1, and is parked under that offer: the next HTTP/2 client's
        // ClientHello takes it (the second, opened by the translation for the
        // default offer, closed with the client).
        let next = try Self.peerTwice(pooled, port: origin.port, sleep: 0)
        #expect(next[0] == a[0], "first client \(a), next \(next)")

        let unpooled = try RunningProxy(f) { $0.http2 = true; $0.timeouts.upstreamHold = 0.3; $0.timeouts.idleUpstream = 0 }
        let b = try Self.peerTwice(unpooled, port: origin.port, sleep: 2)
        #expect(b[0] != b[1], "the idle client kept its upstream past the hold: \(b)")
        let held = try RunningProxy(f) { $0.http2 = true; $0.timeouts.upstreamHold = 30; $0.timeouts.idleUpstream = 0 }
        let c = try Self.peerTwice(held, port: origin.port, sleep: 2)
        #expect(c[0] == c[1], "\(c)")
    }
}
