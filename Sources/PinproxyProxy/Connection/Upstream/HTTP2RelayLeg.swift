import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// An HTTP/2 client connection's streams relayed to an upstream that chose
/// `h2`: a client session on the upstream connection, one upstream stream per
/// client stream. Heads, body bytes, trailers, resets and GOAWAY cross as
/// they arrive; flow control is end to end (see ``HTTP2ExchangeLayer``): body
/// bytes are consumed on one leg only once the other leg wrote them.
final class HTTP2RelayLeg: HTTP2StreamLeg {
    // Each read of an unowned reference makes a strong one (an atomic
    // increment and decrement): methods that run per stream or per event
    // read it once, into a local.
    private unowned let layer: HTTP2ExchangeLayer
    private(set) var connection: Upstream?
    private let session: HTTP2Session
    // Touched per frame, only on the connection's queue (as the layer's
    // state): no run-time exclusivity checks.
    /// The layer's streams by their upstream stream, until the upstream's stream closes.
    @exclusivity(unchecked) private var byUpstream = HTTP2StreamMap<HTTP2Exchange>()
    @exclusivity(unchecked) private var closed = false
    /// The upstream said GOAWAY without an error: the layer sends new streams elsewhere.
    @exclusivity(unchecked) private var wentAway = false
    /// The storage `pump()` takes the upstream's events in, kept between turns.
    @exclusivity(unchecked) private var spareEvents: [HTTP2Event] = []

    /// A relay over `upstream` (ready, chose `h2`); `early`: what it sent
    /// before (its SETTINGS). A connection taken from the idle pool brings
    /// the session an earlier relay left on it (``Upstream/idleSession``).
    init(layer: HTTP2ExchangeLayer, upstream: Upstream, early: [UInt8]) throws(HTTP2Error) {
        self.layer = layer
        self.connection = upstream
        self.session = try Upstream.http2Session(continuing: upstream)
        // An idle connection's session gives its frame buffer back.
        // The session, strongly: the transport's closure is replaced by the
        // next owner's, and a weak reference would give it a side table.
        let session = self.session
        upstream.whenIdle { session.releaseIdleMemory() }
        upstream.start()
        if !early.isEmpty { session.receive(early) }
    }

