import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// The HTTP/1.1 legs that carry a translated HTTP/2 connection's streams
/// to its upstream (client h2 ↔ upstream HTTP/1.1).
///
/// Each client stream becomes one HTTP/1.1 exchange, on a leg of the same
/// kind the HTTP/1 layer uses (``LayerHost/openLeg(_:for:via:)``), held by a
/// ``TranslatedStreamCarrier``. At most ``maxConnections`` legs to the same
/// target are open at once, as browsers do; further streams wait in the
/// order they came. A leg both sides kept alive takes the next waiting
/// stream; the first one is the connection opened at the ClientHello. A
/// stream the client resets closes its leg, which is mid-exchange and
/// cannot be reused.
///
/// Memory per client connection stays bounded. Request bytes are consumed
/// only once they went to a leg that is not backed up (see
/// ``TranslatedStreamCarrier``); a stream that waits for a leg holds at most
/// its stream window of body, whose connection window is given back at once
/// (else waiting uploads could take the whole connection window and starve
/// the streams whose end would free a leg for them). Each carrier stops
/// reading its response while its stream has more than ``streamBufferBound``
/// queued for the client. So a connection holds at most, besides sockets'
/// buffers, one stream window per stream (request side) plus one per leg
/// (response side).
///
/// CONNECT, including RFC 8441's extended CONNECT (WebSocket over HTTP/2),
/// has no HTTP/1.1 form the pool could carry: it is answered 501.
final class HTTP1UpstreamPool {
    /// Legs open at once to the target.
    static let maxConnections = 6
    unowned let layer: HTTP2ExchangeLayer
    let downstream: HTTP2Session
    let target: UpstreamTarget
    /// Response bytes a stream may have queued for the client before its leg stops being read.
    let streamBufferBound: Int
    // Touched for every stream, on the connection's queue only: unchecked
    // exclusivity, as the layers' per-request state (docs/architecture.md,
    // "Exclusivity checks").
    @exclusivity(unchecked) private var carriers: [TranslatedStreamCarrier] = []
    /// Requests waiting for a leg, oldest first.
    @exclusivity(unchecked) private var waiting: [TranslatedRequest] = []
    /// Requests not yet answered in full, by client stream.
    @exclusivity(unchecked) private var requests: [HTTP2StreamID: TranslatedRequest] = [:]

    /// A pool whose first leg is over `first`, a connection ready already
    /// (`early`: what it sent first); without one, legs open as streams come.
    init(layer: HTTP2ExchangeLayer, first: Upstream?, early: [UInt8] = []) {
        self.layer = layer
        self.downstream = layer.downstream
        self.target = layer.target
        self.streamBufferBound = Int(layer.downstream.limits.initialStreamWindow)
        if let first { carriers.append(TranslatedStreamCarrier.adopting(first, early: early, for: self)) }
    }

    /// The carrier whose connection `up` is, if it is one of the pool's.
    func carrier(for up: Upstream) -> TranslatedStreamCarrier? { carriers.first { $0.handles(up) } }

    /// Open legs (for tests and logs).
    var connectionCount: Int { carriers.count }

    // MARK: - The client's side

    /// A new stream: its head is translated and it waits for a connection.
    func begin(_ exchange: HTTP2Exchange, endStream: Bool) {
        if exchange.request.method == "CONNECT" {
            return layer.answer(exchange, status: 501,
                                reason: "CONNECT over HTTP/2 (extended CONNECT included) cannot be carried to an HTTP/1.1 upstream")
        }
        var forwarded = exchange.request
        // The client named the proxy; the origin expects its own name (as for HTTP/1).
        if layer.services.rewritesHost || forwarded.authority == nil { forwarded.authority = layer.names.authority }
        let head: HTTP1RequestHead
        do { head = try forwarded.http1Head(endStream: endStream) } catch {
            return layer.answer(exchange, status: 400, reason: "the request has no HTTP/1.1 form: \(error)")
        }
        let request = TranslatedRequest(exchange: exchange, head: head, ended: endStream)
        requests[exchange.clientStream] = request
        waiting.append(request)
        schedule()
    }

