import Dispatch
import Foundation
@testable import PinproxyProxy
import PinproxyBase
import PinproxyTestSupport
import Testing

/// An event loop's own timers (`LoopTimers`, `EventLoop.schedule`), which
/// replaced `asyncAfter` for the connections' deadlines, and the listening
/// socket watched by a loop.
@Suite("Event loop timers", .timeLimit(.minutes(5)))
struct LoopTimerTests {
    /// Loops of a set no other test asks for (five), one per test below: a loop is never torn
    /// down, so no timer or sweep of one outlives it.
    static let loops = EventLoops.shared(count: 5)

    /// Runs `body` on `loop`'s queue and waits for it.
    static func onLoop<T>(_ loop: EventLoop, _ body: @escaping () -> T) -> T {
        var result: T?
        loop.queue.sync { result = body() }
        return result!
    }

    @Test("the heap hands out due timers earliest first, same instants in the order scheduled, cancelled ones never, also across a compaction")
    func heapOrder() {
        let loop = Self.loops.all[0]
        var heap = LoopTimers()
        var ran: [Int] = []
        var timers: [(deadline: UInt64, index: Int, timer: LoopTimer)] = []
        var generator = SystemRandomNumberGenerator()
        for index in 0..<400 {
            // Few distinct instants, so that many share one.
            let deadline = UInt64(Int.random(in: 1...40, using: &generator)) * 1000
            let timer = heap.add(at: deadline, loop: loop) { ran.append(index) }
            timers.append((deadline, index, timer))
        }
        // Cancel three in four: more than enough to compact the heap.
        var live: [(deadline: UInt64, index: Int)] = []
        for entry in timers {
            if entry.index % 4 == 0 { live.append((entry.deadline, entry.index)) } else { heap.cancel(entry.timer) }
        }
        #expect(heap.count == live.count)
        #expect(heap.earliest() == live.map(\.deadline).min())
        let expected = live.sorted { $0.deadline != $1.deadline ? $0.deadline < $1.deadline : $0.index < $1.index }
        // In two steps: what is due at the midpoint, then the rest.
        for body in heap.takeDue(at: 20_000) { body() }
        #expect(ran == expected.filter { $0.deadline <= 20_000 }.map(\.index))
        #expect(heap.earliest() == expected.first { $0.deadline > 20_000 }?.deadline)
        for body in heap.takeDue(at: .max) { body() }
        #expect(ran == expected.map(\.index))
        #expect(heap.count == 0 && heap.earliest() == nil)
    }

    @Test("timers scheduled on a loop fire at their time in deadline order; one cancelled before its time never runs, and the ones after it still do")
    func firesAndCancels() async throws {
        let loop = Self.loops.all[1]
        let fired = Locked<[(String, TimeInterval)]>([])
        let start = Date()
        func note(_ name: String) { fired.withLock { $0.append((name, Date().timeIntervalSince(start))) } }
        let pending = Self.onLoop(loop) { () -> Int in
            // Each later one is scheduled before an earlier one, and the
            // earliest of all is cancelled: the timerfd must be armed again
            // for what is left each time.
            _ = loop.queue.later(after: 0.45) { note("late") }
            _ = loop.queue.later(after: 0.2) { note("early") }
            let cancelled = loop.queue.later(after: 0.05) { note("cancelled") }
            cancelled?.cancel()
            #expect(cancelled?.isPending == false)
            return loop.pendingTimers
        }
        #expect(pending == 2)
        try await Task.sleep(for: .milliseconds(800))
        let seen = fired.withLock { $0 }
        #expect(seen.map(\.0) == ["early", "late"], "\(seen)")
        if seen.count == 2 {
            #expect(seen[0].1 >= 0.19, "fired early: \(seen)")
            #expect(seen[1].1 >= 0.44, "fired early: \(seen)")
        }
        #expect(Self.onLoop(loop) { loop.pendingTimers } == 0)
    }

    @Test("cancelling the only pending timer disarms the loop's timerfd; a timer scheduled after that still fires")
    func cancelOnlyThenSchedule() async throws {
        let loop = Self.loops.all[2]
        let fired = Locked<[String]>([])
        Self.onLoop(loop) {
            loop.queue.later(after: 0.05) { fired.withLock { $0.append("cancelled") } }?.cancel()
        }
        try await Task.sleep(for: .milliseconds(150))
        Self.onLoop(loop) {
            _ = loop.queue.later(after: 0.05) { fired.withLock { $0.append("second") } }
        }
        try await Task.sleep(for: .milliseconds(400))
        #expect(fired.withLock { $0 } == ["second"])
    }

    @Test("off a loop's queue, later(after:) still runs the closure on that queue, through Dispatch")
    func offLoopFallsBack() async throws {
        let queue = DispatchQueue(label: "test.timers.plain")
        let ran = Locked(false)
        let handle = queue.sync { queue.later(after: 0.05) { ran.withLock { $0 = true } } }
        #expect(handle == nil)
        try await Task.sleep(for: .milliseconds(400))
        #expect(ran.withLock { $0 })
    }

    @Test("connections that came and went leave no timers behind on their loop: their deadlines are cancelled, not left to fire")
    func finishedConnectionsLeaveNoTimers() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        // A loop set of its own (no other test runs seven loops), and no idle
        // upstream kept, whose timer would rightly stay.
        let proxy = try RunningProxy(f) {
            $0.eventLoops = 7
            $0.timeouts.idleUpstream = 0
        }
        for _ in 0..<12 {
            let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-H", "Connection: close",
                              "-o", "/dev/null", "-w", "%{http_code}", "https://localhost:\(origin.port)/hello"])
            #expect(r.stdout == "200")
        }
        // The last connection may still be closing.
        var pending = 0
        for _ in 0..<50 {
            pending = proxy.server.loops.all.map { loop in Self.onLoop(loop) { loop.pendingTimers } }.reduce(0, +)
            if pending == 0 { break }
            usleep(100_000)
        }
        #expect(pending == 0, "timers left on the loops after 12 finished connections: \(pending)")
        #expect(proxy.server.openConnections == 0)
    }

    @Test("stop() takes the listening socket out of its loop and closes it: new connections are refused, the port can be bound again")
    func stopClosesListener() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f)
        let port = proxy.port
        let before = try curl(["--proxy", proxy.url, "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:9/"])
        #expect(before.stdout != "000", "the proxy did not answer before stop: \(before)")
        proxy.server.stop()
        let after = try curl(["--proxy", proxy.url, "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:9/"])
        #expect(after.stdout == "000", "still answering after stop: \(after)")
        let again = try Socket.listen(ListenAddress(host: "127.0.0.1", port: port))
        again.close()
    }
}