    func handles(_ upstream: Upstream) -> Bool { upstream === connection }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard !closed else { return }
        switch event {
        case .ready, .drained:
            break
        case .failed(let failure):
            connection = nil
            if let own = failure.selfAddressed { layer.record.recordSelfAddressed(own, host: layer.target.host, port: layer.target.port) }
            failed(failure.reason, status: failure.status)
        case .data(let bytes):
            bytes.withUnsafeBytes { session.receive($0) }
        case .ended(let end):
            connection = nil
            up.close()
            failed(up.endFailure(end, when: byUpstream.isEmpty ? "between requests" : "before the response was complete").reason)
        }
    }

    /// The connection is lost: every stream of the layer's fails, or, after
    /// the upstream's GOAWAY, only those still on this connection.
    private func failed(_ reason: String, status: Int = 502) {
        if wentAway { layer.retiredRelayFailed(self, reason, status: status) } else { layer.upstreamFailed(reason, status: status) }
    }

    /// No upstream stream is open (a relay that went away is then let go).
    var carriesNoStream: Bool { byUpstream.isEmpty }

    // MARK: - The client's streams

    func open(_ exchange: HTTP2Exchange, endStream: Bool) {
        let layer = self.layer
        // The client named the proxy; the origin expects its own name. The
        // head goes as it is, with that name, rather than copied and changed.
        let authority = layer.services.rewritesHost || exchange.request.authority == nil ? layer.names.authority : nil
        if session.peerWentAway && !wentAway {
            // The upstream's GOAWAY is read, its event not yet handled (it
            // comes with this relay's next pump): the stream goes on another
            // connection at once, as those the GOAWAY leaves unprocessed will.
            wentAway = true
            return layer.relayWentAway(self, reopening: [exchange])
        }
        do {
            let up = try session.sendRequest(exchange.request, authority: authority, endStream: endStream)
            exchange.upstreamStream = up
            byUpstream[up] = exchange
            layer.armResponseTimer(exchange)
        } catch {
            layer.answer(exchange, status: 502, reason: "the request could not be sent upstream: \(error)")
        }
    }

    func forwardData(_ bytes: [UInt8], of exchange: HTTP2Exchange, endStream: Bool) {
        guard let up = exchange.upstreamStream else { return layer.downstream.consume(bytes.count, on: exchange.clientStream) }
        if !bytes.isEmpty { exchange.sentBodyUpstream = true }
        do { try session.sendData(bytes, on: up, endStream: endStream) } catch { resetBoth(exchange, error) }
    }

    func forwardTrailers(_ trailers: HTTPHeaders, of exchange: HTTP2Exchange) {
        guard let up = exchange.upstreamStream else { return }
        exchange.sentBodyUpstream = true
        do { try session.sendTrailers(trailers, on: up) } catch { resetBoth(exchange, error) }
    }

    func clientReset(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) {
        if let up = exchange.upstreamStream { try? session.reset(up, code: code) }
    }

    func clientClosed(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) {
        if code != .noError, let up = exchange.upstreamStream, byUpstream[up] != nil { try? session.reset(up, code: .cancel) }
    }

    func responseWritten(_ stream: HTTP2StreamID, count: Int) {
        let layer = self.layer
        guard let exchange = layer.byClient[stream], let up = exchange.upstreamStream else { return }
        session.consume(count, on: up)
        layer.extendResponseTimer(exchange)
    }

    func isAwaitingResponse(_ exchange: HTTP2Exchange) -> Bool {
        exchange.upstreamStream.map { byUpstream[$0] != nil } ?? true
    }

    /// A head or body the other leg refused: both streams are reset.
    private func resetBoth(_ exchange: HTTP2Exchange, _ error: HTTP2Error) {
        if exchange.error == nil { exchange.error = "\(error)" }
        try? layer.downstream.reset(exchange.clientStream, code: .internalError)
        if let up = exchange.upstreamStream { try? session.reset(up, code: .cancel) }
    }

    /// The upstream stream sent no head in time: it is reset and the client answered 504.
    func responseTimedOut(_ exchange: HTTP2Exchange, reason: String) {
        guard layer.byClient[exchange.clientStream] === exchange, exchange.response == nil, !exchange.answeredLocally else { return }
        if let up = exchange.upstreamStream, byUpstream.removeValue(forKey: up) != nil {
            try? session.reset(up, code: .cancel)
        }
        layer.services.logger.notice("\(layer.record.peer): stream \(exchange.clientStream): \(reason)")
        layer.answer(exchange, status: 504, reason: reason)
    }

    // MARK: - The upstream's session

    func pump() -> Bool {
        guard !closed else { return false }
        // As in `HTTP2ExchangeLayer.pump()`: the batch's storage is reused.
        let layer = self.layer
        var events: [HTTP2Event] = []
        swap(&events, &spareEvents)
        session.takeEvents(into: &events)
        let any = !events.isEmpty
        for index in events.indices where !closed && !layer.closed { upstreamEvent(events.take(at: index), layer: layer) }
        events.removeAll(keepingCapacity: true)
        swap(&events, &spareEvents)
        guard !closed, let up = connection else { return any }
        return HTTP2ExchangeLayer.write(session, to: up) || any
    }

    /// With no stream open, the connection goes to the idle pool with its
    /// session (``Upstream/idleSession``), for the next client connection
    /// to the same upstream: that one then skips the upstream's TCP and TLS
    /// handshakes and the chain's verification, as HAProxy's and nginx's
    /// kept backend connections do. A session that cannot go on (an error,
    /// GOAWAY either way, output the socket has not taken, no stream
    /// identifiers left), or a connection the pool may not keep, ends:
    /// GOAWAY, then the connection closes once that went out.
    func releaseIdle() -> Bool {
        guard byUpstream.isEmpty, let up = connection else { return false }
        closed = true
        connection = nil
        _ = HTTP2ExchangeLayer.write(session, to: up)
        // What is left concerns streams that are over.
        var stale: [HTTP2Event] = []
        session.takeEvents(into: &stale)
        up.idleSession = session
        if up.mayBeReused {
            up.whenIdle { [session] in session.releaseIdleMemory() }
            layer.host.releaseUpstream(up)
        } else {
            up.closeIdle()
        }
        return true
    }

    func close() {
        closed = true
        byUpstream.removeAll()
        connection?.close()
        connection = nil
    }

    private func upstreamEvent(_ event: HTTP2Event, layer: HTTP2ExchangeLayer) {
        let downstream = layer.downstream
        switch event {
        case .response(let stream, let head, let endStream):
            guard let exchange = byUpstream[stream] else { return }
            if exchange.firstResponseByte == nil { exchange.firstResponseByte = Date() }
            if head.isInformational {
                layer.extendResponseTimer(exchange)
            } else {
                exchange.stopResponseClock()
                // The fields, for a flow; without one, the status says the head came.
                exchange.response = layer.record.wantsFlows
                    ? HTTP2Exchange.flowResponse(head) : HTTP2Exchange.unrecordedResponse(status: head.status)
            }
            if endStream && !head.isInformational { exchange.responseEnded = true }
            do { try downstream.sendResponse(head, on: exchange.clientStream, endStream: endStream) } catch { resetBoth(exchange, error) }
        case .data(let stream, let bytes, let endStream):
            guard let exchange = byUpstream[stream] else { return session.consume(bytes.count, on: stream) }
            exchange.responseBody.append(bytes)
            if endStream { exchange.responseEnded = true }
            do { try downstream.sendData(bytes, on: exchange.clientStream, endStream: endStream) } catch { resetBoth(exchange, error) }
        case .trailers(let stream, let trailers):
            guard let exchange = byUpstream[stream] else { return }
            exchange.responseEnded = true
            do { try downstream.sendTrailers(trailers, on: exchange.clientStream) } catch { resetBoth(exchange, error) }
        case .dataWritten(let stream, let count):
            if let exchange = byUpstream[stream] {
                downstream.consume(count, on: exchange.clientStream)
                layer.extendResponseTimer(exchange)
            }
        case .reset(let stream, let code):
            guard let exchange = byUpstream[stream] else { return }
            if code == .noError && exchange.responseEnded {
                // A whole answer before the whole request, then "stop sending" (RFC 9113 §8.1;
                // nginx's 413 for a body over its limit): the answer goes to the client in full and
                // the rest of the request body is dropped here. The client is not reset: it has the
                // answer with END_STREAM and stops on its own, as curl does ("HTTP error before end
                // of send, stop sending"); a reset arriving while it is mid-upload makes curl 7.88
                // drop the answer it has not read yet ("closed ... before getting all response header fields").
                exchange.upstreamStream = nil
                return
            }
            if exchange.error == nil { exchange.error = "the upstream reset the stream (\(code))" }
            try? downstream.reset(exchange.clientStream, code: code)
        case .streamClosed(let stream, let code):
            guard let exchange = byUpstream.removeValue(forKey: stream) else { return }
            // A request GOAWAY left unprocessed is refused: the client may retry it.
            if code != .noError, layer.byClient[exchange.clientStream] != nil {
                if exchange.error == nil { exchange.error = "the upstream stream ended with \(code)" }
                try? downstream.reset(exchange.clientStream, code: code)
            }
        case .goAway(let last, let code, _):
            if code == .noError {
                if layer.services.logger.logLevel <= .info {
                    layer.services.logger.info("\(layer.record.peer): the upstream sent GOAWAY (last stream \(last)); new streams go on another connection")
                }
                retire(last: last, layer: layer)
            } else {
                layer.services.logger.info("\(layer.record.peer): the upstream sent GOAWAY (\(code)); the client is told the same")
                passOn(last: last, code: code)
            }
        case .connectionError(let error):
            layer.services.logger.notice("\(layer.record.peer): the upstream broke HTTP/2: \(error)")
            failed("the upstream broke HTTP/2: \(error)")
        case .request:
            break
        }
    }

    /// The upstream ends the connection gracefully and will not process its
    /// streams above `last` (RFC 9113 §6.8: they may go again elsewhere).
    /// Those that sent no request body go again on the layer's next leg,
    /// with the streams the client opens from now on; one that did is
    /// refused (REFUSED_STREAM), as it cannot be sent again, and the client
    /// may retry it. The streams the upstream took finish here.
    private func retire(last: HTTP2StreamID, layer: HTTP2ExchangeLayer) {
        wentAway = true
        var again: [HTTP2Exchange] = []
        for (stream, exchange) in byUpstream.entries {
            guard stream > last else { continue }
            byUpstream[stream] = nil
            exchange.upstreamStream = nil
            if exchange.sentBodyUpstream {
                if exchange.error == nil { exchange.error = "the upstream did not process the request (GOAWAY) after its body was sent; refused" }
                try? layer.downstream.reset(exchange.clientStream, code: .refusedStream)
            } else {
                again.append(exchange)
            }
        }
        layer.relayWentAway(self, reopening: again)
    }

    /// The upstream will not process its streams above `last`: the client's
    /// GOAWAY names the last client stream below them, so that a client
    /// retries exactly those elsewhere, as it would against the origin
    /// itself, and they are refused (REFUSED_STREAM) for clients that read
    /// no last stream. The GOAWAY goes first: a client that reads a refusal
    /// first retries the request at once, on a connection it knows to be
    /// open, and this one is, to it, until it has read the GOAWAY.
    private func passOn(last: HTTP2StreamID, code: HTTP2ErrorCode) {
        let refused = byUpstream.entries.filter { $0.stream > last }
        // Client streams open in the same order as their upstream streams.
        let firstRefused = refused.map(\.value.clientStream).min()
        let clientLast = firstRefused.map { HTTP2StreamID(max(0, $0.rawValue - 2)) }
        try? layer.downstream.goAway(code: code, lastStream: clientLast)
        for (stream, exchange) in refused {
            byUpstream[stream] = nil
            if exchange.error == nil { exchange.error = "the upstream did not process the request (GOAWAY); refused" }
            try? layer.downstream.reset(exchange.clientStream, code: .refusedStream)
        }
    }
}