    /// Request body bytes from the client.
    func requestData(_ stream: HTTP2StreamID, _ bytes: [UInt8], endStream: Bool) {
        guard let request = requests[stream] else {
            // Answered already (the response came first): the body goes nowhere.
            return downstream.consume(bytes.count, on: stream)
        }
        request.pending += bytes
        if endStream { request.ended = true }
        guard let carrier = request.carrier, carrier.takesBody else {
            // Still waiting for a leg: the stream's window holds the bytes
            // back, and the connection's is given back so that the streams
            // that are moving (whose end may be what frees a leg) are not
            // starved.
            return downstream.releaseConnectionWindow(bytes.count, on: stream)
        }
        carrier.sendBody()
    }

    /// Trailers from the client: they end the request (a chunked body's trailer section).
    func requestTrailers(_ stream: HTTP2StreamID, _ trailers: HTTPHeaders) {
        guard let request = requests[stream] else { return }
        request.trailers = trailers
        request.ended = true
        request.carrier?.sendBody()
    }

    /// The client reset the stream, or it closed before its exchange was over.
    func cancel(_ stream: HTTP2StreamID) {
        guard let request = requests.removeValue(forKey: stream) else { return }
        waiting.removeAll { $0 === request }
        request.carrier?.abandon()
    }

    /// The stream's response is overdue: its carrier fails it (504 when no head came yet);
    /// the leg, mid-exchange, closes.
    func timedOut(_ exchange: HTTP2Exchange, reason: String) {
        guard let request = requests[exchange.clientStream], request.exchange === exchange else { return }
        request.carrier?.fail(reason, status: 504)
    }

    /// The client's session wrote body bytes of `stream`.
    func responseWritten(_ stream: HTTP2StreamID) {
        requests[stream]?.carrier?.responseWritten()
    }

    // MARK: - The legs

    /// Gives waiting requests the idle legs, then new ones up to the limit.
    private func schedule() {
        while let next = waiting.first {
            if let idle = carriers.first(where: { $0.isIdle }) {
                waiting.removeFirst()
                idle.attach(next)
                continue
            }
            guard carriers.count < Self.maxConnections else { return }
            waiting.removeFirst()
            let carrier: TranslatedStreamCarrier
            do { carrier = try TranslatedStreamCarrier.opened(for: self) } catch {
                requests[next.stream] = nil
                // The body received so far goes nowhere: the client's window gets it back.
                downstream.consume(next.pending.count, on: next.stream)
                next.pending = []
                layer.answer(next.exchange, status: error.status, reason: error.reason)
                continue
            }
            carriers.append(carrier)
            carrier.attach(next)
        }
    }

    /// A request whose exchange is over (answered in full, or failed).
    func finished(_ request: TranslatedRequest) {
        if requests[request.stream] === request { requests[request.stream] = nil }
    }

    /// A leg is free for the next request.
    func legIdle(_ carrier: TranslatedStreamCarrier) {
        schedule()
    }

    /// Closes a leg and forgets it; a waiting request may take its place.
    func retire(_ carrier: TranslatedStreamCarrier) {
        carrier.close()
        carriers.removeAll { $0 === carrier }
        schedule()
    }

    /// The client connection has been idle (``HTTP2ExchangeLayer/releaseIdleUpstream()``):
    /// connections without a request go to the idle pool, or close.
    func releaseIdleConnections() {
        let idle = carriers.filter(\.isIdle)
        carriers.removeAll { $0.isIdle }
        for carrier in idle {
            if let up = carrier.takeConnection() { layer.host.releaseUpstream(up) }
        }
    }

    /// The client connection is over: every upstream connection closes.
    func close() {
        for carrier in carriers { carrier.close() }
        carriers = []
        waiting = []
        requests = [:]
    }
}
