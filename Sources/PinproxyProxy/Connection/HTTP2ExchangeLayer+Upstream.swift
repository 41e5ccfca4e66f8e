import Foundation
import PinproxyHTTP2

/// The upstream side of the HTTP/2 layer: the upstream connection and its
/// session, and what its responses, resets, GOAWAY and end do to the
/// client's streams.
extension HTTP2ExchangeLayer {
    /// Opens an upstream connection, offering `h2` to a TLS one (the one
    /// opened at the ClientHello went away before the client's handshake
    /// completed). Whatever it chooses, the streams go there: relayed or translated.
    func openUpstream() {
        do {
            upstream = try host.openUpstream(target, alpn: target.tls ? Self.upstreamALPN : nil)
        } catch {
            upstreamFailed(error.reason, status: error.status)
        }
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard !closed else { return }
        if let pool, let leg = pool.leg(for: up) {
            pool.upstream(leg, event)
            return pump()
        }
        guard up === upstream else { return }
        switch event {
        case .ready:
            upstreamReady(up)
            pump()
        case .failed(let failure):
            upstream = nil
            if let own = failure.selfAddressed { record.recordSelfAddressed(own, host: target.host, port: target.port) }
            upstreamFailed(failure.reason, status: failure.status)
        case .data(let bytes):
            guard let session = upstreamSession else { return }
            bytes.withUnsafeBytes { session.receive($0) }
            pump()
        case .drained:
            pump()
        case .ended(let end):
            upstream = nil
            up.close()
            upstreamFailed(up.endFailure(end,
                                                 when: byUpstream.isEmpty ? "between requests" : "before the response was complete").reason)
        }
    }

    /// A connection ready for streams: relayed when it chose `h2`, else
    /// translated to HTTP/1.1 on a pool of connections it is the first of.
    func upstreamReady(_ up: Upstream) {
        guard up.speaksHTTP2 else {
            upstream = nil
            upstreamEarlyBytes = []
            if services.logger.logLevel <= .debug {
                services.logger.debug("\(record.peer): HTTP/2 translated to HTTP/1.1 for \(target.host.uriHost):\(target.port) (ALPN \(up.tlsDetails?.alpn ?? "none"))")
            }
            pool = HTTP1UpstreamPool(layer: self, first: up)
            return replayHeld()
        }
        do {
            upstreamSession = try HTTP2Session(role: .client)
        } catch {
            return upstreamFailed("cannot start an HTTP/2 session: \(error)")
        }
        up.whenIdle { [weak self] in self?.upstreamSession?.releaseIdleMemory() }
        up.start()
        if !upstreamEarlyBytes.isEmpty {
            upstreamSession?.receive(upstreamEarlyBytes)
            upstreamEarlyBytes = []
        }
        replayHeld()
    }

    /// No stream was open for the upstream hold: an idle client keeps no
    /// upstream. A relayed upstream's session says GOAWAY and its connection
    /// closes (an HTTP/2 connection's session is this layer's: it is not
    /// pooled); translated connections go to the idle pool. The next stream
    /// opens (or takes) one again; the client's session, its HPACK tables
    /// included, is untouched.
    func releaseIdleUpstream() {
        guard byClient.isEmpty, held.isEmpty, failure == nil else { return }
        if let pool { return pool.releaseIdleConnections() }
        guard let session = upstreamSession, let up = upstream, byUpstream.isEmpty else { return }
        try? session.goAway(code: .noError)
        while session.wantsWrite {
            let bytes = session.takeOutput(limit: Self.outputSlice)
            if bytes.isEmpty { break }
            up.send(bytes)
        }
        upstreamSession = nil
        upstream = nil
        up.closeAfterSending()
    }

    /// Client events held while the upstream was not ready.
    private func replayHeld() {
        let waiting = held
        held = []
        for event in waiting where !closed { clientEvent(event) }
    }

