import Foundation
import PinproxyBase
@testable import PinproxyProxy
import PinproxyTestSupport
import Testing

/// A client connection that ends while it holds an idle upstream connection
/// it took at its ClientHello gives it back once: its TLS layer lets go of
/// it, and so may the hand-over the client connection had scheduled.
@Suite("Idle upstream given back", .timeLimit(.minutes(5)))
struct IdleUpstreamReturnTests {
    /// Idle connections the proxy's pools hold, read on their loops.
    static func idleCount(_ proxy: RunningProxy) -> Int {
        proxy.server.loops.all.map { loop -> Int in
            guard let pool = proxy.server.idleUpstreams.pool(for: loop) else { return 0 }
            return loop.queue.sync { pool.idleCount }
        }.reduce(0, +)
    }

    /// Python that opens a tunnel to the origin through the proxy: `tunnel()`
    /// returns the socket once the proxy answered the CONNECT; `read_until(s, done)`
    /// reads until `done(bytes so far)` holds or the peer closes.
    static let tunnel = """
    import socket, ssl, sys, time
    proxy, port = int(sys.argv[1]), int(sys.argv[2])

    def read_until(s, done):
        answer = b""
        while not done(answer):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        return answer

    def tunnel():
        s = socket.create_connection(("127.0.0.1", proxy))
        s.sendall(b"CONNECT localhost:%d HTTP/1.1\\r\\nHost: localhost:%d\\r\\n\\r\\n" % (port, port))
        answer = read_until(s, lambda a: b"\\r\\n\\r\\n" in a)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        return s

    """

    /// CONNECT through the proxy, then a ClientHello and the end of the
    /// stream in one go, so that the proxy meets both in one batch of events.
    static let helloThenGone = tunnel + """
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2", "http/1.1"])  # as curl offers: the same idle connections
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    engine = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        engine.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    s = tunnel()
    s.sendall(hello)
    s.shutdown(socket.SHUT_WR)
    time.sleep(0.3)
    s.close()
    print("sent")
    """

    @Test("a client that sends its ClientHello and leaves at once returns the idle connection it took, once: the pool holds it one time and the next client reuses it")
    func helloThenGoneReturnsItOnce() throws {
        let (f, origin, proxy, first) = try IdleUpstreamPoolTests.afterOneFetch()
        #expect(first.status == "200")
        #expect(Self.idleCount(proxy) == 1)
        let python = try #require(findExecutable("python3"))
        for _ in 0..<3 {
            let r = try runProcess(python, ["-c", Self.helloThenGone, String(proxy.port), String(origin.port)], timeout: 30)
            #expect(r.stdout.contains("sent"), "\(r)")
            // The proxy has seen the end by the time the script closes.
            var count = -1
            for _ in 0..<20 {
                count = Self.idleCount(proxy)
                if count == 1 { break }
                usleep(50_000)
            }
            usleep(100_000)
            count = Self.idleCount(proxy)
            #expect(count == 1, "idle connections in the pool after a ClientHello and a close: \(count)")
        }
        // Given back twice, as when the connection ends in the batch that took it
        // (its layer and the scheduled hand-over both let go): held once.
        let counts = proxy.server.loops.all.compactMap { loop -> (Int, Int)? in
            guard let pool = proxy.server.idleUpstreams.pool(for: loop) else { return nil }
            return loop.queue.sync {
                guard let up = pool.parkedUpstreams.first, let taken = pool.take(up.poolKey) else { return (-1, -1) }
                pool.park(taken)
                let once = pool.idleCount
                pool.park(taken)
                return (once, pool.idleCount)
            }
        }
        #expect(counts.contains { $0 == (1, 1) }, "idle connections after parking one twice: \(counts)")
        let second = try IdleUpstreamPoolTests.fetch(proxy, f, port: origin.port, "/peer")
        #expect(second.status == "200")
        #expect(first.body == second.body, "the idle connection was not reused: \(first.body), then \(second.body)")
    }

    /// CONNECT, a whole handshake (no ALPN, trusting anything), then gone
    /// without a request, as `openssl s_time -new` does.
    static let handshakeThenGone = tunnel + """
    s = tunnel()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    t = ctx.wrap_socket(s, server_hostname="localhost")
    print(t.version())
    t.close()
    """

    @Test("a client that completes its handshake and leaves without a request leaves the connection opened for it in the pool: the next such client takes the same one")
    func handshakeOnlyClientsShareOne() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let python = try #require(findExecutable("python3"))
        func parked() -> [ObjectIdentifier] {
            proxy.server.loops.all.flatMap { loop -> [ObjectIdentifier] in
                guard let pool = proxy.server.idleUpstreams.pool(for: loop) else { return [] }
                return loop.queue.sync { pool.parkedUpstreams.map(ObjectIdentifier.init) }
            }
        }
        var seen: [[ObjectIdentifier]] = []
        for _ in 0..<3 {
            let r = try runProcess(python, ["-c", Self.handshakeThenGone, String(proxy.port), String(origin.port)], timeout: 30)
            #expect(r.stdout.hasPrefix("TLSv1.3"), "\(r)")
            var now: [ObjectIdentifier] = []
            for _ in 0..<40 {
                now = parked()
                if now.count == 1 { break }
                usleep(50_000)
            }
            seen.append(now)
        }
        #expect(seen.allSatisfy { $0.count == 1 }, "idle connections after each client: \(seen.map(\.count))")
        #expect(Set(seen.flatMap { $0 }).count == 1, "each client opened its own upstream connection: \(seen)")
    }
}
