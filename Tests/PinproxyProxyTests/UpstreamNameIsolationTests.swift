import Foundation
import PinproxyProxy
import Testing

/// Two names on one address and port (virtual hosting, a CDN): what the
/// proxy verified for one name — a kept upstream connection, a cached TLS
/// session — never serves the other. The proxy's resolve map sends every name
/// to the one loopback origin, so no name is looked up.
///
/// The origin's certificate (Fixtures' origin leaf) covers `origin.test` and
/// `localhost`, not `second.test`.
@Suite("Upstream state kept per name", .timeLimit(.minutes(10)))
struct UpstreamNameIsolationTests {
    /// Covered by the origin's certificate.
    static let coveredName = "origin.test"
    /// Covered by it as well: two names one verification would pass for.
    static let alsoCoveredName = "localhost"
    /// Not covered by it.
    static let uncoveredName = "second.test"

    static func proxy(_ f: Fixtures, pooled: Bool) throws -> RunningProxy {
        var addresses: UpstreamAddresses?
        let proxy = try RunningProxy(f) {
            addresses = $0.upstreamAddresses
            if !pooled { $0.timeouts.idleUpstream = 0 }
        }
        // The running proxy shares the configuration's map.
        for name in [Self.coveredName, Self.alsoCoveredName, Self.uncoveredName] {
            try #require(addresses).set(name, to: "127.0.0.1")
        }
        return proxy
    }

