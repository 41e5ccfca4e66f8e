import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyTLS

/// One socket driven by its ``EventLoop``, optionally carrying TLS.
///
/// Confined to its connection's serial queue. The discipline, per OpenSSL and
/// epoll semantics:
/// - each readable event reads the socket until it is empty or reading is
///   paused (`Transport+Reading`); under TLS into the engine's input, and
///   the ``TLSPump`` drains the engine until WANT_READ;
/// - output waits in an ``OutputQueue`` (corked, small chunks gathered into
///   one write); under TLS the pump encrypts it and sends a turn's records
///   in one send at the end of the loop's batch (`Transport+Output`);
/// - the socket is watched only for what is wanted: readable unless paused,
///   writable only while the socket refused output (EAGAIN) or while an
///   ``OutgoingConnect`` waits for it;
/// - the engine is freed and the descriptor closed after the current turn of
///   the loop, so a readiness event already fetched for it finds it gone
///   rather than another socket under the same number (`Transport+Closing`).
///
/// Backpressure: ``pauseReading()`` stops reading the socket (and draining
/// TLS); ``outputIsCongested`` reports pending output over a small bound, and
/// ``onDrained`` fires when it falls back, so a relay can pause the other side.
///
/// The stored state below is the transport's own: only its extensions (one
/// file per concern), its ``TLSPump`` and its ``OutgoingConnect`` touch it.
final class Transport: @unchecked Sendable {
    // Sendable: every method runs on `queue` (checked by assertOnQueue in debug builds).
    let descriptor: Descriptor
    let queue: DispatchQueue
    // The state below is touched for every event and only on `queue`, one
    // event at a time, so its stored properties skip Swift's run-time
    // exclusivity checks (about 1,500 instructions per keep-alive request
    // here; docs/architecture.md, "Exclusivity checks"). The compiler's
    // static checks still apply; the callbacks are copied out before a call.
    /// TLS over this socket, once it started.
    @exclusivity(unchecked) var pump: TLSPump?
    var tls: TLSConnection? { pump?.engine }
    let loop: EventLoop
    /// What the loop watches the socket for now.
    @exclusivity(unchecked) var watching: IOEvents = []
    /// The transport keeps itself alive from creation until ``close()``, as
    /// its owner may let go while output still drains.
    @exclusivity(unchecked) var retainedUntilClosed: Transport?
    @exclusivity(unchecked) var isClosed = false
    /// When a closing transport gives up on its peer (see ``closeAfterSending(lingering:)``).
    @exclusivity(unchecked) var closeTimer: LoopTimer?
    var ended: Bool { endReason != nil }
    /// Why input ended, once it did; kept so an owner that attaches later
    /// (an upstream handed from the handshake to a session) still learns it.
    @exclusivity(unchecked) var endReason: TransportEnd?

    /// `lingering`: output done and half-closed; input is read and dropped (see ``closeAfterSending(lingering:)``).
    enum Phase { case connecting, plain, handshaking, tls, lingering }
    @exclusivity(unchecked) var phase: Phase = .plain
    @exclusivity(unchecked) var writeWantsRead = false
    @exclusivity(unchecked) var readingPaused = false
    /// Bytes may wait in the socket or in TLS since reading was paused.
    @exclusivity(unchecked) var unreadPending = false
    @exclusivity(unchecked) var started = false
    @exclusivity(unchecked) var output = OutputQueue()
    @exclusivity(unchecked) var closeAfterFlush = false
    /// Set by ``closeAfterSending(lingering:)``: how long to drain input once output is done.
    @exclusivity(unchecked) var lingerAfterFlush: TimeInterval?
    /// While ``Phase/connecting``: the connect under way.
    @exclusivity(unchecked) var connect: OutgoingConnect?

    /// The loop's sweep count when this transport last read or wrote.
    @exclusivity(unchecked) var activeInSweep: UInt = 0
    @exclusivity(unchecked) var buffersReleased = false

    static let readSize = 64 * 1024
    /// How long queued output may wait for a peer that stopped reading, once closing.
    static let lingerTimeout: TimeInterval = 10
    /// How long a closing connection keeps reading and dropping what the
    /// peer still sends (see ``closeAfterSending(lingering:)``).
    static let unwantedInputLinger: TimeInterval = 2

    /// Bytes arrived (plain, or decrypted).
    @exclusivity(unchecked) var onData: ((ArraySlice<UInt8>) -> Void)?
    /// No more bytes will arrive.
    @exclusivity(unchecked) var onEnd: ((TransportEnd) -> Void)?
    /// Pending output fell back under half of ``OutputQueue/highWater``.
    @exclusivity(unchecked) var onDrained: (() -> Void)?
    /// The connection has been idle a whole sweep interval and gave its TLS
    /// buffers back; what runs over it may give back memory of its own
    /// (an HTTP/2 session's frame buffer).
    @exclusivity(unchecked) var onIdle: (() -> Void)?

    init(descriptor: Descriptor, queue: DispatchQueue) {
        self.descriptor = descriptor
        self.queue = queue
        Socket.setNonBlocking(descriptor)
        loop = EventLoop.of(queue)
        retainedUntilClosed = self
    }

    /// Starts connecting to `host:port`; `completion` runs on `queue` once the
    /// socket is connected (nil) or failed. Bytes sent meanwhile are queued
    /// until ``flushQueued()`` or a completed TLS handshake sends them.
    static func connecting(host: String, port: Int, queue: DispatchQueue, timeout: TimeInterval,
                           completion: @escaping (PinproxyError?) -> Void) throws -> Transport {
        try OutgoingConnect.start(host: host, port: port, queue: queue, timeout: timeout, completion: completion)
    }

    /// Starts delivering bytes to ``onData``.
    func start() {
        assertOnQueue(queue)
        guard !started, !isClosed else { return }
        started = true
        if !readingPaused { resumeRead() }
    }

    /// Readiness from the loop.
    func handleReady(_ events: IOEvents) {
        activeInSweep = loop.sweepCount
        buffersReleased = false
        if events.contains(.readable) && !isClosed && watching.contains(.readable) { handleReadable() }
        if events.contains(.writable) && !isClosed && watching.contains(.writable) { handleWritable() }
    }

    // MARK: - What the loop watches

    func suspendRead() { stopWatching(.readable) }
    func resumeRead() { startWatching(.readable) }
    func suspendWrite() { stopWatching(.writable) }
    func resumeWrite() { startWatching(.writable) }

    private func startWatching(_ events: IOEvents) {
        guard !watching.isSuperset(of: events), !isClosed else { return }
        watching.formUnion(events)
        loop.watch(descriptor, self, for: watching)
    }

    private func stopWatching(_ events: IOEvents) {
        guard !watching.isDisjoint(with: events), !isClosed else { return }
        watching.subtract(events)
        loop.watch(descriptor, self, for: watching)
    }
}
