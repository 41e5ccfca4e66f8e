import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// An upstream connection that speaks only HTTP/2, carrying the HTTP/1.1
/// requests of one client connection: one stream per request, one at a
/// time, on one client session for as long as the connection lasts.
final class HTTP2UpstreamLeg {
    let upstream: Upstream
    let session: HTTP2Session
    /// The stream of the exchange in progress.
    var stream: HTTP2StreamID?
    /// Response body bytes handed to the client socket while its output was
    /// congested: given back to the upstream's windows once it drains.
    var unconsumed = 0
    /// The upstream sent GOAWAY: no new stream goes on this connection.
    var wentAway = false
    /// Whether ``pump()`` is running (an event it handles may send a request).
    var pumping = false

    init(upstream: Upstream) throws(HTTP2Error) {
        self.upstream = upstream
        let session = try HTTP2Session(role: .client)
        self.session = session
        upstream.transport.onIdle = { [weak session] in session?.releaseIdleMemory() }
    }

    /// Request body bytes queued in the session beyond this stop the client
    /// being read until they leave.
    static let requestBodyBound = 256 * 1024

    /// Whether the request body waits on the upstream's windows or socket.
    var requestBodyBacklogged: Bool {
        guard let stream else { return false }
        return session.bufferedBytes(on: stream) > Self.requestBodyBound || upstream.transport.outputIsCongested
    }
}

/// The HTTP/2 upstream leg of the HTTP/1 layer: an HTTP/1.1 request becomes
/// a stream, and the stream's response an HTTP/1.1 response (see
/// docs/http2.md, "HTTP/1.1 clients and HTTP/2-only upstreams").
///
/// Flow control follows the client: a DATA frame's bytes are given back to
/// the upstream's windows only once the client socket took them, so a slow
/// client stalls the stream and the proxy holds at most a window of body.
extension HTTP1ExchangeLayer {
    /// The leg on the current upstream, if it speaks HTTP/2.
    var activeHTTP2Leg: HTTP2UpstreamLeg? {
        guard let leg = http2Leg, leg.upstream === upstream else { return nil }
        return leg
    }

    /// Starts the HTTP/2 leg on `up`, which picked `h2`; `early`: what it sent
    /// before this layer was current (its SETTINGS).
    func startHTTP2Leg(_ up: Upstream, early: [UInt8]) {
        let leg: HTTP2UpstreamLeg
        do { leg = try HTTP2UpstreamLeg(upstream: up) } catch {
            return upstreamFailed("cannot start an HTTP/2 session: \(error)")
        }
        http2Leg = leg
        services.http2OnlyUpstreams.remember(up.target)
        services.logger.info("\(record.peer): the upstream \(up.target.host.uriHost):\(up.target.port) speaks only HTTP/2; HTTP/1.1 requests are translated")
        if !early.isEmpty { leg.session.receive(early) }
        pumpHTTP2()
    }

    /// Sends the current exchange's request as a new stream.
    func sendRequestOverHTTP2(_ leg: HTTP2UpstreamLeg) {
        guard let current = exchange else { return }
        let head = current.request
        if head.requestsUpgrade {
            let wanted = head.upgradeProtocols.joined(separator: ", ")
            return respondWithError(status: 501, reason: "the upstream \(current.target.host.uriHost):\(current.target.port) speaks only HTTP/2, which has no Upgrade: the switch to \(wanted) cannot be relayed", request: head)
        }
        var forwarded = HTTP2RequestHead(http1: head, scheme: current.target.scheme)
        // The client named the proxy; the origin expects its own name.
        if services.rewritesHost || forwarded.authority == nil { forwarded.authority = current.names.authority }
        if isForward { forwarded.headers.add(name: "via", value: "\(head.version.major).\(head.version.minor) \(HTTP1Forwarding.defaultVia)") }
        let endStream: Bool
        switch head.framing {
        case .none, .contentLength(0): endStream = true
        default: endStream = false
        }
        do {
            leg.stream = try leg.session.sendRequest(forwarded, endStream: endStream)
        } catch {
            return upstreamFailed("the request could not be sent to the HTTP/2 upstream: \(error)")
        }
        if endStream { current.requestSent = Date() }
        pumpHTTP2()
    }

    func sendRequestBodyOverHTTP2(_ bytes: ArraySlice<UInt8>, _ leg: HTTP2UpstreamLeg) {
        guard let stream = leg.stream else { return }
        do { try leg.session.sendData(Array(bytes), on: stream) } catch {
            return upstreamFailed("the request body could not be sent to the HTTP/2 upstream: \(error)")
        }
        pumpHTTP2()
    }

    func endRequestOverHTTP2(_ trailers: HTTPHeaders, _ leg: HTTP2UpstreamLeg) {
        guard let stream = leg.stream, let current = exchange else { return }
        switch current.request.framing {
        case .none, .contentLength(0): return  // the head ended the stream
        default: break
        }
        let translated = HTTP2Translation.http2Trailers(trailers)
        do {
            if translated.isEmpty {
                try leg.session.sendData([], on: stream, endStream: true)
            } else {
                try leg.session.sendTrailers(translated, on: stream)
            }
        } catch {
            return upstreamFailed("the end of the request could not be sent to the HTTP/2 upstream: \(error)")
        }
        pumpHTTP2()
    }

    /// The client socket drained: the body bytes it took go back to the upstream's windows.
    func clientDrainedOverHTTP2(_ leg: HTTP2UpstreamLeg) {
        if leg.unconsumed > 0, let stream = leg.stream {
            leg.session.consume(leg.unconsumed, on: stream)
        }
        leg.unconsumed = 0
        pumpHTTP2()
    }

