import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Why a transport stopped delivering bytes.
enum TransportEnd: Sendable, Equatable {
    /// The peer closed its side (TCP FIN, or close_notify / EOF under TLS).
    case closed
    /// The peer reset the connection.
    case reset
    /// A socket or TLS error.
    case failed(String)
    /// A TLS failure with its details.
    case tlsFailed(TLSFailure)
}

/// One socket driven by Dispatch sources, optionally carrying TLS.
///
/// Confined to its connection's serial queue. The discipline, per OpenSSL and
/// Dispatch semantics:
/// - each readable event reads the socket once and drains TLS until WANT_READ;
/// - TLS records collect in the connection's output buffer and leave in
///   one send at the end of the loop's batch (or at 64 KiB); the write
///   side is watched only while the socket refused some (EAGAIN);
/// - the socket is watched by its ``EventLoop`` only for what is wanted
///   (readable unless paused, writable only while output is blocked);
/// - the `SSL` is freed and the descriptor closed after the current turn of
///   the loop, so a readiness event already fetched for it finds it gone
///   rather than another socket under the same number.
///
/// Backpressure: ``pauseReading()`` stops reading the socket (and draining
/// TLS); ``outputIsCongested`` reports pending output over a small bound, and
/// ``onDrained`` fires when it falls back, so a relay can pause the other side.
final class Transport: @unchecked Sendable {
    // Sendable: every method runs on `queue` (checked by assertOnQueue in debug builds).
    let fd: Int32
    let queue: DispatchQueue
    private(set) var tls: TLSConnection?
    private let loop: EventLoop
    private var readSuspended = true
    private var writeSuspended = true
    /// The transport keeps itself alive from creation until ``close()``, as
    /// its owner may let go while output still drains.
    private var retainedUntilClosed: Transport?
    private(set) var isClosed = false
    private var ended: Bool { endReason != nil }
    /// Why input ended, once it did; kept so an owner that attaches later
    /// (an upstream handed from the handshake to a session) still learns it.
    private(set) var endReason: TransportEnd?

    /// `lingering`: output done and half-closed; input is read and dropped (see ``closeAfterSending(lingering:)``).
    private enum Phase { case connecting, plain, handshaking, tls, lingering }
    private var phase: Phase = .plain
    private var writeWantsRead = false
    private var readingPaused = false
    /// Bytes may wait in the socket or in TLS since reading was paused.
    private var unreadPending = false
    private var started = false
    /// Bytes fed to a server-side handshake, kept until the ClientHello is decided.
    private var handshakeBytes: [UInt8] = []
    private var recordingHandshake = false

    // Output: chunks not yet accepted by the socket (or SSL_write).
    private var output: [ArraySlice<UInt8>] = []
    private(set) var pendingOutput = 0
    private var closeAfterFlush = false
    /// Set by ``closeAfterSending(lingering:)``: how long to drain input once output is done.
    private var lingerAfterFlush: TimeInterval?
    private var wasCongested = false
    /// While above zero, ``send(_:)`` only queues; see ``cork()``.
    private var corkDepth = 0
    /// Small queued chunks are gathered into one write up to this size (one
    /// TLS record), so a response head and a small body leave in one record
    /// and one segment instead of two (see ``withNextOutput(_:)``).
    static let coalesceLimit = 16 * 1024

    /// Output above this many bytes counts as congested.
    static let highWater = 256 * 1024
    static let readSize = 64 * 1024
    /// How long queued output may wait for a peer that stopped reading, once closing.
    static let lingerTimeout: TimeInterval = 10
    /// How long a closing connection keeps reading and dropping what the
    /// peer still sends (see ``closeAfterSending(lingering:)``).
    static let unwantedInputLinger: TimeInterval = 2

