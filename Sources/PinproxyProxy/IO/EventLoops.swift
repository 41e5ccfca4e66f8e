import Dispatch
import Foundation
internal import CPinproxyIO
import Synchronization

/// A serial queue with its own epoll set, watched by one dispatch source.
///
/// Every transport on the loop registers its socket in the loop's epoll set
/// (level-triggered); libdispatch watches only the epoll descriptor. One
/// readiness wake-up then serves every socket that became ready, on the
/// loop's queue, back to back.
///
/// Why not a dispatch source per socket: on Linux each source is
/// registered one-shot, so every event costs libdispatch's epoll thread an
/// `ioctl(FIONREAD)` and an `epoll_ctl` re-arm, and a hand-off from that
/// thread to a worker — several system calls and a context switch per read,
/// which measured as more than half of the proxy's time.
///
/// The same holds, per batch, for the one source on the epoll set: after
/// each handler run libdispatch re-arms it through its manager thread (an
/// eventfd poke and an `epoll_ctl`), and the next event wakes the manager
/// and then a worker. So while traffic flows the handler stays: it waits in
/// `epoll_wait` itself for up to ``lingerMilliseconds`` for the next event,
/// and hands back to libdispatch when the loop falls idle or after
/// ``turnNanoseconds``, so that blocks queued on the loop's queue (timers,
/// shutdown) still run promptly. Work that must not wait for that — a new
/// connection — comes in through ``execute(_:)``, which wakes the loop
/// through an eventfd in its own epoll set.
///
/// Timers scheduled on the loop (``schedule(after:_:)``, and
/// `DispatchQueue.later(after:)` on the loop's queue) wait in the loop's own
/// heap behind one timerfd in its epoll set. `asyncAfter` made each of them
/// a dispatch source that libdispatch registered through its manager thread:
/// an eventfd poke and a wake-up of that thread per timer armed, and two
/// wake-ups (manager, then worker) per timer fired, about eight timers per
/// new connection.
///
/// While many HTTP/2 streams wait on the loop's connections, a batch that
/// brought little to do ends with `sched_yield` (``shouldYield(events:openStreams:batchNanoseconds:)``):
/// on a machine whose cores the client, the proxy and the origin share, the
/// loop otherwise takes each response as it trickles in, a record and a
/// system call per response on every leg; yielding lets the origin and the
/// client run on and hands the next batch several at once
/// (docs/proxy.md, "Yielding after a small batch"). With a core to spare,
/// `sched_yield` finds nothing else to run and returns at once.
///
/// Nothing that blocks may run on a loop: it would stall every connection
/// assigned to it.
final class EventLoop: @unchecked Sendable {
    // Sendable: `watched`, `events`, `deferred` and `sends` are touched only on
    // `queue`; `mailbox` is locked; the descriptors never change.
    let queue: DispatchQueue
    private let epfd: Int32
    private let wakeupFD: Int32
    private let timerFD: Int32
    /// Closures waiting for their instant, and what the timerfd is armed for.
    @exclusivity(unchecked) private var timers = LoopTimers()
    @exclusivity(unchecked) private var timerArmedFor = UInt64.max
    /// Listening sockets in the epoll set, with what accepts on them.
    @exclusivity(unchecked) private var listeners: [Int32: () -> Void] = [:]
    /// HTTP/2 streams open on the loop's connections, counted in and out by
    /// ``HTTP2ExchangeLayer``; only on `queue`.
    @exclusivity(unchecked) var openStreams = 0
    private var source: DispatchSourceRead?
    // The per-event state (`watched`, `deferred`, `serving`, `sends`, the
    // flags, `sweepCount`) is touched only on `queue`, one event at a time,
    // so it skips Swift's run-time exclusivity checks (about 400
    // instructions per keep-alive request; docs/architecture.md,
    // "Exclusivity checks").
    /// Registered sockets and their transports (kept alive while registered).
    @exclusivity(unchecked) private var watched = WatchTable()
    private let events: UnsafeMutablePointer<pp_ready_event>
    private static let batch: Int32 = 128
    /// How long the handler waits for the next event before handing back.
    private static let lingerMilliseconds: Int32 = 1
    /// Open streams from which a small batch yields (see the type's notes):
    /// HTTP/1.1 clients, one request each in flight, and a few HTTP/2
    /// streams, do not. A multiplexing load (h2load's 4 × 25) does.
    static let yieldStreams = 16
    /// A batch of fewer ready sockets than this, done in less time than
    /// ``yieldNanoseconds``, is a small one. A large download's batch moves
    /// 64 KiB or more each way and takes longer: yielding there only added
    /// context switches (about 3% more proxy CPU per 10 MiB download).
    static let yieldEvents = 4
    static let yieldNanoseconds: UInt64 = 50_000

