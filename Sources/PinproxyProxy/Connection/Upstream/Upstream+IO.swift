import Foundation
import PinproxyHTTP2

/// What the legs and layers do with an upstream connection's bytes: the
/// transport itself stays inside the upstream, so no layer reaches past it.
/// Each call is the transport's own, forwarded (inlined across the module).
extension Upstream {
    /// Sends `bytes`; before the connection is ready they are queued.
    @inline(__always) func send(_ bytes: ArraySlice<UInt8>) { transport.send(bytes) }
    @inline(__always) func send(_ bytes: [UInt8]) { transport.send(bytes[...]) }
    /// Holds output back until ``uncork()``, so that a batch goes in one write.
    @inline(__always) func cork() { transport.cork() }
    @inline(__always) func uncork() { transport.uncork() }
    /// Output beyond the congestion bound waits: stop feeding it.
    @inline(__always) var outputIsCongested: Bool { transport.outputIsCongested }
    /// Starts reading (once ready; a second call does nothing).
    @inline(__always) func start() { transport.start() }
    @inline(__always) func pauseReading() { transport.pauseReading() }
    @inline(__always) func resumeReading() { transport.resumeReading() }
    /// Closes at once; no event follows.
    @inline(__always) func close() { transport.close() }
    /// Runs `handler` when the connection has been idle a whole sweep
    /// interval (its TLS buffers went back): an HTTP/2 session over it gives
    /// its frame buffer back too.
    func whenIdle(_ handler: @escaping () -> Void) { transport.onIdle = handler }
    /// Closes once the queued output went out.
    @inline(__always) func closeAfterSending() { transport.closeAfterSending() }
    /// The HTTP/2 session an earlier relay left on this connection, for the
    /// leg that goes on with it (no second connection preface); nil when none.
    func takeIdleSession() -> HTTP2Session? {
        defer { idleSession = nil }
        return idleSession
    }

    /// The client session an HTTP/2 leg speaks on `upstream`: the one an
    /// earlier relay left there, else a new one with the upstream leg's
    /// limits (``HTTP2Limits/upstream``). `upstream` is nil for a leg over
    /// bytes in memory.
    static func http2Session(continuing upstream: Upstream?) throws(HTTP2Error) -> HTTP2Session {
        if let left = upstream?.takeIdleSession() { return left }
        return try HTTP2Session(role: .client, limits: .upstream)
    }

    /// Closes a connection that is idle between client connections: one
    /// carrying an HTTP/2 session (``Upstream/idleSession``) says GOAWAY
    /// first and closes once that went out, as a relay closing it would.
    func closeIdle() {
        guard let session = idleSession else { return close() }
        idleSession = nil
        guard isOpen else { return close() }
        try? session.goAway(code: .noError)
        _ = HTTP2ExchangeLayer.write(session, to: self)
        closeAfterSending()
    }
    /// Neither closed by the proxy nor ended by the upstream: a request may go on it.
    @inline(__always) var isOpen: Bool { !transport.isClosed && transport.endReason == nil }
    /// Still open with nothing pending from the upstream (a `MSG_PEEK`).
    var isOpenAndQuiet: Bool { transport.isOpenAndQuiet }
}

extension Upstream {
    /// Why this connection ended before (or instead of) answering, in one
    /// sentence: the alert it sent and what that alert usually means.
    func endFailure(_ end: TransportEnd, when: String = "before responding") -> UpstreamFailure {
        UpstreamFailure.ended(end, target: target, tls: transport.tls, when: when)
    }
}
