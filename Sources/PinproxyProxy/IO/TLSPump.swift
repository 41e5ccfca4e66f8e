import Foundation
import PinproxyTLS

/// TLS over a transport's socket: the one place where the engine and the
/// socket meet.
///
/// The engine (``TLSConnection``) knows no socket. The pump reads the
/// socket straight into the engine's input buffer and sends the engine's
/// output straight from its buffer (no copy either way), drives the
/// handshake, decrypts records for the transport's owner and encrypts the
/// transport's queued output. Its state is the TLS session's: the engine,
/// the handshake's recording and handler, and whether a send is due at the
/// end of the loop's batch. What an outcome means for the connection (a
/// watch on writability, the end of input, a close) it leaves to the
/// transport it is given, whose services it calls. Created by
/// ``Transport/startTLS(_:initial:handler:)``; like its transport, it runs
/// only on the connection's queue.
final class TLSPump {
    let engine: TLSConnection
    let descriptor: Descriptor
    // Touched for every event, only on the connection's queue (as the transport's own state).
    /// Bytes fed to a server-side handshake, kept until its ClientHello is decided.
    @exclusivity(unchecked) var recording = HandshakeRecording()
    /// Told when the handshake completes, pauses at the ClientHello, or ends.
    @exclusivity(unchecked) var onHandshake: ((TLSHandshakeResult) -> Void)?
    /// The engine's output leaves at the end of the loop's batch (see ``sendSoon(_:)``).
    @exclusivity(unchecked) var sendScheduled = false
    /// Once the handshake is done, OpenSSL reads the socket itself (see
    /// ``readSocket(_:)``); until then the pump reads it into the engine's input.
    @exclusivity(unchecked) private(set) var readsDirectly = false
    /// The handshake's last read was shorter than asked: the socket was empty.
    @exclusivity(unchecked) private var lastReadShort = false
    /// Whether the next record is decrypted straight into the array handed on.
    @exclusivity(unchecked) private var sizing = RecordSizing()

    /// Records decrypted per readable event before other connections get
    /// a turn (the socket, still readable, is announced again; 1 MiB).
    static let recordsPerTurn = 64

    /// Encrypted output is sent once it reaches this size, else at the end
    /// of the loop's batch of events (see ``sendSoon(_:)``).
    static let sendBatch = 64 * 1024

    /// A pump for `engine` over `descriptor`; `initial` holds bytes already
    /// read from the socket that belong to the handshake.
    init(engine: TLSConnection, descriptor: Descriptor, initial: ArraySlice<UInt8>,
         handler: @escaping (TLSHandshakeResult) -> Void) {
        self.engine = engine
        self.descriptor = descriptor
        onHandshake = handler
        if !initial.isEmpty { initial.withUnsafeBytes { engine.feed($0) } }
        if engine.isServer { recording.start(with: initial) }
    }

    // MARK: - Input

    /// Reads the socket into the engine's input buffer (no copy), keeping a
    /// server handshake's bytes while its ClientHello is decided. `asked`:
    /// how many bytes the read asked for (fewer than `maxBytes` while part
    /// of a record waits in the buffer).
    func receive(maxBytes: Int, asked: inout Int, handshaking: Bool) -> IOOutcome {
        var outcome = IOOutcome.wouldBlock
        var room = 0
        let n = engine.receive(maxBytes: maxBytes) { space in
            room = space.count
            guard space.count > 0 else {
                outcome = .failed(Errno(ENOMEM))
                return -1
            }
            outcome = descriptor.read(into: space)
            if case .bytes(let n) = outcome { return n }
            return -1
        }
        asked = room
        lastReadShort = n < room
        if handshaking { recording.record(n, receivedBy: engine) }
        return outcome
    }

    /// Advances the handshake as far as the input allows and sends its
    /// flight (or the alert of a failure) at once; on completion the
    /// transport turns to `.tls`, sends what was queued meanwhile and
    /// decrypts what came with the last flight.
    func driveHandshake(_ transport: Transport) {
        guard !transport.isClosed else { return }
        let result = engine.handshake()
        if engine.pendingOutput > 0 {
            switch sendOutput() {
            case .sent: break
            case .blocked: transport.resumeWrite()
            case .failed: break  // the next read reports the socket's state
            }
        }
        switch result {
        case .complete:
            transport.phase = .tls
            _ = recording.stop()
            // From here on a record is read from the socket into OpenSSL's
            // buffer, where it is decrypted: one copy of each byte fewer.
            engine.directSocket.readDirectly(descriptor.rawValue, empty: lastReadShort)
            readsDirectly = true
            let handler = onHandshake
            onHandshake = nil
            handler?(.complete)
            transport.flush()
            if !transport.isClosed, !transport.readingPaused { drain(transport) }
        case .wantRead:
            break
        case .wantWrite:
            transport.resumeWrite()
        case .clientHello, .closed, .failed:
            if case .clientHello = result {} else { transport.phase = .plain }
            onHandshake?(result)
            if case .clientHello = result {} else { onHandshake = nil }
        }
    }

