import PinproxyHTTP1
import PinproxyHTTP2

/// The upstream side of an HTTP/2 client connection's streams, whatever the
/// upstream speaks: relayed stream for stream to an HTTP/2 session
/// (``HTTP2RelayLeg``), or translated to HTTP/1.1 exchanges on a few
/// connections (``HTTP1UpstreamPool``). ``HTTP2ExchangeLayer`` keeps the
/// client's session and the streams' bookkeeping and hands every stream to
/// its leg; it never touches an upstream connection or session itself, so a
/// test can drive it with a leg in memory.
///
/// A leg answers the client through the layer (``HTTP2ExchangeLayer/answer(_:status:reason:)``,
/// its client session) and reports a lost upstream with
/// ``HTTP2ExchangeLayer/upstreamFailed(_:status:)``. Every call comes on the
/// connection's queue.
protocol HTTP2StreamLeg: AnyObject {
    /// The connection, for the flows' TLS details and timings (a pool's
    /// streams name their own; nil in memory).
    var connection: Upstream? { get }
    /// Whether `upstream` is one of the leg's connections.
    func handles(_ upstream: Upstream) -> Bool
    /// An event of one of the leg's connections; the layer pumps after it.
    func upstream(_ upstream: Upstream, _ event: UpstreamEvent)

    /// A new client stream, not answered by the proxy itself.
    func open(_ exchange: HTTP2Exchange, endStream: Bool)
    /// Request body bytes of an open stream.
    func forwardData(_ bytes: [UInt8], of exchange: HTTP2Exchange, endStream: Bool)
    /// The request's trailers, which end it.
    func forwardTrailers(_ trailers: HTTPHeaders, of exchange: HTTP2Exchange)
    /// The client reset the stream with `code`.
    func clientReset(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode)
    /// The client's stream closed (`code` other than NO_ERROR: cut short).
    func clientClosed(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode)
    /// The client's session wrote `count` response body bytes of `stream`.
    func responseWritten(_ stream: HTTP2StreamID, count: Int)
    /// `exchange`'s upstream sent no response head in time (its clock was armed
    /// with ``HTTP2ExchangeLayer/armResponseTimer(_:)``).
    func responseTimedOut(_ exchange: HTTP2Exchange, reason: String)
    /// Whether `exchange` still waits on the upstream: when the upstream
    /// fails, such a stream is answered or reset; the others are done.
    func isAwaitingResponse(_ exchange: HTTP2Exchange) -> Bool

    /// Takes the leg's own session events and output; whether anything moved.
    func pump() -> Bool
    /// The client connection is over, or the upstream failed: every connection closes.
    func close()
    /// No stream was open for the upstream hold: connections are let go
    /// (to the idle pool, or closed). Whether the leg is done: the next
    /// stream then opens a new one.
    func releaseIdle() -> Bool
}

/// The pool is a stream leg as it is: its HTTP/1.1 legs carry one stream at a time.
extension HTTP1UpstreamPool: HTTP2StreamLeg {
    var connection: Upstream? { nil }
    func handles(_ upstream: Upstream) -> Bool { carrier(for: upstream) != nil }

    func upstream(_ upstream: Upstream, _ event: UpstreamEvent) {
        carrier(for: upstream)?.leg?.upstream(upstream, event)
    }

    func open(_ exchange: HTTP2Exchange, endStream: Bool) { begin(exchange, endStream: endStream) }

    func forwardData(_ bytes: [UInt8], of exchange: HTTP2Exchange, endStream: Bool) {
        requestData(exchange.clientStream, bytes, endStream: endStream)
    }

    func forwardTrailers(_ trailers: HTTPHeaders, of exchange: HTTP2Exchange) {
        requestTrailers(exchange.clientStream, trailers)
    }

    func clientReset(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) { cancel(exchange.clientStream) }
    func clientClosed(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) { cancel(exchange.clientStream) }
    func responseWritten(_ stream: HTTP2StreamID, count: Int) { responseWritten(stream) }
    func isAwaitingResponse(_ exchange: HTTP2Exchange) -> Bool { true }
    /// The stream's carrier fails it: 504 when no head came yet, and the leg, mid-exchange, closes.
    func responseTimedOut(_ exchange: HTTP2Exchange, reason: String) { timedOut(exchange, reason: reason) }
    /// The pool's connections are driven by their own events.
    func pump() -> Bool { false }
    /// Idle connections go to the idle pool; the pool opens new ones on demand.
    func releaseIdle() -> Bool {
        releaseIdleConnections()
        return false
    }
}
