import Foundation

/// The output queue: chunks queued by ``Transport/send(_:)``, corked and
/// gathered, written to the socket (or encrypted into the TLS engine, see
/// `Transport+TLS`), with the batching that sends a turn's records at once.
extension Transport {
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

    func send(_ bytes: [UInt8]) { send(bytes[...]) }

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

    /// Sends bytes queued while connecting, on a plain connection.
    func flushQueued() {
        assertOnQueue(queue)
        if phase == .plain { flush() }
    }

    /// Whether pending output is above the bound; the caller should stop
    /// producing until ``onDrained`` fires.
    var outputIsCongested: Bool {
        if pendingOutput > Transport.highWater { wasCongested = true; return true }
        return false
    }

    /// Queued bytes, or encrypted bytes not yet sent.
    var hasUnsentOutput: Bool { !output.isEmpty || (tls?.pendingOutput ?? 0) > 0 }

    /// Removes `count` sent bytes from the front of the queued chunks.
    func dropOutput(_ count: Int) {
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
    func withNextOutput<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
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

    func flush() {
        guard !isClosed else { return }
        if let tls, phase == .tls {
            flushTLS(tls)
            return
        }
        while !output.isEmpty {
            switch withNextOutput({ descriptor.send($0) }) {
            case .bytes(let n):
                pendingOutput -= n
                dropOutput(n)
            case .wouldBlock, .endOfStream:
                resumeWrite()
                return
            case .failed(let error):
                end(error.isReset ? .reset : .failed(error.description))
                close()
                return
            }
        }
        outputProgressed()
    }

    /// Sends the TLS output buffer at the end of the loop's current batch of
    /// events, or now outside a batch.
    func sendSoon() {
        if sendScheduled { return }
        if loop.sendAfterBatch(self) {
            sendScheduled = true
        } else {
            sendScheduledOutput()
        }
    }

    /// Called by the loop at the end of a batch (see ``sendSoon()``).
    func sendScheduledOutput() {
        sendScheduled = false
        guard !isClosed, let tls else { return }
        if sendTLSOutput(tls) { outputProgressed() }
    }

    /// After output moved on: stop watching for writability once nothing
    /// waits, tell a paused producer, and finish a close that waited.
    func outputProgressed() {
        let unsent = hasUnsentOutput
        if !unsent { suspendWrite() }
        if wasCongested && pendingOutput <= Transport.highWater / 2 {
            wasCongested = false
            onDrained?()
        }
        if closeAfterFlush && !unsent { finishClosing() }
    }

    func handleWritable() {
        guard !isClosed else { return }
        switch phase {
        case .connecting:
            finishConnecting()
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
}