    /// Whether a batch of `events` ready sockets that took `batchNanoseconds`,
    /// with `openStreams` HTTP/2 streams open on the loop, ends with `sched_yield`.
    static func shouldYield(events: Int, openStreams: Int, batchNanoseconds: UInt64) -> Bool {
        openStreams >= yieldStreams && events < yieldEvents && batchNanoseconds < yieldNanoseconds
    }
    /// The longest the handler keeps the queue before other blocks get a turn.
    private static let turnNanoseconds: UInt64 = 10_000_000

    /// Space for one read, shared by every transport on the loop: each read
    /// is done with it before anything else runs. (A temporary allocation of
    /// this size is not on the stack but a malloc and free per read.)
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Work from other threads, run on the loop at its next wake-up.
    private let mailbox = Mutex<[@Sendable () -> Void]>([])
    /// Work for after the batch of events being served (see ``later(_:)``).
    @exclusivity(unchecked) private var deferred: [() -> Void] = []
    @exclusivity(unchecked) private var serving = false
    @exclusivity(unchecked) private var deferredRunScheduled = false

    static let key = DispatchSpecificKey<Unowned>()
    struct Unowned { unowned let loop: EventLoop }

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
        epfd = pp_poll_create()
        precondition(epfd >= 0, "epoll_create1: \(Socket.errorText())")
        wakeupFD = pp_wakeup_create()
        precondition(wakeupFD >= 0, "eventfd: \(Socket.errorText())")
        precondition(pp_poll_control(epfd, PP_POLL_ADD, wakeupFD, IOEvents.readable.rawValue) == 0, "epoll_ctl: \(Socket.errorText())")
        timerFD = pp_timer_create()
        precondition(timerFD >= 0, "timerfd_create: \(Socket.errorText())")
        precondition(pp_poll_control(epfd, PP_POLL_ADD, timerFD, IOEvents.readable.rawValue) == 0, "epoll_ctl: \(Socket.errorText())")
        events = .allocate(capacity: Int(EventLoop.batch))
        queue.setSpecific(key: EventLoop.key, value: Unowned(loop: self))
        let source = DispatchSource.makeReadSource(fileDescriptor: epfd, queue: queue)
        source.setEventHandler { [unowned self] in self.poll() }
        self.source = source
        source.resume()
        let sweeper = DispatchSource.makeTimerSource(queue: queue)
        sweeper.schedule(deadline: .now() + EventLoop.sweepInterval, repeating: EventLoop.sweepInterval, leeway: .milliseconds(250))
        sweeper.setEventHandler { [unowned self] in self.sweep() }
        sweeper.resume()
        self.sweeper = sweeper
    }

    private var sweeper: DispatchSourceTimer?
    private static let sweepInterval = DispatchTimeInterval.seconds(1)
    /// Sweeps so far; transports note it when active.
    @exclusivity(unchecked) private(set) var sweepCount: UInt = 0

    /// When the free pages go back to the system (``FreePageReturn``).
    @exclusivity(unchecked) private var freePages = FreePageReturn()

    /// A transport closed: what it held (its TLS state, an upstream's parser
    /// and session) went back to the allocator.
    func noteClosed() { freePages.noteFreed() }

    /// Lets transports idle for a whole sweep interval release memory they
    /// hold only for traffic (see ``Transport/sweep(_:)``), and hands free
    /// pages back when ``FreePageReturn`` says so.
    private func sweep() {
        sweepCount &+= 1
        var released = 0
        for entry in watched.entries where entry.transport.sweep(sweepCount) { released += 1 }
        if freePages.sweep(freed: released) { _ = pp_release_free_memory() }
    }

    /// The loop a queue belongs to.
    static func of(_ queue: DispatchQueue) -> EventLoop {
        guard let loop = queue.getSpecific(key: EventLoop.key)?.loop else {
            preconditionFailure("transports run on an EventLoop's queue")
        }
        return loop
    }

    /// Runs `body` on the loop soon, from any thread, without waiting for
    /// the loop to hand its queue back.
    func execute(_ body: @escaping @Sendable () -> Void) {
        mailbox.withLock { $0.append(body) }
        pp_wakeup_signal(wakeupFD)
    }

    /// Runs `body` on the loop after the batch of events being served (or
    /// soon, outside a batch). A transport closes its descriptor this way:
    /// events already fetched in the batch may still name it.
    func later(_ body: @escaping () -> Void) {
        assertOnQueue(queue)
        deferred.append(body)
        if !serving && !deferredRunScheduled {
            deferredRunScheduled = true
            queue.later { [self] in runDeferred() }
        }
    }

    /// Runs `body` on the loop once `seconds` have passed. Called on the
    /// loop's queue; costs no system call unless it becomes the earliest
    /// timer (then one `timerfd_settime` on this thread, no wake-up).
    @discardableResult
    func schedule(after seconds: TimeInterval, _ body: @escaping () -> Void) -> LoopTimer {
        assertOnQueue(queue)
        let delay: UInt64 = seconds > 0 ? UInt64(min(seconds, 1e9) * 1e9) : 0
        let timer = timers.add(at: pp_clock_ns() &+ delay, loop: self, body)
        if timer.deadline < timerArmedFor { armTimer(for: timer.deadline) }
        return timer
    }

    /// Timers pending on the loop.
    var pendingTimers: Int {
        assertOnQueue(queue)
        return timers.count
    }

    /// Called by ``LoopTimer/cancel()``: when the timerfd was armed for the
    /// cancelled timer, it is armed for the next one instead (or disarmed),
    /// so that no wake-up is spent on it.
    func cancel(_ timer: LoopTimer) {
        assertOnQueue(queue)
        timers.cancel(timer)
        if timer.deadline == timerArmedFor { armForEarliest() }
    }

    private func armTimer(for deadline: UInt64) {
        timerArmedFor = deadline
        _ = pp_timer_arm(timerFD, deadline)
    }

    private func armForEarliest() {
        if let next = timers.earliest() {
            if next != timerArmedFor { armTimer(for: next) }
        } else if timerArmedFor != .max {
            timerArmedFor = .max
            _ = pp_timer_disarm(timerFD)
        }
    }

    /// Runs the timers that are due, then arms the timerfd for the next.
    private func runDueTimers() {
        let due = timers.takeDue(at: pp_clock_ns())
        // Whatever the timerfd was armed for has passed.
        timerArmedFor = .max
        for body in due { body() }
        if let next = timers.earliest(), next < timerArmedFor { armTimer(for: next) }
    }

    /// Watches a listening socket: `accept` runs on the loop whenever it is
    /// readable, with the loop's other events. Returns false when the socket
    /// cannot be watched. On the loop's queue.
    func watchListener(_ descriptor: Descriptor, accept: @escaping () -> Void) -> Bool {
        assertOnQueue(queue)
        guard listeners[descriptor.rawValue] == nil else { return true }
        guard pp_poll_control(epfd, PP_POLL_ADD, descriptor.rawValue, IOEvents.readable.rawValue) == 0 else { return false }
        listeners[descriptor.rawValue] = accept
        return true
    }

    /// Stops watching a listening socket (before it is closed). On the loop's queue.
    func unwatchListener(_ descriptor: Descriptor) {
        assertOnQueue(queue)
        guard listeners.removeValue(forKey: descriptor.rawValue) != nil else { return }
        _ = pp_poll_control(epfd, PP_POLL_REMOVE, descriptor.rawValue, 0)
    }

    /// Whether the caller runs on this loop's queue.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: EventLoop.key)?.loop === self }

    /// Transports whose buffered TLS output goes out at the end of the batch.
    @exclusivity(unchecked) private var sends: [Transport] = []
    /// The list ``sendScheduled()`` goes through, kept with its capacity and
    /// swapped with ``sends``: taking the list and leaving a new empty one
    /// allocated an array per batch (about 600 instructions per request).
    @exclusivity(unchecked) private var sending: [Transport] = []
    /// The same for ``deferred``.
    @exclusivity(unchecked) private var running: [() -> Void] = []

    /// Schedules `transport`'s buffered output to be sent once the batch of
    /// events being served is done, so that everything the batch produced
    /// for one connection leaves in one system call. False outside a batch:
    /// the caller sends now.
    func sendAfterBatch(_ transport: Transport) -> Bool {
        assertOnQueue(queue)
        guard serving else { return false }
        sends.append(transport)
        return true
    }

    private func sendScheduled() {
        guard !sends.isEmpty else { return }
        // Moved out of the properties (each buffer stays uniquely referenced,
        // so neither append nor removeAll copies): what the sends schedule
        // meanwhile goes into `sends`, the spare list.
        var ready: [Transport] = []
        swap(&ready, &sending)
        swap(&ready, &sends)
        for transport in ready { transport.sendScheduledOutput() }
        ready.removeAll(keepingCapacity: true)
        sending = ready
    }

    /// Runs `body` with `byteCount` bytes (at most 64 KiB) of the loop's
    /// scratch space. `body` must not run other transports' reads.
    func withScratch<Result>(_ byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        assertOnQueue(queue)
        precondition(!scratchInUse, "the loop's scratch space is already in use")
        scratchInUse = true
        defer { scratchInUse = false }
        return body(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<min(byteCount, scratch.count)]))
    }

    @exclusivity(unchecked) private var scratchInUse = false

    /// Sets which readiness `transport` wants for `descriptor`; none removes it.
    func watch(_ descriptor: Descriptor, _ transport: Transport, for events: IOEvents) {
        assertOnQueue(queue)
        let current = watched[descriptor]
        if events.isEmpty {
            guard current != nil else { return }
            watched[descriptor] = nil
            _ = pp_poll_control(epfd, PP_POLL_REMOVE, descriptor.rawValue, 0)
            return
        }
        if let current, current.events == events { return }
        if pp_poll_control(epfd, current == nil ? PP_POLL_ADD : PP_POLL_MODIFY, descriptor.rawValue, events.rawValue) == 0 {
            watched[descriptor] = WatchTable.Entry(transport: transport, events: events)
        } else {
            // The descriptor is unusable; report it as ready so the
            // transport's next read or write finds the error.
            watched[descriptor] = nil
            let failed = transport
            later { failed.handleReady(events) }
        }
    }

    private func poll() {
        serving = true
        defer {
            serving = false
            runDeferred()
        }
        let handBackAt = DispatchTime.now().uptimeNanoseconds &+ EventLoop.turnNanoseconds
        var timeout: Int32 = 0
        while true {
            let n = pp_poll_wait(epfd, events, EventLoop.batch, timeout)
            guard n > 0 else { return }
            let batchStart = openStreams >= EventLoop.yieldStreams ? DispatchTime.now().uptimeNanoseconds : 0
            for i in 0..<Int(n) {
                let event = events[i]
                if event.fd == wakeupFD {
                    pp_wakeup_reset(wakeupFD)
                    let work = mailbox.withLock { list in
                        defer { list.removeAll(keepingCapacity: true) }
                        return list
                    }
                    for item in work { item() }
                    continue
                }
                // Gone since this batch was fetched: its descriptor is still
                // open (transports close after the batch), so no other
                // socket can have taken the number.
                guard let entry = watched[Descriptor(event.fd)] else {
                    if event.fd == timerFD {
                        pp_wakeup_reset(timerFD)
                        runDueTimers()
                    } else if let accept = listeners[event.fd] {
                        accept()
                    }
                    continue
                }
                // A broken socket counts as ready for whatever is watched:
                // that read or send then reports the error.
                var ready = IOEvents(rawValue: event.events)
                if ready.contains(.broken) { ready.formUnion(entry.events) }
                entry.transport.handleReady(ready.intersection(entry.events))
            }
            runDeferred()
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= handBackAt { return }
            if batchStart != 0 && EventLoop.shouldYield(events: Int(n), openStreams: openStreams, batchNanoseconds: now &- batchStart) {
                sched_yield()
            }
            timeout = EventLoop.lingerMilliseconds
        }
    }

    private func runDeferred() {
        deferredRunScheduled = false
        // Work added by deferred work runs in the same pass, a bounded number
        // of times, so a transport that keeps deferring cannot spin here.
        for _ in 0..<8 where !deferred.isEmpty || !sends.isEmpty {
            var work: [() -> Void] = []
            swap(&work, &running)
            swap(&work, &deferred)
            for item in work { item() }
            work.removeAll(keepingCapacity: true)
            running = work
            sendScheduled()
        }
        sendScheduled()  // what the last pass's work queued still leaves now
        if !deferred.isEmpty && !serving && !deferredRunScheduled {
            deferredRunScheduled = true
            queue.later { [self] in runDeferred() }
        }
    }
}