    /// Moves the session on after input arrived: the handshake while it
    /// lasts, then the records.
    func advance(_ transport: Transport) {
        if transport.phase == .handshaking { driveHandshake(transport) } else { drain(transport) }
    }

    /// Gives up a handshake that has not sent anything yet and returns every
    /// byte fed to it.
    func abandon() -> [UInt8] {
        onHandshake = nil
        return recording.stop()
    }

    /// Reads the socket through the engine (OpenSSL reading it into its own
    /// record buffer) and hands what it decrypts to the transport, until the
    /// socket is empty, reading is paused, the session ends, or
    /// ``recordsPerTurn`` records went through; then the loop comes back.
    func readSocket(_ transport: Transport) {
        guard drain(transport, budget: TLSPump.recordsPerTurn) else { return }
        // Out of budget: a socket that may hold more stays readable and the
        // (level-triggered) poll announces it again; records already read
        // ahead into OpenSSL would not be announced, so come back to them.
        if engine.directSocket.input != .readable || !transport.watching.contains(.readable) {
            transport.loop.later { transport.readAvailable() }
        }
    }

    /// Decrypts what the engine holds (and, once it reads the socket
    /// itself, what the socket holds) and hands it to the transport's
    /// ``Transport/onData``, until the engine wants more input, reading is
    /// paused, the session ends or `budget` records went through. Returns
    /// whether it stopped for the budget.
    @discardableResult
    func drain(_ transport: Transport, budget: Int = .max) -> Bool {
        // Reading may produce output (a key update's answer, an alert).
        defer { if !transport.isClosed && engine.pendingOutput > 0 { sendSoon(transport) } }
        var records = 0
        while !transport.isClosed {
            if transport.readingPaused {
                transport.unreadPending = true
                return false
            }
            if records == budget { return true }
            records += 1
            let (result, bytes) = readRecord(in: transport.loop)
            if case .bytes = result {} else if readsDirectly, let failure = socketFailure() {
                // read(2) failed inside OpenSSL: the socket's error, as a
                // failed read of the pump's own would report it.
                transport.end(failure)
                return false
            }
            switch result {
            case .bytes:
                transport.onData?(bytes[...])
                // Nothing left in OpenSSL, its input or the socket: the next
                // SSL_read would only report WANT_READ, so skip it (but not
                // at end of stream, where it reports the close).
                if !engine.hasBufferedInput && !engine.isAtEndOfInput
                    && !(readsDirectly && engine.directSocket.input == .readable) { return false }
            case .wantRead, .wantWrite:
                // TLS output goes to a buffer that never refuses, so a read
                // never waits for the socket to take output.
                return false
            case .closed:
                transport.end(.closed)
                return false
            case .failed(let failure):
                transport.end(.tlsFailed(failure))
                return false
            }
        }
        return false
    }

    /// How the transport ends when OpenSSL's read of the socket failed.
    private func socketFailure() -> TransportEnd? {
        guard case .failed(let code) = engine.directSocket.input else { return nil }
        let error = Errno(code)
        return error == .connectionReset ? .reset : .failed(error.description)
    }

    /// Decrypts the next record, into an array of a full record's size
    /// while large records come (``RecordSizing``), else through scratch
    /// space and into an array of its own size.
    private func readRecord(in scratch: some ScratchSpace) -> (TLSIOResult, [UInt8]) {
        if sizing.decryptsIntoFullArray(buffered: engine.bufferedEncryptedCount) {
            var result = TLSIOResult.wantRead
            let bytes = [UInt8](unsafeUninitializedCapacity: RecordSizing.fullRecord) { buffer, count in
                result = engine.read(into: UnsafeMutableRawBufferPointer(buffer))
                if case .bytes(let n) = result { count = n } else { count = 0 }
            }
            guard case .bytes(let n) = result, sizing.noteRecord(n) == .small else { return (result, bytes) }
            // A copy in storage of its own size (`Array(bytes)` would keep the 16 KiB).
            let small = [UInt8](unsafeUninitializedCapacity: n) { buffer, count in
                count = buffer.initialize(from: bytes).1
            }
            return (result, small)
        }
        return scratch.withScratch(RecordSizing.fullRecord) { scratch in
            let result = engine.read(into: scratch)
            guard case .bytes(let n) = result else { return (result, []) }
            sizing.noteRecord(n)
            return (result, Array(UnsafeRawBufferPointer(rebasing: scratch[0..<n])))
        }
    }

    // MARK: - Output