    /// Bytes arrived (plain, or decrypted).
    var onData: ((ArraySlice<UInt8>) -> Void)?
    /// No more bytes will arrive.
    var onEnd: ((TransportEnd) -> Void)?
    /// Pending output fell back under ``highWater``.
    var onDrained: (() -> Void)?
    private var onConnect: ((PinproxyError?) -> Void)?
    private var onHandshake: ((TLSHandshakeResult) -> Void)?

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.queue = queue
        Socket.setNonBlocking(fd)
        loop = EventLoop.of(queue)
        retainedUntilClosed = self
    }

    /// Starts connecting to `host:port`; `completion` runs on `queue` once the
    /// socket is connected (nil) or failed. Bytes sent meanwhile are queued
    /// until ``flushQueued()`` or a completed TLS handshake sends them.
    static func connecting(host: String, port: Int, queue: DispatchQueue, timeout: TimeInterval,
                           completion: @escaping (PinproxyError?) -> Void) throws -> Transport {
        assertOnQueue(queue)
        // A DNS lookup can take seconds; on a loop it would stall every
        // connection sharing it. Names are resolved on the global pool while
        // the transport already exists around a dual-stack socket.
        if Socket.needsLookup(host), let fd = Socket.dualStackSocket() {
            let transport = Transport(fd: fd, queue: queue)
            transport.phase = .connecting
            transport.onConnect = completion
            let loopWork = Confined(transport)
            let loop = transport.loop
            DispatchQueue.global().async {
                let resolved = Socket.resolveForDualStack(host: host, port: port)
                let outcome = Confined(resolved)
                loop.execute { loopWork.value.connectResolved(outcome.value) }
            }
            transport.armConnectTimeout(host: host, port: port, timeout: timeout)
            return transport
        }
        let fd = try Socket.startConnect(host: host, port: port)
        let transport = Transport(fd: fd, queue: queue)
        transport.phase = .connecting
        transport.onConnect = completion
        transport.resumeWrite()
        transport.armConnectTimeout(host: host, port: port, timeout: timeout)
        return transport
    }

    private func connectResolved(_ resolved: Result<sockaddr_in6, PinproxyError>) {
        guard phase == .connecting, !isClosed, let handler = onConnect else { return }
        let error: PinproxyError
        switch resolved {
        case .success(let address):
            let code = Socket.startConnect(fd, to: address)
            if code == 0 || code == EINPROGRESS {
                resumeWrite()
                return
            }
            error = PinproxyError(.socket, Socket.errorText(code))
        case .failure(let failure):
            error = failure
        }
        onConnect = nil
        handler(error)
    }

    private func armConnectTimeout(host: String, port: Int, timeout: TimeInterval) {
        queue.later(after: timeout) { [weak self] in
            guard let self, self.phase == .connecting, !self.isClosed, let handler = self.onConnect else { return }
            self.onConnect = nil
            handler(PinproxyError(.socket, "connecting to \(host):\(port) timed out after \(TimeoutText.seconds(timeout))"))
        }
    }

    /// Sends bytes queued while connecting, on a plain connection.
    func flushQueued() {
        assertOnQueue(queue)
        if phase == .plain { flush() }
    }

    /// Gives up a TLS handshake that has not sent anything yet and returns
    /// every byte fed to it, so the connection can be tunnelled raw instead.
    func abandonTLS() -> [UInt8] {
        assertOnQueue(queue)
        let bytes = handshakeBytes
        tls = nil
        phase = .plain
        onHandshake = nil
        handshakeBytes = []
        return bytes
    }

    /// Starts delivering bytes to ``onData``.
    func start() {
        assertOnQueue(queue)
        guard !started, !isClosed else { return }
        started = true
        if !readingPaused { resumeRead() }
    }

    // MARK: - TLS

    /// Begins a TLS handshake over this socket. `initial` holds bytes already
    /// read from the socket that belong to the handshake.
    func startTLS(_ connection: TLSConnection, initial: ArraySlice<UInt8> = [],
                  handler: @escaping (TLSHandshakeResult) -> Void) {
        assertOnQueue(queue)
        tls = connection
        phase = .handshaking
        onHandshake = handler
        if !initial.isEmpty { initial.withUnsafeBytes { connection.feed($0) } }
        recordingHandshake = connection.isServer
        handshakeBytes = recordingHandshake ? Array(initial) : []
        started = true
        readingPaused = false
        resumeRead()
        driveHandshake()
    }

    /// Continues a handshake paused at the ClientHello.
    func continueHandshake() {
        assertOnQueue(queue)
        guard phase == .handshaking, !isClosed else { return }
        driveHandshake()
    }

    private func driveHandshake() {
        guard let tls, !isClosed else { return }
        let result = tls.handshake()
        // A flight, or the alert of a failure: both go out now.
        if tls.pendingOutput > 0 {
            switch tls.sendOutput() {
            case .sent: break
            case .blocked: resumeWrite()
            case .failed: break  // the next read reports the socket's state
            }
        }
        switch result {
        case .complete:
            phase = .tls
            recordingHandshake = false
            handshakeBytes = []
            let handler = onHandshake
            onHandshake = nil
            handler?(.complete)
            flush()
            // Application data may have arrived with the last handshake flight.
            if !isClosed, !readingPaused { drainTLS() }
        case .wantRead:
            break
        case .wantWrite:
            resumeWrite()
        case .clientHello, .closed, .failed:
            if case .clientHello = result {} else { phase = .plain }
            onHandshake?(result)
            if case .clientHello = result {} else { onHandshake = nil }
        }
    }

    // MARK: - Reading

    /// Stops delivering bytes. The read source is suspended lazily, only if
    /// bytes arrive while paused: suspending and resuming a source costs a
    /// round trip through libdispatch's manager thread, and most pauses (the
    /// wait for a response) see no input at all.
    func pauseReading() {
        assertOnQueue(queue)
        readingPaused = true
    }

    func resumeReading() {
        assertOnQueue(queue)
        guard readingPaused, !isClosed else { return }
        readingPaused = false
        guard started else { return }
        resumeRead()
        // Bytes left in the socket are announced again by the loop (its
        // epoll set is level-triggered); records already handed to TLS are
        // not, so those are drained on the next turn.
        if unreadPending {
            unreadPending = false
            if let tls, phase == .tls || phase == .handshaking, tls.hasBufferedInput {
                loop.later { [weak self] in self?.resumeAfterPause() }
            }
        }
    }

    private func resumeAfterPause() {
        guard !isClosed, !readingPaused, started else { return }
        if phase == .tls { drainTLS() }
        readAvailable()
    }

    /// The loop's sweep count when this transport last read or wrote.
    private var activeInSweep: UInt = 0
    private var buffersReleased = false

    /// Called by the loop's periodic sweep: a TLS connection that did
    /// nothing since the sweep before last gives its record buffers back, so
    /// thousands of idle keep-alive connections stay small.
    /// Returns whether it released anything.
    func sweep(_ count: UInt) -> Bool {
        guard !buffersReleased, activeInSweep &+ 1 < count, let tls, phase == .tls, !hasUnsentOutput else { return false }
        tls.releaseBuffers()
        buffersReleased = true
        return true
    }

    /// Readiness from the loop.
    func handleReady(readable: Bool, writable: Bool) {
        activeInSweep = loop.sweepCount
        buffersReleased = false
        if readable && !isClosed && !readSuspended { handleReadable() }
        if writable && !isClosed && !writeSuspended { handleWritable() }
    }

    private func handleReadable() {
        guard !isClosed else { return }
        if writeWantsRead { writeWantsRead = false; flush() }
        if readingPaused && phase != .handshaking {
            // Input arrived while paused: now stop the source until resumed.
            if !writeWantsRead { suspendRead() }
            unreadPending = true
            return
        }
        readAvailable()
    }

    /// Reads until the socket has nothing more, ends, or reading is paused.
    /// A read shorter than the buffer means the socket is empty for now; the
    /// loop's level-triggered poll announces anything that arrives later, so
    /// no extra read(2) is spent to hear EAGAIN.
    private func readAvailable() {
        var rounds = 0
        while !isClosed && !ended {
            if readingPaused && phase != .handshaking {
                // Paused by what was just delivered. The source stays armed:
                // if more input waits, the next event suspends it.
                unreadPending = true
                return
            }
            rounds += 1
            if rounds > 16 {
                // Let other connections run; the socket is still readable, so
                // the loop's next poll (level-triggered) comes back to it.
                if readSuspended { loop.later { [weak self] in self?.readAvailable() } }
                return
            }
            guard readOnce() else { return }
        }
    }

    /// One read(2); false when nothing more can be read now (or a short read
    /// says the socket is empty).
    private func readOnce() -> Bool {
        var errorCode: Int32 = 0
        let phaseNow = phase
        let n: Int
        var asked = Transport.readSize
        var plain: [UInt8] = []
        if let tls, phaseNow == .tls || phaseNow == .handshaking {
            // Encrypted bytes go straight into OpenSSL's input buffer.
            (n, asked) = tls.receive(maxBytes: Transport.readSize)
            if n < 0 { errorCode = errno }
            if n > 0, phaseNow == .handshaking, recordingHandshake, handshakeBytes.count < 64 * 1024 {
                tls.withReceived(n) { handshakeBytes.append(contentsOf: $0) }
            }
        } else {
            // Plain bytes: read into the loop's scratch space, then copied out.
            n = loop.withScratch(Transport.readSize) { scratch in
                let n = Glibc.read(fd, scratch.baseAddress, scratch.count)
                if n < 0 { errorCode = errno }
                if n > 0 && phaseNow != .lingering { plain = Array(UnsafeRawBufferPointer(rebasing: scratch[0..<n])) }
                return n
            }
        }
        if n < 0 {
            if errorCode == EINTR { return true }
            if errorCode == EAGAIN || errorCode == EWOULDBLOCK { return false }
            if phase == .handshaking || phase == .tls, let tls { tls.feedEndOfInput() }
            end(errorCode == ECONNRESET ? .reset : .failed(Socket.errorText(errorCode)))
            return false
        }
        if n == 0 {
            suspendRead()
            switch phase {
            case .handshaking:
                tls?.feedEndOfInput()
                driveHandshake()
            case .tls:
                tls?.feedEndOfInput()
                drainTLS()
            default:
                end(.closed)
            }
            return false
        }
        switch phaseNow {
        case .plain, .connecting: onData?(plain[...])
        case .handshaking: driveHandshake()
        case .tls: drainTLS()
        case .lingering: break  // dropped: the response is out, the rest of the request unwanted
        }
        return n == asked
    }

    private func drainTLS() {
        guard let tls else { return }
        // Reading may produce output (a key update's answer, an alert).
        defer { if !isClosed && tls.pendingOutput > 0 { sendSoon() } }
        while !isClosed {
            if readingPaused {
                unreadPending = true
                return
            }
            let (result, bytes) = readRecord(tls)
            switch result {
            case .bytes:
                onData?(bytes[...])
                // Nothing left in OpenSSL or its input: the next SSL_read
                // would only report WANT_READ, so skip it (but not at end
                // of stream, where it reports the close).
                if !tls.hasBufferedInput && !tls.isAtEndOfInput { return }
            case .wantRead, .wantWrite:
                // TLS output goes to a buffer that never refuses, so a read
                // never waits for the socket to take output.
                return
            case .closed:
                end(.closed)
                return
            case .failed(let failure):
                end(.tlsFailed(failure))
                return
            }
        }
    }

    /// Decrypts the next record. A full-size record is decrypted straight
    /// into the array handed on (bulk transfers then skip a copy); a small
    /// one goes through scratch space, so that a short body does not pin a
    /// 16 KiB allocation while it waits in an output queue.
    private func readRecord(_ tls: TLSConnection) -> (TLSIOResult, [UInt8]) {
        let recordSize = 16 * 1024
        if tls.bufferedEncryptedCount > recordSize {
            var result = TLSIOResult.wantRead
            let bytes = [UInt8](unsafeUninitializedCapacity: recordSize) { buffer, count in
                result = tls.read(into: UnsafeMutableRawBufferPointer(buffer))
                if case .bytes(let n) = result { count = n } else { count = 0 }
            }
            return (result, bytes)
        }
        return loop.withScratch(recordSize) { scratch in
            let result = tls.read(into: scratch)
            if case .bytes(let n) = result { return (result, Array(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))) }
            return (result, [])
        }
    }

    // MARK: - Writing

    /// Queues bytes for the peer and sends what the socket accepts now.
    func send(_ bytes: ArraySlice<UInt8>) {
        assertOnQueue(queue)
        guard !isClosed, !closeAfterFlush, !bytes.isEmpty else { return }
        activeInSweep = loop.sweepCount
        buffersReleased = false
        output.append(bytes)
        pendingOutput += bytes.count
        if corkDepth == 0 && (phase == .plain || phase == .tls) { flush() }
    }

    /// Holds output back until the matching ``uncork()``, so everything one
    /// event produces (a response head and its body) goes out in one write.
    func cork() {
        assertOnQueue(queue)
        corkDepth += 1
    }

    func uncork() {
        assertOnQueue(queue)
        corkDepth -= 1
        if corkDepth == 0, !output.isEmpty, phase == .plain || phase == .tls { flush() }
    }

    /// Removes `count` sent bytes from the front of the queued chunks.
    private func dropOutput(_ count: Int) {
        var left = count
        var whole = 0
        while whole < output.count, output[whole].count <= left {
            left -= output[whole].count
            whole += 1
        }
        if whole == output.count { output.removeAll(keepingCapacity: true) } else {
            if whole > 0 { output.removeFirst(whole) }
            if left > 0 { output[0] = output[0].dropFirst(left) }
        }
    }

    /// Runs `body` with the next bytes to write: small leading chunks (a
    /// response head and a short body) gathered in the loop's scratch space
    /// up to ``coalesceLimit``, so they leave as one segment or one TLS
    /// record, or else the first chunk as it is. A retry after a refused
    /// write gathers the same leading bytes again, as OpenSSL requires.
    private func withNextOutput<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let first = output[0]
        guard output.count > 1, first.count + output[1].count <= Transport.coalesceLimit else {
            return first.withUnsafeBytes(body)
        }
        return loop.withScratch(Transport.coalesceLimit) { scratch in
            var used = 0
            for chunk in output {
                guard used + chunk.count <= scratch.count else { break }
                chunk.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: scratch[used...]).copyMemory(from: $0) }
                used += chunk.count
            }
            return body(UnsafeRawBufferPointer(rebasing: scratch[0..<used]))
        }
    }

    func send(_ bytes: [UInt8]) { send(bytes[...]) }

    /// Whether pending output is above the bound; the caller should stop
    /// producing until ``onDrained`` fires.
    var outputIsCongested: Bool {
        if pendingOutput > Transport.highWater { wasCongested = true; return true }
        return false
    }

    /// Queued bytes, or encrypted bytes not yet sent.
    private var hasUnsentOutput: Bool { !output.isEmpty || (tls?.pendingOutput ?? 0) > 0 }

    /// Encrypted output is sent once it reaches this size, else at the end
    /// of the loop's batch of events (see ``sendSoon()``).
    static let sendBatch = 64 * 1024

    private func flush() {
        guard !isClosed else { return }
        if let tls, phase == .tls {
            flushTLS(tls)
            return
        }
        while !output.isEmpty {
            let n = withNextOutput { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                let e = errno
                if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { resumeWrite(); return }
                end(e == ECONNRESET || e == EPIPE ? .reset : .failed(Socket.errorText(e)))
                close()
                return
            }
            pendingOutput -= n
            dropOutput(n)
        }
        outputProgressed()
    }

    /// Encrypts queued chunks into the connection's output buffer, sending
    /// whenever a batch's worth is ready; the rest goes at the end of the
    /// loop's batch of events, with whatever else this turn produces.
    private func flushTLS(_ tls: TLSConnection) {
        while !output.isEmpty {
            if tls.pendingOutput >= Transport.sendBatch {
                guard sendTLSOutput(tls) else { return }
            }
            let result = withNextOutput { tls.write($0) }
            let written: Int
            switch result {
            case .bytes(let n): written = n
            case .wantWrite: resumeWrite(); return  // not with a buffer that never refuses
            case .wantRead: writeWantsRead = true; resumeRead(); return
            case .closed: end(.closed); close(); return
            case .failed(let failure): end(.tlsFailed(failure)); close(); return
            }
            pendingOutput -= written
            dropOutput(written)
        }
        if tls.pendingOutput > 0 {
            sendSoon()
        } else {
            outputProgressed()
        }
    }

    /// Sends the TLS output buffer at the end of the loop's current batch of
    /// events, or now outside a batch.
    private func sendSoon() {
        if sendScheduled { return }
        if loop.sendAfterBatch(self) {
            sendScheduled = true
        } else {
            sendScheduledOutput()
        }
    }

    private var sendScheduled = false

    /// Called by the loop at the end of a batch (see ``sendSoon()``).
    func sendScheduledOutput() {
        sendScheduled = false
        guard !isClosed, let tls else { return }
        if sendTLSOutput(tls) { outputProgressed() }
    }

    /// Sends what the TLS output buffer holds; false when the socket is
    /// full (the write side is then watched) or failed (the transport closed).
    private func sendTLSOutput(_ tls: TLSConnection) -> Bool {
        switch tls.sendOutput() {
        case .sent:
            return true
        case .blocked:
            resumeWrite()
            return false
        case .failed(let code):
            end(code == ECONNRESET || code == EPIPE ? .reset : .failed(Socket.errorText(code)))
            close()
            return false
        }
    }

    /// After output moved on: stop watching for writability once nothing
    /// waits, tell a paused producer, and finish a close that waited.
    private func outputProgressed() {
        let unsent = hasUnsentOutput
        if !unsent { suspendWrite() }
        if wasCongested && pendingOutput <= Transport.highWater / 2 {
            wasCongested = false
            onDrained?()
        }
        if closeAfterFlush && !unsent { finishClosing() }
    }

    private func handleWritable() {
        guard !isClosed else { return }
        switch phase {
        case .connecting:
            suspendWrite()
            let error = Socket.pendingError(fd)
            phase = .plain
            let handler = onConnect
            onConnect = nil
            handler?(error == 0 ? nil : PinproxyError(.socket, Socket.errorText(error)))
        case .handshaking:
            if let tls, tls.pendingOutput > 0, !sendTLSOutput(tls) { return }
            suspendWrite()
            driveHandshake()
        case .plain, .tls:
            if let tls, phase == .tls, tls.pendingOutput > 0, !sendTLSOutput(tls) { return }
            flush()
        case .lingering:
            suspendWrite()
        }
    }

    // MARK: - Closing

    /// Closes once every queued byte has been handed to the socket.
    ///
    /// With `lingering`, for a peer that may still be sending (a request
    /// body the proxy answered early): after the output, close_notify under
    /// TLS and a half-close (FIN), then whatever the peer still sends is
    /// read and dropped until it closes, or for at most `lingering` seconds.
    /// Closing a socket with unread input sends a reset instead of a FIN,
    /// and the peer's TCP may then throw away the response it has not read
    /// yet (RFC 9112 §9.6).
    func closeAfterSending(lingering: TimeInterval? = nil) {
        assertOnQueue(queue)
        // Nothing more is delivered: the owner may be gone before the flush ends.
        onData = nil
        onEnd = nil
        onDrained = nil
        guard !isClosed, !closeAfterFlush else { return }
        closeAfterFlush = true
        lingerAfterFlush = lingering
        if !hasUnsentOutput { finishClosing() } else {
            pauseReading()
            // A peer that never reads must not hold the descriptor forever.
            queue.later(after: Transport.lingerTimeout) { [weak self] in self?.close() }
        }
    }

    /// The output is out: close now, or half-close and drain (see ``closeAfterSending(lingering:)``).
    private func finishClosing() {
        guard let linger = lingerAfterFlush, endReason == nil, phase == .plain || phase == .tls else { return close() }
        lingerAfterFlush = nil
        if phase == .tls, let tls {
            tls.shutdown()
            _ = tls.sendOutput()  // best effort, as in close()
        }
        phase = .lingering
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
        started = true
        readingPaused = false
        resumeRead()
        queue.later(after: linger) { [weak self] in self?.close() }
    }

    /// Stops both sources; the descriptor closes once their cancel handlers ran.
    func close() {
        assertOnQueue(queue)
        guard !isClosed else { return }
        isClosed = true
        if phase == .tls, let tls {
            // Best effort: what is already encrypted, then close_notify if
            // nothing was left unencrypted.
            if output.isEmpty { tls.shutdown() }
            _ = tls.sendOutput()
        }
        onData = nil
        onEnd = nil
        onDrained = nil
        onConnect = nil
        onHandshake = nil
        output.removeAll()
        readSuspended = true
        writeSuspended = true
        loop.watch(fd, self, read: false, write: false)
        // Close after this turn: events fetched in the current poll may still
        // name this descriptor.
        loop.later { [self] in
            tls = nil
            Glibc.close(fd)
            retainedUntilClosed = nil
        }
    }

    private func end(_ reason: TransportEnd) {
        guard !ended else { return }
        endReason = reason
        suspendRead()
        if phase == .lingering { return close() }
        let handler = onEnd
        handler?(reason)
    }

    private func suspendRead() {
        if !readSuspended && !isClosed { readSuspended = true; updateWatch() }
    }

    private func resumeRead() {
        if readSuspended && !isClosed { readSuspended = false; updateWatch() }
    }

    private func suspendWrite() {
        if !writeSuspended && !isClosed { writeSuspended = true; updateWatch() }
    }

    private func resumeWrite() {
        if writeSuspended && !isClosed { writeSuspended = false; updateWatch() }
    }

    private func updateWatch() {
        loop.watch(fd, self, read: !readSuspended, write: !writeSuspended)
    }
}
