import Dispatch
import Foundation
internal import CPinproxyShims
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
/// Nothing that blocks may run on a loop: it would stall every connection
/// assigned to it.
final class EventLoop: @unchecked Sendable {
    // Sendable: `watched` and `events` are touched only on `queue`; `epfd`
    // never changes.
    let queue: DispatchQueue
    private let epfd: Int32
    private var source: DispatchSourceRead?
    /// Registered sockets and their transports (kept alive while registered).
    private var watched: [Int32: (transport: Transport, read: Bool, write: Bool)] = [:]
    private let events: UnsafeMutablePointer<pp_ready_event>
    private static let batch: Int32 = 128

    static let key = DispatchSpecificKey<Unowned>()
    struct Unowned { unowned let loop: EventLoop }

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
        epfd = pp_poll_create()
        precondition(epfd >= 0, "epoll_create1: \(Socket.errorText())")
        events = .allocate(capacity: Int(EventLoop.batch))
        queue.setSpecific(key: EventLoop.key, value: Unowned(loop: self))
        let source = DispatchSource.makeReadSource(fileDescriptor: epfd, queue: queue)
        source.setEventHandler { [unowned self] in self.poll() }
        self.source = source
        source.resume()
    }

    /// The loop a queue belongs to.
    static func of(_ queue: DispatchQueue) -> EventLoop {
        guard let loop = queue.getSpecific(key: EventLoop.key)?.loop else {
            preconditionFailure("transports run on an EventLoop's queue")
        }
        return loop
    }

    /// Sets which readiness `transport` wants for `fd`; none removes it.
    func watch(_ fd: Int32, _ transport: Transport, read: Bool, write: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        let current = watched[fd]
        if !read && !write {
            guard current != nil else { return }
            watched[fd] = nil
            _ = pp_poll_control(epfd, 2, fd, 0, 0)
            return
        }
        if let current, current.read == read, current.write == write { return }
        if pp_poll_control(epfd, current == nil ? 0 : 1, fd, read ? 1 : 0, write ? 1 : 0) == 0 {
            watched[fd] = (transport, read, write)
        } else {
            // The descriptor is unusable; report it as ready so the
            // transport's next read or write finds the error.
            watched[fd] = nil
            let failed = transport
            queue.later { failed.handleReady(readable: read, writable: write) }
        }
    }

    /// Serves ready sockets until none is left. Events that arrive while a
    /// batch is served are fetched here rather than through another source
    /// wake-up: that costs one empty epoll_wait at the end instead of a
    /// re-arm by libdispatch's manager thread and a hand-off to a worker per
    /// batch. The number of rounds is capped so other work on the queue runs.
    private func poll() {
        for _ in 0..<EventLoop.maxRounds {
            let n = pp_poll_ready(epfd, events, EventLoop.batch)
            guard n > 0 else { return }
            for i in 0..<Int(n) {
                let event = events[i]
                // Gone since this batch was fetched: its descriptor is still
                // open (transports close after the current turn), so no other
                // socket can have taken the number.
                guard let entry = watched[event.fd] else { continue }
                let broken = event.broken != 0
                entry.transport.handleReady(readable: entry.read && (event.readable != 0 || broken),
                                            writable: entry.write && (event.writable != 0 || broken))
            }
        }
    }

    private static let maxRounds = 64
}

/// A small fixed set of event loops, one per core, that every proxied
/// connection runs on.
///
/// A queue per connection on the global pool let the pool grow to a hundred
/// threads on two cores, each event a context switch. With one loop per
/// core, events for busy connections run back to back on the same thread.
final class EventLoops: Sendable {
    /// The loops for proxied connections.
    static let shared = EventLoops(count: ProcessInfo.processInfo.activeProcessorCount, label: "pinproxy.loop")
    /// A loop of its own for the control API, so encoding a large answer
    /// never stalls proxied traffic.
    static let admin = EventLoops(count: 1, label: "pinproxy.admin")

    private let loops: [EventLoop]
    private let next = Atomic<UInt>(0)

    init(count: Int, label: String) {
        loops = (0..<max(1, count)).map { EventLoop(label: "\(label).\($0)") }
    }

    /// The loop for a new connection, round robin.
    func nextLoop() -> EventLoop {
        loops[Int(next.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(loops.count))]
    }
}
