import Foundation
@testable import PinproxyProxy
import PinproxyTestSupport
import Testing

/// What the idle upstream pool must never keep or hand out: a connection
/// that carries part of a request body the origin never read, a connection to
/// an address the name no longer resolves to, and more than its per-upstream
/// limit. Each is seen through the origin (Support/origin.py) and the pool's
/// own count.
@Suite("Idle upstream: what is never reused", .timeLimit(.minutes(10)))
struct IdleUpstreamSafetyTests {
    /// Waits (bounded) until the pools hold `expected` idle connections, then a
    /// moment more, and returns the count then.
    static func settledIdleCount(_ proxy: RunningProxy, expecting expected: Int) -> Int {
        for _ in 0..<40 {
            if IdleUpstreamReturnTests.idleCount(proxy) >= expected { break }
            usleep(50_000)
        }
        usleep(300_000)
        return IdleUpstreamReturnTests.idleCount(proxy)
    }

    /// A POST that declares 100,000 bytes and sends 10; the origin answers 413
    /// at once and keeps its connection, the 10 bytes unread. Prints the status line.
    /// It offers ALPN as curl does, so that it takes the connection curl's fetch left idle.
    static let cutShortPost = IdleUpstreamReturnTests.tunnel + """
    ctx = ssl.create_default_context(cafile=sys.argv[3])
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    t = ctx.wrap_socket(tunnel(), server_hostname="localhost")
    assert t.selected_alpn_protocol() in (None, "http/1.1"), t.selected_alpn_protocol()
    t.sendall(b"POST /early-keep/413 HTTP/1.1\\r\\nHost: localhost:%d\\r\\nContent-Length: 100000\\r\\n\\r\\n" % port + b"x" * 10)
    answer = read_until(t, lambda a: b"connection kept\\n" in a)
    print(answer.split(b"\\r\\n")[0].decode())
    t.close()
    """

    @Test("an upstream connection that carried part of a request body is never parked: the client's next request elsewhere gets a clean connection, not the rest of that body")
    func halfSentBodyIsNotParked() throws {
        let (f, origin, proxy, first) = try IdleUpstreamPoolTests.afterOneFetch()
        #expect(first.status == "200")
        #expect(IdleUpstreamReturnTests.idleCount(proxy) == 1)
        let python = try #require(findExecutable("python3"))
        let r = try runProcess(python, ["-c", Self.cutShortPost, String(proxy.port), String(origin.port), f.proxyCAPath], timeout: 30)
        #expect(r.stdout.hasPrefix("HTTP/1.1 413"), "\(r)")
        // The POST took the kept connection and left its unread body on it: closed, not kept.
        let idle = Self.settledIdleCount(proxy, expecting: 1)
        #expect(idle == 0, "the connection with the half-sent body went back to the pool (\(idle) idle)")
        // The next client gets a connection of its own, and its answer.
        let next = try IdleUpstreamPoolTests.fetch(proxy, f, port: origin.port, "/peer")
        #expect(next.status == "200", "the next request met the rest of the body: \(next)")
        #expect(next.body != first.body, "the next request rode the POST's connection (port \(next.body))")
        withExtendedLifetime(origin) {}
    }

    @Test("after PUT /resolve moves a name to another address, a connection kept for the old address is not used for it: the request reaches the new one")
    func movedNameGetsANewConnection() throws {
        let f = try Fixtures()
        let old = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        // Another origin on the same port of another loopback address.
        let moved = try Origin(chain: f.originChainPath, key: f.originKeyPath, port: old.port, host: "127.0.0.2")
        let proxy = try RunningProxy(f, admin: true)
        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        func resolve(_ address: String) throws {
            let r = try curl(["-X", "PUT", "--data", #"{"origin.test":"\#(address)"}"#, "-o", "/dev/null", "-w", "%{http_code}", "\(admin)/resolve"])
            #expect(r.stdout == "200", "\(r)")
        }
        try resolve("127.0.0.1")
        let a = try UpstreamNameIsolationTests.fetch(proxy, f, "origin.test", port: old.port, "/address")
        let again = try UpstreamNameIsolationTests.fetch(proxy, f, "origin.test", port: old.port, "/address")
        #expect(a.status == "200" && a.body == "127.0.0.1" && again.body == "127.0.0.1", "\(a) \(again)")
        #expect(IdleUpstreamReturnTests.idleCount(proxy) == 1, "no connection kept: the test says nothing")

        try resolve("127.0.0.2")
        let b = try UpstreamNameIsolationTests.fetch(proxy, f, "origin.test", port: old.port, "/address")
        #expect(b.status == "200" && b.body == "127.0.0.2", "the request went to the old address over a kept connection: \(b)")
        // Back again: the old address's kept connection serves it.
        try resolve("127.0.0.1")
        let back = try UpstreamNameIsolationTests.fetch(proxy, f, "origin.test", port: old.port, "/address")
        #expect(back.status == "200" && back.body == "127.0.0.1", "\(back)")
        withExtendedLifetime((old, moved)) {}
    }

    /// Opens `count` client connections, one after the other, each with a
    /// keep-alive GET /peer answered and the connection left open (so each
    /// holds an upstream connection of its own); prints the ports the origin
    /// saw, then closes them all at once.
    static let manyThenClose = IdleUpstreamReturnTests.tunnel + """
    ca, count = sys.argv[3], int(sys.argv[4])
    ctx = ssl.create_default_context(cafile=ca)
    held, ports = [], []
    for _ in range(count):
        t = ctx.wrap_socket(tunnel(), server_hostname="localhost")
        t.sendall(b"GET /peer HTTP/1.1\\r\\nHost: localhost:%d\\r\\n\\r\\n" % port)
        answer = read_until(t, lambda a: b"\\r\\n\\r\\n" in a and len(a.split(b"\\r\\n\\r\\n", 1)[1]) >= 4)
        ports.append(answer.split(b"\\r\\n\\r\\n", 1)[1].decode())
        held.append(t)
    print(" ".join(ports))
    for t in held:
        t.close()
    time.sleep(0.3)
    """

    @Test("the pool keeps at most 16 idle connections to one upstream: 17 clients that each held their own and leave together leave 16")
    func perUpstreamLimit() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        // One loop, so that one pool sees every connection.
        let proxy = try RunningProxy(f) { $0.eventLoops = 1 }
        let python = try #require(findExecutable("python3"))
        let r = try runProcess(python, ["-c", Self.manyThenClose, String(proxy.port), String(origin.port), f.proxyCAPath, "17"], timeout: 60)
        let ports = r.stdout.split(whereSeparator: \.isWhitespace)
        #expect(ports.count == 17 && Set(ports).count == 17, "17 clients did not hold 17 upstream connections: \(r)")
        let idle = Self.settledIdleCount(proxy, expecting: 16)
        #expect(idle == IdleUpstreamPool.Limits().perKey, "idle connections kept for one upstream: \(idle)")
        #expect(idle == 16)
        withExtendedLifetime(origin) {}
    }
}