    /// Bytes from the upstream.
    func receiveOverHTTP2(_ bytes: ArraySlice<UInt8>, _ leg: HTTP2UpstreamLeg) {
        bytes.withUnsafeBytes { leg.session.receive($0) }
        pumpHTTP2()
    }

    /// Takes the session's events and writes its output while the upstream
    /// socket keeps up, until neither has more.
    func pumpHTTP2() {
        guard let leg = activeHTTP2Leg, !leg.pumping else { return }
        leg.pumping = true
        defer { leg.pumping = false }
        var progressed = true
        while progressed && !closed && activeHTTP2Leg === leg {
            progressed = false
            let events = leg.session.takeEvents()
            if !events.isEmpty { progressed = true }
            for event in events where !closed && activeHTTP2Leg === leg { http2Event(event, leg) }
            guard !closed, activeHTTP2Leg === leg else { return }
            while leg.session.wantsWrite && !leg.upstream.transport.outputIsCongested {
                let bytes = leg.session.takeOutput(limit: HTTP2ExchangeLayer.outputSlice)
                if bytes.isEmpty { break }
                leg.upstream.transport.send(bytes)
                progressed = true
            }
        }
        guard !closed, activeHTTP2Leg === leg else { return }
        if exchange == nil && leg.session.isFinished {
            // GOAWAY went both ways and nothing is open: the next request opens another connection.
            closeHTTP2Leg()
        }
        updateReading()
    }

    private func http2Event(_ event: HTTP2Event, _ leg: HTTP2UpstreamLeg) {
        switch event {
        case .response(let stream, let head, let endStream):
            guard stream == leg.stream, let current = exchange else { return }
            if current.firstResponseByte == nil { current.firstResponseByte = Date() }
            armExchangeTimer()
            if head.isInformational {
                if head.status != 100 || current.request.expectsContinue {
                    let interim = HTTP1ResponseHead(status: head.status, headers: HTTP1Forwarding.removingHopByHop(head.headers))
                    client.send(interim.serialized())
                }
                return
            }
            var announced = head
            // Trailers announced (`trailer`) can reach an HTTP/1.1 client only in a chunked body.
            if !head.headers["trailer"].isEmpty && current.request.version == .http1_1 && !endStream {
                announced.headers.remove(name: "content-length")
            }
            let translated = announced.http1Head(requestMethod: current.request.method, endStream: endStream)
            sendResponseHead(translated, of: current, upstreamKeepAlive: true)
            if endStream { responseEndedOverHTTP2(trailers: HTTPHeaders(), leg) }
        case .data(let stream, let bytes, let endStream):
            guard stream == leg.stream, let current = exchange, current.responseFraming != nil else {
                return leg.session.consume(bytes.count, on: stream)
            }
            armExchangeTimer()
            current.responseBody.append(bytes[...])
            if !bytes.isEmpty {
                if current.responseFraming == .chunked { client.send(HTTP1ChunkedEncoder.chunk(bytes)) } else { client.send(bytes[...]) }
            }
            // Given back only once the client socket took them.
            if client.outputIsCongested { leg.unconsumed += bytes.count } else { leg.session.consume(bytes.count, on: stream) }
            if endStream { responseEndedOverHTTP2(trailers: HTTPHeaders(), leg) }
        case .trailers(let stream, let trailers):
            guard stream == leg.stream, exchange?.responseFraming != nil else { return }
            responseEndedOverHTTP2(trailers: trailers, leg)
        case .dataWritten:
            updateReading()
        case .reset(let stream, let code):
            guard stream == leg.stream else { return }
            upstreamFailed("the HTTP/2 upstream reset the stream (\(code))")
        case .streamClosed(let stream, let code):
            guard stream == leg.stream, code != .noError else { return }
            upstreamFailed(code == .refusedStream ? "the HTTP/2 upstream refused the stream (GOAWAY)" : "the HTTP/2 upstream stream ended with \(code)")
        case .goAway(_, let code, _):
            leg.wentAway = true
            services.logger.info("\(record.peer): the HTTP/2 upstream sent GOAWAY (\(code)); the next request opens another connection")
        case .connectionError(let error):
            upstreamFailed("the upstream broke HTTP/2: \(error)")
        case .request:
            break
        }
    }

    /// The response is complete: the chunked body gets its end (and the
    /// trailers), and the exchange finishes as an HTTP/1 one does.
    private func responseEndedOverHTTP2(trailers: HTTPHeaders, _ leg: HTTP2UpstreamLeg) {
        guard let current = exchange else { return }
        if current.responseFraming == .chunked {
            client.send(HTTP1ChunkedEncoder.end(trailers: HTTP2Translation.http1Trailers(trailers)))
        }
        if let stream = leg.stream, leg.unconsumed > 0 { leg.session.consume(leg.unconsumed, on: stream) }
        leg.unconsumed = 0
        if !current.requestEnded {
            // The response ended before the request body: the rest goes nowhere.
            if let stream = leg.stream { try? leg.session.reset(stream, code: .noError) }
            draining = true
            clientMayStillSend = true
        }
        leg.stream = nil
        responseComplete = true
        finishExchange()
    }

    /// The upstream connection is no longer used for new requests.
    func closeHTTP2Leg() {
        http2Leg = nil
        upstream?.transport.close()
        upstream = nil
    }
}
