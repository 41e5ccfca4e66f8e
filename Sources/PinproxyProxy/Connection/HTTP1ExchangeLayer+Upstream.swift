import Foundation
import PinproxyHTTP1

/// The upstream side of the HTTP/1 layer: opening (or reusing) the
/// connection for a request's target, relaying the response, and what an
/// upstream that fails or ends does to the exchange in progress.
extension HTTP1ExchangeLayer {
    /// `head` as it goes to an HTTP/1.1 upstream.
    func forwardedRequest(_ head: HTTP1RequestHead, names: TargetNames) -> HTTP1ForwardedHead {
        // The client named the proxy (its address or a test host name); the
        // origin expects its own name, as it would from a direct client. An
        // HTTP/1.0 request may carry no Host at all: it goes upstream as
        // HTTP/1.1, which needs one, so it names the server the proxy connects to.
        let hostField: String? = services.rewritesHost || !head.headers.contains(name: "Host") ? names.authority : nil
        return HTTP1Forwarding.serializedRequestForUpstream(head, via: isForward ? HTTP1Forwarding.defaultVia : nil, host: hostField)
    }

    func upstreamFor(_ target: UpstreamTarget) -> Upstream? {
        if let refusal = upstreamRefusal, refusal.target == target {
            upstreamFailed(refusal.reason)
            return nil
        }
        if let up = upstream, up.target == target, !up.transport.isClosed, up.transport.endReason == nil,
           !(activeHTTP2Leg?.wentAway ?? false) {
            return up
        }
        upstream?.transport.close()
        upstream = nil
        http2Leg = nil
        upstreamParser = HTTP1Parser(mode: .response)
        do {
            let up = try host.openUpstream(target)
            upstream = up
            return up
        } catch {
            // Starting failed at once; the exchange fails as if it had failed later.
            client.queue.later { [weak self] in
                guard let self, !self.closed, self.exchange?.target == target else { return }
                self.upstreamFailed("cannot connect to \(target.host.uriHost):\(target.port)")
            }
            return nil
        }
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard up === upstream, !closed else { return }
        switch event {
        case .data(let bytes):
            if let leg = activeHTTP2Leg { receiveOverHTTP2(bytes, leg) } else { upstreamBytes(bytes, up) }
        case .drained:
            if activeHTTP2Leg != nil { pumpHTTP2() } else { updateReading() }
        case .ready:
            adopt(up)
        case .failed(let failure):
            upstream = nil
            if up.offeredHTTP2 { services.http2OnlyUpstreams.forget(up.target) }
            if retriedOfferingHTTP2(after: failure, up) { return }
            if let end = failure.endedWhileConnecting {
                upstreamFailed(UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls).reason)
            } else {
                upstreamFailed(failure)
            }
        case .ended(let end):
            upstreamEnded(end, up)
        }
    }

    /// A connection ready for requests: read it.
    func adopt(_ up: Upstream) {
        up.transport.start()
        if let flowTLS = up.tlsDetails, let current = exchange {
            current.upstreamTLS = flowTLS
        }
        adoptConsideringHTTP2(up)
    }

    private func upstreamBytes(_ bytes: ArraySlice<UInt8>, _ up: Upstream) {
        if exchange?.firstResponseByte == nil, retriedOfferingHTTP2(afterAnswer: bytes, from: up) { return }
        client.cork()
        defer { client.uncork() }
        armExchangeTimer()
        var events = takeEventBuffer()
        defer { returnEventBuffer(&events) }
        do { try upstreamParser.feed(bytes, into: &events) } catch {
            upstreamFailed("the upstream sent an invalid response: \(error.reason)")
            return
        }
        handleUpstream(events)
    }

    private func handleUpstream(_ events: [HTTP1Event]) {
        for event in events {
            guard !closed, let current = exchange else { return }
            switch event {
            case .responseHead(let head):
                if current.firstResponseByte == nil { current.firstResponseByte = Date() }
                if head.isInformational && head.status != 101 {
                    current.inInterim = true
                    if head.status != 100 || current.request.expectsContinue {
                        let interim = HTTP1ResponseHead(status: head.status, reason: head.reason,
                                                        headers: HTTP1Forwarding.removingHopByHop(head.headers))
                        client.send(interim.serialized())
                    }
                    continue
                }
                sendResponseHead(head, of: current, upstreamKeepAlive: head.keepAlive)
            case .body(let bytes):
                if current.inInterim { continue }
                current.responseBody.append(bytes)
                if current.responseFraming == .chunked { client.send(HTTP1ChunkedEncoder.chunk(bytes)) } else { client.send(bytes) }
                if client.outputIsCongested { upstream?.transport.pauseReading() }
            case .end(let trailers):
                if current.inInterim {
                    current.inInterim = false
                    continue
                }
                if current.responseFraming == .chunked { client.send(HTTP1ChunkedEncoder.end(trailers: HTTP1Forwarding.forwardableTrailers(trailers))) }
                if current.upstreamStatus == 101 { continue }  // the .upgrade event follows
                responseComplete = true
                if !current.requestEnded {
                    // The response ended before the request body: the rest of
                    // the body goes nowhere, and the client is closed gently.
                    draining = true
                    clientMayStillSend = true
                }
                finishExchange()
            case .upgrade(let tail):
                switchProtocols(tail: tail)
                return
            case .raw, .requestHead:
                break
            }
        }
    }

    /// Sends a final response head to the client and notes it on `current`. A
    /// final answer before the request body is complete (an early 401 or 413)
    /// leaves a connection that cannot carry another request, so the client is
    /// told at once that it closes after this one.
    func sendResponseHead(_ head: HTTP1ResponseHead, of current: HTTP1Exchange, upstreamKeepAlive: Bool) {
        let forClient = HTTP1Forwarding.serializedResponseForClient(
            head, to: current.request, closeConnection: draining || !current.requestEnded,
            via: isForward ? HTTP1Forwarding.defaultVia : nil)
        current.responseFraming = forClient.framing
        current.responseKeepsClient = forClient.keepAlive
        current.upstreamStatus = head.status
        current.upstreamKeepAlive = upstreamKeepAlive
        current.response = FlowResponse(status: head.status, reason: head.reason, httpVersion: head.version.description,
                                        headers: head.headers.fields)
        client.send(forClient.bytes)
    }

    private func upstreamEnded(_ end: TransportEnd, _ up: Upstream) {
        if let current = exchange, current.upstreamTLS == nil { current.upstreamTLS = up.tlsDetails }  // a response ended by the close
        let wasHTTP2 = activeHTTP2Leg != nil
        upstream = nil
        http2Leg = nil
        up.transport.close()
        if wasHTTP2 {
            if exchange != nil {
                upstreamFailed(UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls, when: "before the response was complete").reason)
            }
            return
        }
        if retriedOfferingHTTP2(afterEndOf: up) { return }
        guard exchange != nil else {
            // An idle keep-alive upstream went away; a refusal is remembered.
            let failure = UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls)
            if failure.isRefusal { upstreamRefusal = (up.target, failure.reason) }
            return
        }
        do {
            let respondedAtAll = exchange?.firstResponseByte != nil || !upstreamParser.isIdle
            let events = try upstreamParser.finish()
            handleUpstream(events)
            if exchange != nil {
                upstreamFailed(UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls,
                                                     when: respondedAtAll ? "before the response was complete" : "before responding").reason)
            }
        } catch {
            upstreamFailed("the upstream closed the connection early: \(error.reason)")
        }
    }

    func upstreamFailed(_ failure: UpstreamFailure) {
        if let own = failure.selfAddressed, let current = exchange {
            record.recordSelfAddressed(own, host: current.target.host, port: current.target.port)
        }
        upstreamFailed(failure.reason, status: failure.status)
    }

    /// The upstream failed during an exchange: `status` (502) if nothing was sent yet, else cut the client off.
    func upstreamFailed(_ reason: String, status: Int = 502) {
        guard !closed else { return }
        upstream?.transport.close()
        upstream = nil
        http2Leg = nil
        heldRequest = nil
        if let current = exchange {
            current.error = reason
            if current.responseFraming == nil {
                respondWithError(status: status, reason: reason, request: current.request)
                return
            }
            recordFlow()
            services.logger.notice("\(record.peer): \(reason); closing the client connection mid-response")
            client.close()
            finish(nil)
        }
    }
}
