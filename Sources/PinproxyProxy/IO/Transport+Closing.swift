import Foundation

/// Ending a transport: closing after the output is out (with an optional
/// linger that drains the peer's input), closing at once, the end reported
/// to the owner, and the idle sweep that gives TLS buffers back.
extension Transport {
    /// Open, not ending, nothing queued either way, and nothing waiting in
    /// the socket: a connection that may carry a new exchange from scratch.
    var isOpenAndQuiet: Bool {
        assertOnQueue(queue)
        return !isClosed && endReason == nil && !closeAfterFlush && phase == (tls == nil ? .plain : .tls) && !hasUnsentOutput
            && !unreadPending && Socket.isQuiet(descriptor)
    }

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
            closeTimer = queue.later(after: Transport.lingerTimeout) { [weak self] in self?.close() }
        }
    }

    /// The output is out: close now, or half-close and drain (see ``closeAfterSending(lingering:)``).
    func finishClosing() {
        guard let linger = lingerAfterFlush, endReason == nil, phase == .plain || phase == .tls else { return close() }
        lingerAfterFlush = nil
        if phase == .tls { pump?.closeNotify() }
        phase = .lingering
        descriptor.shutdownSending()
        started = true
        readingPaused = false
        resumeRead()
        closeTimer?.cancel()
        closeTimer = queue.later(after: linger) { [weak self] in self?.close() }
    }

    /// Stops watching the socket; the engine is freed and the descriptor
    /// closed after this turn of the loop.
    func close() {
        assertOnQueue(queue)
        guard !isClosed else { return }
        if phase == .tls { pump?.closeNotify(withheld: !output.isEmpty) }
        isClosed = true
        closeTimer?.cancel()
        closeTimer = nil
        loop.noteClosed()
        onData = nil
        onEnd = nil
        onDrained = nil
        connect = nil
        pump?.onHandshake = nil
        output.removeAll()
        watching = []
        loop.watch(descriptor, self, for: [])
        // Close after this turn: events fetched in the current poll may still
        // name this descriptor.
        loop.later { [self] in
            pump = nil
            descriptor.close()
            retainedUntilClosed = nil
        }
    }

    /// Input ended: stop reading and tell the owner why (once).
    func end(_ reason: TransportEnd) {
        guard !ended else { return }
        endReason = reason
        suspendRead()
        if phase == .lingering { return close() }
        let handler = onEnd
        handler?(reason)
    }

    /// Called by the loop's periodic sweep: a TLS connection that did
    /// nothing since the sweep before last gives its record buffers back, so
    /// thousands of idle keep-alive connections stay small.
    /// Returns whether it released anything.
    func sweep(_ count: UInt) -> Bool {
        guard !buffersReleased, activeInSweep &+ 1 < count, let tls, phase == .tls, !hasUnsentOutput else { return false }
        tls.releaseBuffers()
        buffersReleased = true
        onIdle?()
        return true
    }
}
