import Foundation

/// Reading the socket: plain bytes to ``Transport/onData``, encrypted bytes
/// into the TLS engine (through the ``TLSPump``), and pausing for backpressure.
extension Transport {
    /// Stops delivering bytes. The socket stops being watched lazily, only
    /// if bytes arrive while paused: most pauses (the wait for a response)
    /// see no input at all, and each change of the watch is an `epoll_ctl`.
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
                loop.later { [self] in resumeAfterPause() }
            }
        }
    }

    private func resumeAfterPause() {
        guard !isClosed, !readingPaused, started else { return }
        if phase == .tls, let pump, !pump.readsDirectly { pump.drain(self) }
        readAvailable()
    }

    func handleReadable() {
        guard !isClosed else { return }
        if let pump, pump.readsDirectly { pump.engine.directSocket.becameReadable() }
        if writeWantsRead { writeWantsRead = false; flush() }
        if readingPaused && phase != .handshaking {
            // Input arrived while paused: now stop watching until resumed.
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
    func readAvailable() {
        if phase == .tls, let pump, pump.readsDirectly {
            // OpenSSL reads the socket itself, record by record.
            if !isClosed && !ended { pump.readSocket(self) }
            return
        }
        var rounds = 0
        while !isClosed && !ended {
            if readingPaused && phase != .handshaking {
                // Paused by what was just delivered. The watch stays: if
                // more input waits, the next event stops it.
                unreadPending = true
                return
            }
            rounds += 1
            if rounds > 16 {
                // Let other connections run; the socket is still readable, so
                // the loop's next poll (level-triggered) comes back to it.
                if !watching.contains(.readable) { loop.later { [self] in readAvailable() } }
                return
            }
            guard readOnce() else { return }
        }
    }

    /// One read(2); false when nothing more can be read now (or a short read
    /// says the socket is empty).
    private func readOnce() -> Bool {
        let phaseNow = phase
        if phaseNow == .tls, let pump, pump.readsDirectly {
            // The handshake just completed: OpenSSL reads from here on.
            pump.readSocket(self)
            return false
        }
        var asked = Transport.readSize
        var plain: [UInt8] = []
        let outcome: IOOutcome
        if let pump, phaseNow == .tls || phaseNow == .handshaking {
            outcome = pump.receive(maxBytes: Transport.readSize, asked: &asked, handshaking: phaseNow == .handshaking)
        } else {
            // Plain bytes: read into the loop's scratch space, then copied out.
            outcome = loop.withScratch(Transport.readSize) { scratch in
                let outcome = descriptor.read(into: scratch)
                if case .bytes(let n) = outcome, phaseNow != .lingering {
                    plain = Array(UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
                }
                return outcome
            }
        }
        switch outcome {
        case .wouldBlock:
            return false
        case .failed(let error):
            if phase == .handshaking || phase == .tls, let tls { tls.feedEndOfInput() }
            end(error == .connectionReset ? .reset : .failed(error.description))
            return false
        case .endOfStream:
            suspendRead()
            switch phase {
            case .handshaking, .tls:
                tls?.feedEndOfInput()
                pump?.advance(self)
            default:
                end(.closed)
            }
            return false
        case .bytes(let n):
            switch phaseNow {
            case .plain, .connecting: onData?(plain[...])
            case .handshaking, .tls: pump?.advance(self)
            case .lingering: break  // dropped: the response is out, the rest of the request unwanted
            }
            return n == asked
        }
    }
}
