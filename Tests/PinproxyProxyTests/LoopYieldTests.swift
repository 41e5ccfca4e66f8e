import Dispatch
import Foundation
@testable import PinproxyProxy
import PinproxyBase
import PinproxyTestSupport
import Testing

/// An event loop yields the CPU after a small batch while many HTTP/2
/// streams are open on it (`EventLoop.shouldYield`): the rule, and the count
/// of open streams the HTTP/2 layer keeps on its loop.
@Suite("Event loop yielding", .timeLimit(.minutes(5)))
struct LoopYieldTests {
    @Test("a small, quick batch yields only with at least sixteen streams open; a batch of four sockets or of 50 µs does not")
    func rule() {
        let quick: UInt64 = 10_000
        #expect(EventLoop.shouldYield(events: 1, openStreams: 16, batchNanoseconds: quick))
        #expect(EventLoop.shouldYield(events: 3, openStreams: 100, batchNanoseconds: 49_999))
        // HTTP/1.1 keep-alive clients and a few HTTP/2 streams: no yield.
        #expect(!EventLoop.shouldYield(events: 1, openStreams: 15, batchNanoseconds: quick))
        #expect(!EventLoop.shouldYield(events: 1, openStreams: 0, batchNanoseconds: quick))
        // Enough came at once, or the batch was long (a large body moving): no yield.
        #expect(!EventLoop.shouldYield(events: 4, openStreams: 100, batchNanoseconds: quick))
        #expect(!EventLoop.shouldYield(events: 1, openStreams: 100, batchNanoseconds: 50_000))
    }

    /// The open streams of every loop of `proxy`, read on each loop's queue.
    static func openStreams(_ proxy: RunningProxy) -> Int {
        proxy.server.loops.all.map { loop in LoopTimerTests.onLoop(loop) { loop.openStreams } }.reduce(0, +)
    }

    /// The open streams once the clients have gone and their connections
    /// closed (at most 5 s), or what is still counted then.
    static func openStreamsAfterClosing(_ proxy: RunningProxy) -> Int {
        var open = -1
        for _ in 0..<50 {
            open = openStreams(proxy)
            if open == 0 && proxy.server.openConnections == 0 { break }
            usleep(100_000)
        }
        return open
    }

    @Test("h2load with 32 streams in flight: the loop counts them while they are open, and none once the connections are gone")
    func openStreamsAreCounted() throws {
        let h2load = try #require(findExecutable("/usr/bin/h2load", "h2load"), "h2load (nghttp2-client) is required")
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 1 << 10)
        // A loop set of its own (no other test runs five loops; the test beside it runs six):
        // only this test's streams count.
        let proxy = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.eventLoops = 5
            c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
        })
        // Sampled between the loops' turns while h2load keeps 32 streams going.
        let running = Locked(true)
        let peak = Locked(0)
        let sampler = Thread {
            while running.withLock({ $0 }) {
                let open = Self.openStreams(proxy)
                peak.withLock { $0 = max($0, open) }
                usleep(1_000)
            }
        }
        sampler.start()
        let r = try runProcess(h2load, ["-n", "20000", "-c", "1", "-m", "32", "https://127.0.0.1:\(proxy.port)/bulk"], timeout: 120)
        running.withLock { $0 = false }
        #expect(r.stdout.contains("20000 succeeded, 0 failed"), "\(r.stdout) \(r.stderr)")
        #expect(peak.withLock { $0 } >= 16, "at most \(peak.withLock { $0 }) streams counted open")
        #expect(peak.withLock { $0 } <= 32, "more streams counted than were ever open: \(peak.withLock { $0 })")
        // h2load has gone; its connection may still be closing.
        let open = Self.openStreamsAfterClosing(proxy)
        #expect(open == 0, "streams still counted open after the client left: \(open)")
    }

    @Test("a client that resets streams and one that leaves with streams open: the loop's count goes back to zero")
    func resetAndAbandonedStreamsAreUncounted() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        // Six loops: a set of its own, apart from the five of the test beside it.
        let proxy = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.eventLoops = 6
        })
        // Five 1 MiB streams and an 8 MiB one reset after 256 KiB.
        let reset = try H2Peers.client("reset-mid-body", proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        #expect(reset.status == 0, "\(reset.stdout) \(reset.stderr)")
        // Twenty streams opened at once; the client closes once each has ended.
        let many = try H2Peers.rawClient("many", proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        #expect(many.status == 0, "\(many.stderr)")
        // Ten large downloads, the connection closed at their first bytes.
        let abandoned = try H2Peers.rawClient("abandon", proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        #expect(abandoned.stdout.contains("ABANDONED"), "\(abandoned.stdout) \(abandoned.stderr)")
        let open = Self.openStreamsAfterClosing(proxy)
        #expect(open == 0, "streams still counted open: \(open)")
    }
}
