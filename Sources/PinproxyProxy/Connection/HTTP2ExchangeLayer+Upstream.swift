import Foundation
import PinproxyHTTP2

/// The upstream side of the HTTP/2 layer: opening the connection, choosing
/// the leg once it is ready (relayed when it chose `h2`, translated when
/// not), and what a lost upstream does to the client's streams.
extension HTTP2ExchangeLayer {
    /// Opens an upstream connection, offering `h2` to a TLS one (the one
    /// opened at the ClientHello went away before the client's handshake
    /// completed). Whatever it chooses, the streams go there: relayed or translated.
    func openUpstream() {
        do {
            opening = try host.openUpstream(target, alpn: target.tls ? services.upstreamOfferForHTTP2Clients : nil)
        } catch {
            upstreamFailed(error.reason, status: error.status)
        }
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard !closed else { return }
        let carrier: (any HTTP2StreamLeg)?
        if let leg, leg.handles(up) { carrier = leg } else { carrier = retiringRelay(handling: up) }
        if let leg = carrier {
            if case .data = event {
                leg.upstream(up, event)
                return pumpAfterBatch()
            }
            // What arrived before this event is relayed first.
            if pumpScheduled { pump() }
            leg.upstream(up, event)
            return pump()
        }
        guard up === opening else { return }
        switch event {
        case .ready:
            upstreamReady(up)
            pump()
        case .failed(let failure):
            opening = nil
            if let own = failure.selfAddressed { record.recordSelfAddressed(own, host: target.host, port: target.port) }
            upstreamFailed(failure.reason, status: failure.status)
        case .data, .drained:
            break
        case .ended(let end):
            opening = nil
            up.close()
            upstreamFailed(up.endFailure(end, when: "between requests").reason)
        }
    }

    /// Pumps once the event loop has served the batch of socket events it
    /// is in (at once outside a loop): the upstream's TLS records arrive one
    /// by one (nginx writes a record per response), and pumping after each
    /// took nghttp2's output, encrypted a record and wrote it for every
    /// response; after the batch, every response the batch brought leaves in
    /// one write of a few large records (docs/proxy.md, "HTTP/2").
    private func pumpAfterBatch() {
        guard !pumpScheduled else { return }
        guard let loop = client.queue.getSpecific(key: EventLoop.key)?.loop else { return pump() }
        pumpScheduled = true
        loop.later { [self] in  // after this batch: a strong capture for that long
            self.pumpScheduled = false
            if !self.closed { self.pump() }
        }
    }

    /// A connection ready for streams: relayed when it chose `h2`, else
    /// translated to HTTP/1.1 on a pool of connections it is the first of.
    func upstreamReady(_ up: Upstream) {
        opening = nil
        let early = upstreamEarlyBytes
        upstreamEarlyBytes = []
        guard up.speaksHTTP2 else {
            if services.logger.logLevel <= .debug {
                services.logger.debug("\(record.peer): HTTP/2 translated to HTTP/1.1 for \(target.host.uriHost):\(target.port) (ALPN \(up.tlsDetails?.alpn ?? "none"))")
            }
            return adopt(HTTP1UpstreamPool(layer: self, first: up, early: early))
        }
        do {
            adopt(try HTTP2RelayLeg(layer: self, upstream: up, early: early))
        } catch {
            up.close()
            upstreamFailed("cannot start an HTTP/2 session: \(error)")
        }
    }

    /// Makes `leg` carry the streams: those an upstream that went away left
    /// unprocessed first, then the held ones.
    func adopt(_ leg: any HTTP2StreamLeg) {
        self.leg = leg
        openReopening()
        let waiting = held
        held = []
        for event in waiting where !closed { clientEvent(event) }
    }

    /// No stream was open for the upstream hold: an idle client keeps no
    /// upstream (``HTTP2StreamLeg/releaseIdle()``). The next stream opens (or
    /// takes) one again; the client's session, its HPACK tables included, is
    /// untouched.
    func releaseIdleUpstream() {
        guard byClient.isEmpty, held.isEmpty, failure == nil, let leg else { return }
        if leg.releaseIdle() { self.leg = nil }
    }

    /// The upstream failed or went away: streams without a response get
    /// `status`, the others are reset, and the client is told to go
    /// elsewhere for new ones (GOAWAY).
    func upstreamFailed(_ reason: String, status: Int = 502) {
        guard !closed else { return }
        failure = (status, reason)
        // A stream the upstream already finished is not affected: its
        // response may still be on its way to a slower client. Streams on a
        // relay that went away go on there.
        let unfinished = byClient.values.filter { $0.legGeneration == legGeneration && (leg?.isAwaitingResponse($0) ?? true) }
        reopening = []
        leg?.close()
        leg = nil
        opening?.close()
        opening = nil
        let waiting = held
        held = []
        for event in waiting where !closed { clientEvent(event) }
        failStreams(unfinished, status: status, reason: reason)
        try? downstream.goAway(code: .noError)
        pump()
    }

