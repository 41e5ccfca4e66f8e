import Foundation
import PinproxyProxy
import Testing

/// The upload twin of "a stream whose reader never opens its window": a
/// request body is taken from the client only as the upstream takes it, so a
/// proxy in front of a stalled origin holds a bounded part of the body, not
/// all of it (Support/h2_upload_stall.py, a python3-h2 client that sends
/// whatever the proxy's windows allow).
@Suite("HTTP/2 upload to a stalled origin", .timeLimit(.minutes(10)))
struct HTTP2UploadStallTests {
    /// The proxy's receive window per client stream (``HTTP2Limits/initialStreamWindow``).
    static let streamWindow = 256 * 1024

    static func upload(to origin: String, size: Int) throws -> (taken: Int, received: Int, output: String) {
        let f = try Fixtures()
        guard let python = H2Peers.python else { throw HarnessError("python3 with h2 (python3-h2) not found") }
        let proxy = try RunningProxy(f, configure: { $0.http2 = true })
        let r = try runProcess(python, [H2Peers.script("h2_upload_stall.py"), origin, "--port", String(proxy.port),
                                        "--cert", f.originChainPath, "--key", f.originKeyPath, "--size", String(size)],
                               timeout: 90)
        #expect(r.status == 0 && !r.timedOut, "\(r.stdout) \(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        func value(_ key: String) -> Int? { lines.first { $0.first == key && $0.count == 2 }.flatMap { Int($0[1]) } }
        let taken = try #require(value("TAKEN"), "\(r.stdout) \(r.stderr)")
        let received = try #require(value("RECEIVED"), "\(r.stdout) \(r.stderr)")
        withExtendedLifetime(proxy) {}
        return (taken, received, r.stdout)
    }

    @Test("relayed to an HTTP/2 origin that never opens its window, a 16 MiB upload gives the proxy about one stream window")
    func relayedUploadBoundedByWindows() throws {
        let size = 16 << 20
        let (taken, received, output) = try Self.upload(to: "h2", size: size)
        // The origin's window (65,535, never opened) bounds what reached it.
        #expect(received > 0 && received <= 65_535, "the origin received \(received) bytes: \(output)")
        // The client gave what reached the origin plus the proxy's stream
        // window, not the body a proxy that consumed on receipt would take.
        #expect(taken >= received && taken <= Self.streamWindow + 65_535, "the proxy took \(taken) of \(size) bytes: \(output)")
    }

    @Test("translated to an HTTP/1.1 origin that never reads, a large upload gives the proxy a stream window and what the sockets hold")
    func translatedUploadBoundedBySockets() throws {
        // What the kernel may hold on the way: the proxy's send buffer grows up
        // to tcp_wmem's maximum; the origin's receive buffer is 16 KiB (the
        // kernel doubles it); the proxy's transport queues 256 KiB before it
        // counts as congested (Transport.highWater).
        let wmem = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } ?? 4 << 20
        let bound = Self.streamWindow + 256 * 1024 + wmem + 2 * 16384 + 64 * 1024
        // Four times the bound, so a proxy that took the whole body is plain to see.
        let size = max(32 << 20, 4 * bound)
        let (taken, _, output) = try Self.upload(to: "http1", size: size)
        #expect(taken > 0 && taken <= bound, "the proxy took \(taken) of \(size) bytes (bound \(bound)): \(output)")
    }
}
