import Foundation
import PinproxyTLS

/// The TLS pump: socket bytes into the engine, the engine's output onto the
/// socket, the handshake driven and decrypted records handed on. The engine
/// (``TLSConnection``) knows no socket; this is the one place that joins them.
extension Transport {
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

    /// Reads the socket straight into the engine's input buffer (no copy),
    /// keeping a server handshake's bytes while its ClientHello is decided.
    /// `asked`: how many bytes the read asked for (fewer than the read size
    /// while part of a record waits in the buffer).
    func receive(into tls: TLSConnection, asked: inout Int) -> IOOutcome {
        var outcome = IOOutcome.wouldBlock
        var room = 0
        let n = tls.receive(maxBytes: Transport.readSize) { space in
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
        if n > 0, phase == .handshaking, recordingHandshake, handshakeBytes.count < 64 * 1024 {
            tls.withReceived(n) { handshakeBytes.append(contentsOf: $0) }
        }
        return outcome
    }

    func driveHandshake() {
        guard let tls, !isClosed else { return }
        let result = tls.handshake()
        // A flight, or the alert of a failure: both go out now.
        if tls.pendingOutput > 0 {
            switch sendEngineOutput(tls) {
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

    /// Decrypts what the engine holds and hands it to ``onData``, until the
    /// engine wants more input, reading is paused, or the session ends.
    func drainTLS() {
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

    /// Encrypts queued chunks into the engine's output buffer, sending
    /// whenever a batch's worth is ready; the rest goes at the end of the
    /// loop's batch of events, with whatever else this turn produces.
    func flushTLS(_ tls: TLSConnection) {
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

    /// What sending the engine's output achieved.
    enum EngineSend {
        /// Everything the engine held went to the socket.
        case sent
        /// The socket is full; the rest waits in the engine.
        case blocked
        /// The socket failed.
        case failed(Errno)
    }

    /// Sends the engine's output straight from its buffer until it is all
    /// sent or the socket is full.
    func sendEngineOutput(_ tls: TLSConnection) -> EngineSend {
        while tls.pendingOutput > 0 {
            var outcome = IOOutcome.wouldBlock
            _ = tls.withPendingOutput { bytes in
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

    /// Sends what the engine's output holds; false when the socket is full
    /// (the write side is then watched) or failed (the transport closed).
    func sendTLSOutput(_ tls: TLSConnection) -> Bool {
        switch sendEngineOutput(tls) {
        case .sent:
            return true
        case .blocked:
            resumeWrite()
            return false
        case .failed(let error):
            end(error.isReset ? .reset : .failed(error.description))
            close()
            return false
        }
    }
}
