import Foundation
import PinproxyHTTP1

/// The leg's side of the HTTP/1 layer: finding (or opening) the leg for a
/// request's target, relaying the response events it reports, and what a
/// leg that fails does to the exchange in progress.
extension HTTP1ExchangeLayer: UpstreamLegOwner {
    /// The leg for `target`: the current one when it can carry the request, else a new one.
    func legFor(_ target: UpstreamTarget) -> (any UpstreamLeg)? {
        if let current = leg, current.canCarry(target) { return current }
        leg?.close()
        leg = nil
        do {
            let opened = try host.openLeg(target, for: self, via: isForward)
            leg = opened
            return opened
        } catch {
            // Starting failed at once; the exchange fails as if it had failed later.
            let owner = self.owner
            client.queue.later {
                guard let self = owner.object, !self.closed, self.exchange?.target == target else { return }
                self.upstreamFailed(error)
            }
            return nil
        }
    }

    /// The client sent nothing for the upstream hold: the upstream goes to the
    /// idle pool (the next request, through ``legFor(_:)``, may take it back)
    /// or closes, so an idle client holds only its own TLS connection.
    func releaseIdleLeg() {
        guard let idle = leg else { return }
        leg = nil
        if let up = idle.takeConnectionBetweenExchanges() { host.releaseUpstream(up) } else { idle.close() }
    }

    var clientIsCongested: Bool { client.outputIsCongested }

    func legReady(_ ready: any UpstreamLeg) {
        guard ready === leg, !closed else { return }
        if let flowTLS = ready.connection?.tlsDetails, let current = exchange { current.upstreamTLS = flowTLS }
        replayBacklog()
    }

    func leg(_ from: any UpstreamLeg, received events: inout [HTTP1Event]) {
        guard from === leg, !closed else { return }
        client.cork()
        defer { client.uncork() }
        deadlines.exchangeProgressed()
        handleUpstream(&events)
    }

    func legFailed(_ failed: any UpstreamLeg, _ failure: UpstreamFailure) {
        guard failed === leg, !closed else { return }
        // A response ended by the close still names the connection's TLS.
        if let current = exchange, current.upstreamTLS == nil { current.upstreamTLS = failed.connection?.tlsDetails }
        leg = nil
        upstreamFailed(failure)
    }

    func legDrained(_ drained: any UpstreamLeg) {
        if drained === leg { updateReading() }
    }

    func leg(_ old: any UpstreamLeg, replacedBy next: any UpstreamLeg) {
        guard old === leg else { return next.close() }
        leg = next
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard !closed else { return }
        leg?.upstream(up, event)
    }

    /// Handles the upstream's events, moving each out of `events` (a head or
    /// a body slice is then neither copied nor released twice).
    func handleUpstream(_ events: inout [HTTP1Event]) {
        for index in events.indices {
            guard !closed, let current = exchange else { return }
            switch events.take(at: index) {
            case .responseHead(let head):
                if current.firstResponseByte == nil { current.firstResponseByte = Date() }
                if head.isInformational && head.status != 101 {
                    if let interim = current.interim(head) { client.send(interim) }
                    continue
                }
                sendResponseHead(head, of: current, upstreamKeepAlive: head.keepAlive)
            case .body(let bytes):
                if current.inInterim { continue }
                current.responseBody.append(bytes)
                if current.responseFraming == .chunked { client.send(HTTP1ChunkedEncoder.chunk(bytes)) } else { client.send(bytes) }
                if client.outputIsCongested { leg?.readResponses(false) }
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
        current.responseHeadSent(head, framing: forClient.framing, keepsClient: forClient.keepAlive, upstreamKeepAlive: upstreamKeepAlive)
        client.send(forClient.bytes)
    }

    /// The upstream failed during an exchange: the failure's status (502)
    /// if nothing was sent yet, else the client is cut off.
    func upstreamFailed(_ failure: UpstreamFailure) {
        guard !closed else { return }
        leg?.close()
        leg = nil
        if let current = exchange {
            if let own = failure.selfAddressed { record.recordSelfAddressed(own, host: current.target.host, port: current.target.port) }
            let (reason, status) = (failure.reason, failure.status)
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
