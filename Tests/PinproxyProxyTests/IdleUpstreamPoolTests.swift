import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// Idle upstream keep-alive connections serve the next client connection to
/// the same upstream: the origin (Support/origin.py, whose `/peer` answers
/// the TCP port a request came from, one per connection) tells whether a
/// connection was reused.
///
/// Clients send `Connection: close`: the proxy then finishes the client
/// connection, and keeps the upstream, before the client has the end of the
/// response, so the next client always comes after that.
@Suite("Idle upstream pool", .timeLimit(.minutes(10)))
struct IdleUpstreamPoolTests {
    /// A request through the proxy; the status and the body.
    static func fetch(_ proxy: RunningProxy, _ f: Fixtures, port: Int, _ path: String) throws -> (status: String, body: String) {
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-H", "Connection: close",
                          "-w", "\n%{http_code}", "https://localhost:\(port)\(path)"])
        let parts = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(parts.last ?? ""), parts.dropLast().joined(separator: "\n"))
    }

    /// A proxy in front of a fresh origin, after one fetch through it: the
    /// upstream connection that fetch used waits in the idle pool.
    static func afterOneFetch() throws -> (f: Fixtures, origin: Origin, proxy: RunningProxy, first: (status: String, body: String)) {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        return (f, origin, proxy, try fetch(proxy, f, port: origin.port, "/peer"))
    }

    static func stop(_ origin: Origin) {
        SServer.stop(origin.process)
    }

    @Test("two clients in sequence use one upstream TLS connection, verified once; with --idle-upstream-timeout 0 each opens its own")
    func reusedAcrossClients() throws {
        let (f, origin, proxy, first) = try Self.afterOneFetch()
        let second = try Self.fetch(proxy, f, port: origin.port, "/peer")
        #expect(first.status == "200" && second.status == "200", "\(first) \(second)")
        #expect(first.body == second.body, "the origin saw two connections: \(first.body), \(second.body)")
        // Both flows carry the chain the one handshake verified.
        let flows = proxy.server.recorder.recent.flows.compactMap(\.upstreamTLS)
        try #require(flows.count == 2)
        let originLeaf = try Certificate(pemEncoded: String(decoding: try FileIO.read(f.originChainPath), as: UTF8.self))
        for details in flows {
            #expect(details.verified)
            #expect(details.chain.first?.serial == originLeaf.serialNumberHex)
        }

        let unpooled = try RunningProxy(f) { $0.timeouts.idleUpstream = 0 }
        let a = try Self.fetch(unpooled, f, port: origin.port, "/peer")
        let b = try Self.fetch(unpooled, f, port: origin.port, "/peer")
        #expect(a.status == "200" && b.status == "200")
        #expect(a.body != b.body, "one connection without the pool: \(a.body)")
    }

    @Test("a client that refuses the forged certificate leaves the idle upstream connection it was given in the pool: the next client reuses it")
    func refusingClientGivesItBack() throws {
        let (f, origin, proxy, first) = try Self.afterOneFetch()
        // Without the proxy's CA, curl refuses the forged leaf and aborts its handshake,
        // after the proxy took the idle connection for it at the ClientHello.
        for _ in 0..<3 {
            let refused = try curl(["--proxy", proxy.url, "-o", "/dev/null", "-w", "%{http_code}", "https://localhost:\(origin.port)/peer"])
            #expect(refused.stdout == "000", "the forged leaf was accepted: \(refused)")
        }
        let second = try Self.fetch(proxy, f, port: origin.port, "/peer")
        #expect(first.status == "200" && second.status == "200", "\(first) \(second)")
        #expect(first.body == second.body, "the refused handshakes cost the idle connection: \(first.body), then \(second.body)")
    }

    @Test("an upstream whose response the client did not wait for is not reused")
    func unfinishedExchangeIsNotReused() throws {
        let (f, origin, proxy, first) = try Self.afterOneFetch()
        #expect(first.status == "200")
        // The pooled connection takes this request; curl leaves after the
        // head (the body is over its limit), the body still coming.
        let cut = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--max-filesize", "1000", "-o", "/dev/null",
                            "https://localhost:\(origin.port)/bytes/20000000"])
        #expect(cut.status == 63, "\(cut.status) \(cut.stderr)")
        let next = try Self.fetch(proxy, f, port: origin.port, "/peer")
        #expect(next.status == "200")
        #expect(next.body != first.body, "the connection with the unread body was used again")
        // The one after is kept and reused as usual.
        #expect(try Self.fetch(proxy, f, port: origin.port, "/peer").body == next.body)

        // A response that stops halfway, the connection quiet: the client
        // gives up, and the connection must not serve the next request.
        let stalled = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--max-time", "1", "-o", "/dev/null",
                                "https://localhost:\(origin.port)/stall"])
        #expect(stalled.status == 28, "\(stalled.status) \(stalled.stderr)")
        let after = try Self.fetch(proxy, f, port: origin.port, "/peer")
        #expect(after.status == "200", "\(after)")
        #expect(after.body != next.body, "the connection with the unfinished response was used again")
    }

    @Test("a chain that changed at the origin is verified again: an untrusted one refused, a renewed one shown")
    func changedChainIsVerified() throws {
        let f = try Fixtures()
        var origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let port = origin.port
        let proxy = try RunningProxy(f)
        #expect(try Self.fetch(proxy, f, port: port, "/peer").status == "200")

        // The same address, another server with an untrusted chain; the kept
        // connection went with the old server.
        Self.stop(origin)
        origin = try Origin(chain: f.untrustedChainPath, key: f.untrustedKeyPath, port: port)
        #expect(try Self.fetch(proxy, f, port: port, "/peer").status == "502")
        #expect(proxy.waitForEvent(.upstreamVerificationFailed) != nil)
        #expect(try Self.fetch(proxy, f, port: port, "/peer").status == "502")

        // A trusted server with a renewed certificate: verified, shown in the
        // flow, and that connection is the one kept.
        let renewed = try LeafForger(authority: f.originCA, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost"])
        let chainPath = f.directory.file("renewed-chain.pem"), keyPath = f.directory.file("renewed-key.pem")
        try FileIO.write(Array(renewed.chain.map { $0.pemEncoded }.joined().utf8), to: chainPath, mode: 0o644)
        try FileIO.write(Array(try renewed.privateKey.pemEncoded().utf8), to: keyPath, mode: 0o600)
        Self.stop(origin)
        origin = try Origin(chain: chainPath, key: keyPath, port: port)
        let a = try Self.fetch(proxy, f, port: port, "/peer")
        let b = try Self.fetch(proxy, f, port: port, "/peer")
        #expect(a.status == "200" && a.body == b.body, "\(a) \(b)")
        for flow in proxy.server.recorder.recent.flows.prefix(2) {
            #expect(flow.upstreamTLS?.verified == true)
            #expect(flow.upstreamTLS?.chain.first?.serial == renewed.certificate.serialNumberHex)
        }
        withExtendedLifetime(origin) {}
    }

    @Test("the stuff profile shows the genuine chain on a reused upstream connection")
    func profileSeesGenuineChain() throws {
        let world = try AttackWorld()
        let origin = try Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: .stuff)
        let first = try Self.fetch(proxy, world.base, port: origin.port, "/peer")
        #expect(first.status == "200")
        let openssl = try #require(findExecutable("openssl"))
        let s = try runProcess(openssl, ["s_client", "-proxy", "127.0.0.1:\(proxy.port)", "-connect", "localhost:\(origin.port)",
                                         "-servername", "localhost", "-showcerts", "-ign_eof",
                                         // What curl offers, so that the upstream was opened with the same offer.
                                         "-alpn", "h2,http/1.1"],
                               input: Array("GET /peer HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8), timeout: 30)
        // Served by the connection the first request used...
        #expect(s.stdout.contains("\r\n\r\n\(first.body)"), "\(s.stdout.suffix(300))")
        // ...and shown the forged leaf followed by the genuine chain.
        let shown = try Certificate.all(pemEncoded: s.stdout)
        #expect(shown.count == 5, "\(shown.map(\.subject))")
        #expect(shown.first?.issuer == world.proxyCA.certificate.subject)
        #expect(shown.contains(world.genuineLeaf) && shown.contains(world.intermediate.certificate))
    }
}