/// A small fixed set of event loops, one per core, that every proxied
/// connection runs on.
///
/// A queue per connection on the global pool let the pool grow to a hundred
/// threads on two cores, each event a context switch. With one loop per
/// core, events for busy connections run back to back on the same thread.
final class EventLoops: Sendable {
    /// The loops for proxied connections: `count` of them, or
    /// ``defaultCount``. Servers asking for the same count share them (a loop
    /// is never torn down, and tests start many servers in one process).
    static func shared(count: Int?) -> EventLoops {
        let count = max(1, count ?? defaultCount)
        return pools.withLock { pools in
            if let existing = pools[count] { return existing }
            if pools.isEmpty { limitAllocatorArenas(loops: count) }
            let made = EventLoops(count: count, label: "pinproxy.loop")
            pools[count] = made
            return made
        }
    }

    private static let pools = Mutex<[Int: EventLoops]>([:])

    /// glibc gives each thread that allocates under contention an arena of
    /// its own, up to eight per core, and an arena returns memory to the
    /// system only from its top: with Dispatch's worker threads allocating
    /// beside the loops, a ten-minute soak's resident set crept up 9% (360 →
    /// 393 MB) while the same soak with two arenas stayed flat after warm-up
    /// (docs/proxy.md, "Soak"). So the proxy asks for one arena per loop, at
    /// least two, before its first loop starts; `MALLOC_ARENA_MAX` in the
    /// environment still decides when set.
    private static func limitAllocatorArenas(loops: Int) {
        _ = pp_limit_allocator_arenas(Int32(max(2, loops)))
    }

    /// Half the cores, at least one. A test proxy shares its machine with
    /// the client under test and often the origin; each loop serves
    /// thousands of connections, and fewer loops than cores go to sleep and
    /// wake each other less. Measured on 2 cores with the client and origin
    /// alongside: one loop spent about 10% less CPU per keep-alive request
    /// than two and served as many requests, but about 15% fewer new TLS
    /// connections per second (handshakes are CPU-bound on the loop).
    static var defaultCount: Int { max(1, ProcessInfo.processInfo.activeProcessorCount / 2) }

    /// A loop of its own for the control API, so encoding a large answer
    /// never stalls proxied traffic.
    static let admin = EventLoops(count: 1, label: "pinproxy.admin")

    private let loops: [EventLoop]
    private let next = Atomic<UInt>(0)

    init(count: Int, label: String) {
        loops = (0..<max(1, count)).map { EventLoop(label: "\(label).\($0)") }
    }

    /// Every loop of the set.
    var all: [EventLoop] { loops }

    /// The loop for a new connection, round robin.
    func nextLoop() -> EventLoop {
        loops[Int(next.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(loops.count))]
    }
}