    /// Encrypts the transport's queued chunks into the engine's output
    /// buffer, sending whenever a batch's worth is ready; the rest goes at
    /// the end of the loop's batch of events, with whatever else this turn
    /// produces.
    func flush(_ transport: Transport) {
        while !transport.output.isEmpty {
            if engine.pendingOutput >= TLSPump.sendBatch {
                guard send(transport) else { return }
            }
            let result = transport.output.withNext(in: transport.loop) { engine.write($0) }
            switch result {
            case .bytes(let written): transport.output.drop(written)
            case .wantWrite: transport.resumeWrite(); return  // not with a buffer that never refuses
            case .wantRead: transport.writeWantsRead = true; transport.resumeRead(); return
            case .closed: transport.end(.closed); transport.close(); return
            case .failed(let failure): transport.end(.tlsFailed(failure)); transport.close(); return
            }
        }
        if engine.pendingOutput > 0 {
            sendSoon(transport)
        } else {
            transport.outputProgressed()
        }
    }

    /// Sends the engine's output at the end of the loop's current batch of
    /// events, or now outside a batch.
    func sendSoon(_ transport: Transport) {
        if sendScheduled { return }
        if transport.loop.sendAfterBatch(transport) {
            sendScheduled = true
        } else {
            sendScheduledOutput(transport)
        }
    }

    /// The end of the loop's batch (see ``sendSoon(_:)``).
    func sendScheduledOutput(_ transport: Transport) {
        sendScheduled = false
        if send(transport) { transport.outputProgressed() }
    }

    /// Sends what the engine's output holds; false when the socket is full
    /// (the write side is then watched) or failed (the transport closed).
    func send(_ transport: Transport) -> Bool {
        switch sendOutput() {
        case .sent:
            return true
        case .blocked:
            transport.resumeWrite()
            return false
        case .failed(let error):
            transport.end(error.isReset ? .reset : .failed(error.description))
            transport.close()
            return false
        }
    }

    /// Best effort on closing: close_notify, unless output was left
    /// unencrypted (`withheld`: the peer would take a truncated stream for a
    /// complete one), then whatever is encrypted, if the socket takes it.
    func closeNotify(withheld: Bool = false) {
        if !withheld { engine.shutdown() }
        _ = sendOutput()
    }

    /// What sending the engine's output achieved.
    enum Sent {
        /// Everything the engine held went to the socket.
        case sent
        /// The socket is full; the rest waits in the engine.
        case blocked
        /// The socket failed.
        case failed(Errno)
    }

    /// Sends the engine's output straight from its buffer until it is all
    /// sent or the socket is full.
    func sendOutput() -> Sent {
        while engine.pendingOutput > 0 {
            var outcome = IOOutcome.wouldBlock
            _ = engine.withPendingOutput { bytes in
                outcome = descriptor.send(bytes)
                if case .bytes(let n) = outcome { return n }
                return 0
            }
            switch outcome {
            case .bytes: continue
            case .wouldBlock, .endOfStream: return .blocked
            case .failed(let error): return .failed(error)
            }
        }
        return .sent
    }
}

/// Where a pump decrypts the next record: straight into the array it hands
/// on, sized for a full record, while large records come (a bulk transfer
/// skips a copy), or into scratch space, copied out into an array of the
/// record's own size (a short body then does not pin 16 KiB while it waits
/// in an output queue).
///
/// A record is large from half a full record up (an origin's HTTP/2 server
/// may write an 8 KiB DATA frame per record): an array handed on then holds
/// at most twice the bytes it carries. A small record met while large ones
/// come (a frame's tail, a WINDOW_UPDATE between DATA records) is moved to
/// an array of its own size, and two in a row end the run. Ending the run
/// at every record short of 16 KiB sent a third of an HTTP/2 download
/// through scratch space and a copy.
struct RecordSizing {
    /// A full TLS record's plaintext.
    static let fullRecord = 16 * 1024

    /// Small records in a row, up to two.
    private(set) var smallInARow = 2

    /// What a record decrypted into a full record's array means for it.
    enum Fit: Equatable {
        /// Handed on in that array.
        case large
        /// Moved to an array of its own size.
        case small
    }

    /// Whether the next record goes straight into a full record's array:
    /// while large records come, or when more than a full record is
    /// already buffered (encrypted) in front of the engine.
    func decryptsIntoFullArray(buffered: Int) -> Bool {
        smallInARow < 2 || buffered > Self.fullRecord
    }

    /// Notes a record of `count` bytes decrypted.
    @discardableResult
    mutating func noteRecord(_ count: Int) -> Fit {
        if count >= Self.fullRecord / 2 {
            smallInARow = 0
            return .large
        }
        smallInARow = min(smallInARow + 1, 2)
        return .small
    }
}