    /// Streams the upstream will not answer: those without a response get
    /// `status` with `reason`, the others are reset.
    private func failStreams(_ unfinished: [HTTP2Exchange], status: Int, reason: String) {
        for exchange in unfinished where !exchange.answeredLocally {
            if exchange.response == nil {
                answer(exchange, status: status, reason: reason)
            } else {
                if exchange.error == nil { exchange.error = reason }
                try? downstream.reset(exchange.clientStream, code: .internalError)
            }
        }
        if services.logger.logLevel <= .info { services.logger.info("\(record.peer): \(reason)") }
    }
}

// MARK: - An upstream that went away (GOAWAY)

extension HTTP2ExchangeLayer {
    /// The leg that carries `exchange`: the current one, or a relay that went
    /// away and still finishes it; nil between legs.
    @inline(__always)
    func leg(of exchange: HTTP2Exchange) -> (any HTTP2StreamLeg)? {
        if exchange.legGeneration == legGeneration { return leg }
        return retiring.first { $0.generation == exchange.legGeneration }?.relay
    }

    func retiringRelay(handling up: Upstream) -> HTTP2RelayLeg? {
        retiring.isEmpty ? nil : retiring.first { $0.relay.handles(up) }?.relay
    }

    /// `relay`'s upstream said GOAWAY without an error, as a server does that
    /// closes connections after so many requests (nginx's `keepalive_requests`,
    /// 1,000 by default) or when it reloads: it finishes the streams it took,
    /// and the client's connection goes on. `relay` stops taking streams;
    /// `again` (streams the upstream did not process, no request body sent)
    /// and every newer stream go on another connection, opened now when
    /// streams wait for it. The client sees no GOAWAY, as behind HAProxy or
    /// nginx, which open another backend connection too.
    func relayWentAway(_ relay: HTTP2RelayLeg, reopening again: [HTTP2Exchange]) {
        if let current = leg, current === relay {
            // Its streams' flows name its connection once it is let go, the
            // streams whose responses are still on their way to the client too.
            for exchange in byClient.values where exchange.legGeneration == legGeneration && exchange.upstreamConnection == nil {
                exchange.upstreamConnection = relay.connection
            }
            retiring.append((legGeneration, relay))
            legGeneration &+= 1
            leg = nil
        }
        for exchange in again {
            exchange.legGeneration = legGeneration
            exchange.upstreamConnection = nil
        }
        if let failure {
            // The layer's upstream failed meanwhile: they get its answer, as new streams do.
            for exchange in again where !exchange.answeredLocally { answer(exchange, status: failure.status, reason: failure.reason) }
            return
        }
        reopening.append(contentsOf: again)
        reopening.sort { $0.clientStream < $1.clientStream }
        guard !reopening.isEmpty else { return }
        if leg != nil {
            openReopening()
        } else if opening == nil {
            openUpstream()
        }
    }

    /// Opens the streams waiting for another connection on the current leg,
    /// as they were first opened (their request ended with its head or not).
    func openReopening() {
        guard let leg, !reopening.isEmpty else { return }
        let again = reopening
        reopening = []
        for exchange in again where !closed && byClient[exchange.clientStream] === exchange && !exchange.answeredLocally {
            leg.open(exchange, endStream: exchange.requestEnded)
        }
    }

    /// The connection of a relay that went away failed or ended: its
    /// streams still waiting for a response are answered (or reset, a
    /// response begun); the layer's other streams go on.
    func retiredRelayFailed(_ relay: HTTP2RelayLeg, _ reason: String, status: Int = 502) {
        guard let index = retiring.firstIndex(where: { $0.relay === relay }) else { return }
        let generation = retiring.remove(at: index).generation
        let unfinished = byClient.values.filter { $0.legGeneration == generation && relay.isAwaitingResponse($0) }
        relay.close()
        failStreams(unfinished, status: status, reason: reason)
    }

    /// Pumps the relays that went away; one carrying no stream any more is
    /// let go (its connection closes: an upstream that said GOAWAY is not
    /// kept). Whether anything moved.
    func pumpRetiring() -> Bool {
        var moved = false
        var index = 0
        while index < retiring.count && !closed {
            let relay = retiring[index].relay
            if relay.pump() { moved = true }
            // Its connection failed while it was pumped: it is gone already.
            guard index < retiring.count, retiring[index].relay === relay else { continue }
            if relay.carriesNoStream {
                retiring.remove(at: index)
                if !relay.releaseIdle() { relay.close() }
            } else {
                index += 1
            }
        }
        return moved
    }

    func closeRetiring() {
        let relays = retiring
        retiring = []
        for entry in relays { entry.relay.close() }
    }
}
