import Foundation

/// Sending: chunks queued in the ``OutputQueue`` by ``Transport/send(_:)``,
/// corked and gathered, and written to the socket, or under TLS handed to
/// the ``TLSPump``, which encrypts them and sends a turn's records at once.
extension Transport {
    /// Queues bytes for the peer and sends what the socket accepts now.
    func send(_ bytes: ArraySlice<UInt8>) {
        assertOnQueue(queue)
        guard !isClosed, !closeAfterFlush, !bytes.isEmpty else { return }
        activeInSweep = loop.sweepCount
        buffersReleased = false
        output.append(bytes)
        if output.corkDepth == 0 && (phase == .plain || phase == .tls) { flush() }
    }

    func send(_ bytes: [UInt8]) { send(bytes[...]) }

    /// Holds output back until the matching ``uncork()``, so everything one
    /// event produces (a response head and its body) goes out in one write.
    func cork() {
        assertOnQueue(queue)
        output.cork()
    }

    func uncork() {
        assertOnQueue(queue)
        if output.uncork(), !output.isEmpty, phase == .plain || phase == .tls { flush() }
    }

    /// Sends bytes queued while connecting, on a plain connection.
    func flushQueued() {
        assertOnQueue(queue)
        if phase == .plain { flush() }
    }

    /// Whether pending output is above the bound; the caller should stop
    /// producing until ``onDrained`` fires.
    var outputIsCongested: Bool { output.isCongested }

    /// Queued bytes, or encrypted bytes not yet sent.
    var hasUnsentOutput: Bool { !output.isEmpty || (tls?.pendingOutput ?? 0) > 0 }

    func flush() {
        guard !isClosed else { return }
        if let pump, phase == .tls {
            pump.flush(self)
            return
        }
        switch output.write(to: descriptor, in: loop) {
        case nil, .bytes:
            outputProgressed()
        case .wouldBlock, .endOfStream:
            resumeWrite()
        case .failed(let error):
            end(error.isReset ? .reset : .failed(error.description))
            close()
        }
    }

    /// After output moved on: stop watching for writability once nothing
    /// waits, tell a paused producer, and finish a close that waited.
    func outputProgressed() {
        let unsent = hasUnsentOutput
        if !unsent { suspendWrite() }
        if output.takeDrained() { onDrained?() }
        if closeAfterFlush && !unsent { finishClosing() }
    }

    func handleWritable() {
        guard !isClosed else { return }
        switch phase {
        case .connecting:
            connect?.socketWritable(self)
        case .handshaking:
            guard let pump else { return suspendWrite() }
            if pump.engine.pendingOutput > 0, !pump.send(self) { return }
            suspendWrite()
            pump.driveHandshake(self)
        case .plain, .tls:
            if let pump, phase == .tls, pump.engine.pendingOutput > 0, !pump.send(self) { return }
            flush()
        case .lingering:
            suspendWrite()
        }
    }
}