    /// The upstream failed or went away: streams without a response get
    /// `status`, the others are reset, and the client is told to go
    /// elsewhere for new ones (GOAWAY).
    func upstreamFailed(_ reason: String, status: Int = 502) {
        guard !closed else { return }
        failure = (status, reason)
        upstreamSession = nil
        upstream?.close()
        upstream = nil
        // A stream the upstream already finished is not affected: its
        // response may still be on its way to a slower client.
        let unfinished = byClient.values.filter { $0.upstreamStream.map { byUpstream[$0] != nil } ?? true }
        byUpstream = [:]
        let waiting = held
        held = []
        for event in waiting where !closed { clientEvent(event) }
        for exchange in unfinished where !exchange.answeredLocally {
            if exchange.response == nil {
                answer(exchange, status: status, reason: reason)
            } else {
                if exchange.error == nil { exchange.error = reason }
                try? downstream.reset(exchange.clientStream, code: .internalError)
            }
        }
        if services.logger.logLevel <= .info { services.logger.info("\(record.peer): \(reason)") }
        try? downstream.goAway(code: .noError)
        pump()
    }

    /// The upstream will not process its streams above `last`: their client
    /// streams are refused (REFUSED_STREAM, before the GOAWAY so that every
    /// client reads them), and the client's GOAWAY names the last client
    /// stream below them, so that a client retries exactly those elsewhere,
    /// as it would against the origin itself.
    func upstreamWentAway(last: HTTP2StreamID, code: HTTP2ErrorCode) {
        let refused = byUpstream.filter { $0.key > last }
        for (stream, exchange) in refused {
            byUpstream[stream] = nil
            if exchange.error == nil { exchange.error = "the upstream did not process the request (GOAWAY); refused" }
            try? downstream.reset(exchange.clientStream, code: .refusedStream)
        }
        // Client streams open in the same order as their upstream streams.
        let firstRefused = refused.values.map(\.clientStream).min()
        let clientLast = firstRefused.map { HTTP2StreamID(max(0, $0.rawValue - 2)) }
        try? downstream.goAway(code: code, lastStream: clientLast)
    }

    /// Handles the upstream session's events; `pump` calls it.
    func upstreamEvent(_ event: HTTP2Event) {
        switch event {
        case .response(let stream, let head, let endStream):
            guard let exchange = byUpstream[stream] else { return }
            if exchange.firstResponseByte == nil { exchange.firstResponseByte = Date() }
            if head.isInformational {
                extendResponseTimer(exchange)
            } else {
                exchange.responseTimer?.cancel()
                exchange.response = HTTP2Exchange.flowResponse(head)
            }
            do { try downstream.sendResponse(head, on: exchange.clientStream, endStream: endStream) } catch { resetBoth(exchange, error) }
        case .data(let stream, let bytes, let endStream):
            guard let exchange = byUpstream[stream] else { return upstreamSession?.consume(bytes.count, on: stream) ?? () }
            exchange.responseBody.append(bytes)
            do { try downstream.sendData(bytes, on: exchange.clientStream, endStream: endStream) } catch { resetBoth(exchange, error) }
        case .trailers(let stream, let trailers):
            guard let exchange = byUpstream[stream] else { return }
            do { try downstream.sendTrailers(trailers, on: exchange.clientStream) } catch { resetBoth(exchange, error) }
        case .dataWritten(let stream, let count):
            if let exchange = byUpstream[stream] {
                downstream.consume(count, on: exchange.clientStream)
                extendResponseTimer(exchange)
            }
        case .reset(let stream, let code):
            guard let exchange = byUpstream[stream] else { return }
            if exchange.error == nil { exchange.error = "the upstream reset the stream (\(code))" }
            try? downstream.reset(exchange.clientStream, code: code)
        case .streamClosed(let stream, let code):
            guard let exchange = byUpstream.removeValue(forKey: stream) else { return }
            // A request GOAWAY left unprocessed is refused: the client may retry it.
            if code != .noError, byClient[exchange.clientStream] != nil {
                if exchange.error == nil { exchange.error = "the upstream stream ended with \(code)" }
                try? downstream.reset(exchange.clientStream, code: code)
            }
        case .goAway(let last, let code, _):
            services.logger.info("\(record.peer): the upstream sent GOAWAY (\(code)); the client is told the same")
            upstreamWentAway(last: last, code: code)
        case .connectionError(let error):
            services.logger.notice("\(record.peer): the upstream broke HTTP/2: \(error)")
            upstreamFailed("the upstream broke HTTP/2: \(error)")
        case .request:
            break
        }
    }
}