    /// A request for `name` through the proxy (CONNECT by name: curl asks no DNS): the status and the body.
    static func fetch(_ proxy: RunningProxy, _ f: Fixtures, _ name: String, port: Int, _ path: String) throws -> (status: String, body: String) {
        let r = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-H", "Connection: close",
                          "-w", "\n%{http_code}", "https://\(name):\(port)\(path)"])
        let parts = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(parts.last ?? ""), parts.dropLast().joined(separator: "\n"))
    }

    /// The reason of the newest `upstream-verification-failed` event, waited for (bounded).
    static func verificationFailure(_ proxy: RunningProxy) -> String? {
        proxy.waitForEvent(.upstreamVerificationFailed)?.reason
    }

    @Test("a kept upstream connection verified for one name never carries another name's request to the same address: that name gets its own verification, and fails it")
    func pooledConnectionIsPerName() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try Self.proxy(f, pooled: true)
        // The covered name's connection is kept and reused: the pool is in play.
        let first = try Self.fetch(proxy, f, Self.coveredName, port: origin.port, "/peer")
        let again = try Self.fetch(proxy, f, Self.coveredName, port: origin.port, "/peer")
        #expect(first.status == "200" && again.status == "200", "\(first) \(again)")
        #expect(first.body == again.body, "the covered name's connection was not reused: \(first.body), \(again.body)")

        // The other name gets a connection of its own, whose certificate does not name it: refused, naming the mismatch.
        let other = try Self.fetch(proxy, f, Self.uncoveredName, port: origin.port, "/peer")
        #expect(other.status == "502", "\(Self.uncoveredName) was served (connection \(other.body), \(Self.coveredName)'s \(first.body))")
        #expect(other.body.contains("mismatch"), "\(other.body)")
        let reason = Self.verificationFailure(proxy)
        #expect(reason?.contains("mismatch") == true, "\(reason ?? "no upstream-verification-failed event")")
        // Refused again: nothing was kept for it.
        #expect(try Self.fetch(proxy, f, Self.uncoveredName, port: origin.port, "/peer").status == "502")
        // The covered name's kept connection still serves it.
        let last = try Self.fetch(proxy, f, Self.coveredName, port: origin.port, "/peer")
        #expect(last.status == "200" && last.body == first.body, "\(last)")
        withExtendedLifetime(origin) {}
    }

    @Test("a kept upstream connection is never shared between names, not even two its certificate covers: each name gets its own connection and SNI")
    func pooledConnectionIsNotCoalesced() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try Self.proxy(f, pooled: true)
        let a = try Self.fetch(proxy, f, Self.coveredName, port: origin.port, "/peer")
        let b = try Self.fetch(proxy, f, Self.alsoCoveredName, port: origin.port, "/peer")
        #expect(a.status == "200" && b.status == "200", "\(a) \(b)")
        #expect(a.body != b.body, "\(Self.alsoCoveredName) rode \(Self.coveredName)'s connection (port \(a.body))")
        // Each name then has its own kept connection.
        #expect(try Self.fetch(proxy, f, Self.coveredName, port: origin.port, "/peer").body == a.body)
        #expect(try Self.fetch(proxy, f, Self.alsoCoveredName, port: origin.port, "/peer").body == b.body)
        withExtendedLifetime(origin) {}
    }

    @Test("a TLS session cached for one name is never resumed for another name on the same address: it gets a full, failed verification",
          arguments: UpstreamResumptionTests.protocols)
    func sessionIsPerName(protocolOptions: [String]) throws {
        let f = try Fixtures()
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        let server = try SServer(openssl, ["-cert", f.originChainPath, "-key", f.originKeyPath, "-www"] + protocolOptions)
        // No kept connections: every request is a new upstream handshake.
        let proxy = try Self.proxy(f, pooled: false)
        func latest() -> UpstreamTLSDetails? { proxy.server.recorder.recent.flows.first?.upstreamTLS }
        #expect(try Self.fetch(proxy, f, Self.coveredName, port: server.port, "/").status == "200")
        #expect(latest()?.resumed == false)
        #expect(try Self.fetch(proxy, f, Self.coveredName, port: server.port, "/").status == "200")
        #expect(latest()?.resumed == true, "the covered name's session was not cached")

        // Its session, offered for the other name, would pass for a verification it never had.
        for _ in 0..<2 {
            let other = try Self.fetch(proxy, f, Self.uncoveredName, port: server.port, "/")
            #expect(other.status == "502", "\(Self.uncoveredName) was served (resumed: \(String(describing: latest()?.resumed)))")
        }
        let reason = Self.verificationFailure(proxy)
        #expect(reason?.contains("mismatch") == true, "\(reason ?? "no upstream-verification-failed event")")
        // The covered name still resumes its own.
        #expect(try Self.fetch(proxy, f, Self.coveredName, port: server.port, "/").status == "200")
        #expect(latest()?.resumed == true)
        withExtendedLifetime(server) {}
    }

    @Test("a second name the certificate covers too gets a full handshake of its own, not the first name's session (as the origin reports it)",
          arguments: UpstreamResumptionTests.protocols)
    func sessionIsNotSharedByCoveredNames(protocolOptions: [String]) throws {
        let f = try Fixtures()
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        let server = try SServer(openssl, ["-cert", f.originChainPath, "-key", f.originKeyPath, "-www"] + protocolOptions)
        let proxy = try Self.proxy(f, pooled: false)
        func latest() -> UpstreamTLSDetails? { proxy.server.recorder.recent.flows.first?.upstreamTLS }
        /// `-www` answers with its view of the handshake: "New, TLSv1.3, …" or "Reused, …".
        func handshake(_ name: String) throws -> String {
            let r = try Self.fetch(proxy, f, name, port: server.port, "/")
            #expect(r.status == "200", "\(r)")
            return r.body.split(separator: "\n").first { $0.hasPrefix("New, ") || $0.hasPrefix("Reused, ") }.map(String.init) ?? r.body
        }
        #expect(try handshake(Self.coveredName).hasPrefix("New, "))
        #expect(try handshake(Self.coveredName).hasPrefix("Reused, "), "the covered name's session was not cached")
        // The other name's first connection: a full handshake, verified for that name.
        let other = try handshake(Self.alsoCoveredName)
        #expect(other.hasPrefix("New, "), "\(Self.alsoCoveredName) resumed \(Self.coveredName)'s session: \(other)")
        #expect(latest()?.resumed == false && latest()?.verified == true, "\(String(describing: latest()))")
        // From then on it resumes its own.
        #expect(try handshake(Self.alsoCoveredName).hasPrefix("Reused, "))
        withExtendedLifetime(server) {}
    }
}
