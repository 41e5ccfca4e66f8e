import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// The HTTP/1.1 connections that carry a translated HTTP/2 connection's
/// streams to its upstream (client h2 ↔ upstream HTTP/1.1).
///
/// Each client stream becomes one HTTP/1.1 exchange. At most
/// ``maxConnections`` connections to the same target are open at once, as
/// browsers do; further streams wait in the order they came. A connection
/// both sides kept alive takes the next waiting stream; the first one is the
/// connection opened at the ClientHello. A stream the client resets closes
/// its connection, which is mid-exchange and cannot be reused.
///
/// Memory per client connection stays bounded. Request bytes are consumed
/// only once they went to a socket (see ``PooledHTTP1Connection``); a stream that
/// waits for a connection holds at most its stream window of body, whose
/// connection window is given back at once (else waiting uploads could take
/// the whole connection window and starve the streams whose end would free
/// a connection for them). Each connection stops reading its response while
/// its stream has more than ``streamBufferBound`` queued for the client. So
/// a connection holds at most, besides sockets' buffers, one stream window
/// per stream (request side) plus one per HTTP/1.1 connection (response side).
///
/// CONNECT, including RFC 8441's extended CONNECT (WebSocket over HTTP/2),
/// has no HTTP/1.1 form the pool could carry: it is answered 501.
final class HTTP1UpstreamPool {
    /// Connections open at once to the target.
    static let maxConnections = 6
    unowned let layer: HTTP2ExchangeLayer
    let downstream: HTTP2Session
    let target: UpstreamTarget
    /// Response bytes a stream may have queued for the client before its connection stops being read.
    let streamBufferBound: Int
    private var legs: [PooledHTTP1Connection] = []
    /// Requests waiting for a connection, oldest first.
    private var waiting: [TranslatedRequest] = []
    /// Requests not yet answered in full, by client stream.
    private var requests: [HTTP2StreamID: TranslatedRequest] = [:]

    /// A pool whose first connection is `first` (ready).
    init(layer: HTTP2ExchangeLayer, first: Upstream) {
        self.layer = layer
        self.downstream = layer.downstream
        self.target = layer.target
        self.streamBufferBound = Int(layer.downstream.limits.initialStreamWindow)
        let leg = PooledHTTP1Connection(upstream: first, pool: self)
        legs.append(leg)
        leg.becameReady()
    }

    /// The connection `up` is, if it is one of the pool's.
    func leg(for up: Upstream) -> PooledHTTP1Connection? { legs.first { $0.upstream === up } }

    /// Open connections (for tests and logs).
    var connectionCount: Int { legs.count }

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
        guard let leg = request.leg, leg.ready else {
            // Still waiting for a connection: the stream's window holds the
            // bytes back, and the connection's is given back so that the
            // streams that are moving (whose end may be what frees a
            // connection) are not starved.
            return downstream.releaseConnectionWindow(bytes.count, on: stream)
        }
        leg.sendBody()
    }

    /// Trailers from the client: they end the request (a chunked body's trailer section).
    func requestTrailers(_ stream: HTTP2StreamID, _ trailers: HTTPHeaders) {
        guard let request = requests[stream] else { return }
        request.trailers = trailers
        request.ended = true
        request.leg?.sendBody()
    }

    /// The client reset the stream, or it closed before its exchange was over.
    func cancel(_ stream: HTTP2StreamID) {
        guard let request = requests.removeValue(forKey: stream) else { return }
        waiting.removeAll { $0 === request }
        request.leg?.abandon()
    }

    /// The client's session wrote body bytes of `stream`.
    func responseWritten(_ stream: HTTP2StreamID) {
        requests[stream]?.leg?.responseWritten()
    }

    // MARK: - The upstream's side

    func upstream(_ leg: PooledHTTP1Connection, _ event: UpstreamEvent) {
        switch event {
        case .ready:
            leg.becameReady()
        case .failed(let failure):
            if let own = failure.selfAddressed { layer.record.recordSelfAddressed(own, host: target.host, port: target.port) }
            // An idle connection taken from the idle pool may have closed as it was taken.
            leg.failed(failure)
        case .data(let bytes):
            leg.received(bytes)
        case .drained:
            leg.giveBack()
        case .ended(let end):
            leg.upstreamEnded(end)
        }
    }

    /// Gives waiting requests the idle connections, then new ones up to the limit.
    private func schedule() {
        while let next = waiting.first {
            if let idle = legs.first(where: { $0.isIdle }) {
                waiting.removeFirst()
                idle.attach(next)
                continue
            }
            guard legs.count < Self.maxConnections else { return }
            waiting.removeFirst()
            let up: Upstream
            do { up = try layer.host.openUpstream(target) } catch {
                requests[next.stream] = nil
                // The body received so far goes nowhere: the client's window gets it back.
                downstream.consume(next.pending.count, on: next.stream)
                next.pending = []
                layer.answer(next.exchange, status: error.status, reason: error.reason)
                continue
            }
            let leg = PooledHTTP1Connection(upstream: up, pool: self)
            legs.append(leg)
            leg.attach(next)
        }
    }

    /// Sends `request` again on a new connection (never an idle one) in
    /// place of `old`, which the upstream closed before responding; false
    /// when no connection can be opened.
    func replay(_ request: TranslatedRequest, after failure: UpstreamFailure, from old: PooledHTTP1Connection) -> Bool {
        let up: Upstream
        do { up = try layer.host.openUpstream(target, alpn: nil, mayTakeIdle: false) } catch { return false }
        let next = PooledHTTP1Connection(upstream: up, pool: self)
        legs.append(next)
        layer.services.recorder.counters.countUpstreamRetry()
        layer.services.logger.info("\(layer.record.peer): \(failure.reason), a reused connection; \(request.head.method) \(request.head.target) (stream \(request.stream)) goes again on a new one")
        old.handOver(request, to: next)
        retire(old)
        return true
    }

    /// A request whose exchange is over (answered in full, or failed).
    func finished(_ request: TranslatedRequest) {
        if requests[request.stream] === request { requests[request.stream] = nil }
    }

    /// A connection is free for the next request.
    func legIdle(_ leg: PooledHTTP1Connection) {
        schedule()
    }

    /// Closes a connection and forgets it; a waiting request may take its place.
    func retire(_ leg: PooledHTTP1Connection) {
        leg.close()
        legs.removeAll { $0 === leg }
        schedule()
    }

    /// The client connection has been idle (``HTTP2ExchangeLayer/releaseIdleUpstream()``):
    /// connections without a request go to the idle pool, or close.
    func releaseIdleConnections() {
        let idle = legs.filter(\.isIdle)
        legs.removeAll { $0.isIdle }
        for leg in idle {
            if let up = leg.takeConnection() { layer.host.releaseUpstream(up) }
        }
    }

    /// The client connection is over: every upstream connection closes.
    func close() {
        for leg in legs { leg.close() }
        legs = []
        waiting = []
        requests = [:]
    }
}
