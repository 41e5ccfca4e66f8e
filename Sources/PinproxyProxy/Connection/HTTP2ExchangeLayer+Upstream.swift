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
        if let leg, leg.handles(up) {
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
        loop.later { [weak self] in
            guard let self else { return }
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

    /// Makes `leg` carry the streams, the held ones first.
    func adopt(_ leg: any HTTP2StreamLeg) {
        self.leg = leg
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
        // response may still be on its way to a slower client.
        let unfinished = byClient.values.filter { leg?.isAwaitingResponse($0) ?? true }
        leg?.close()
        leg = nil
        opening?.close()
        opening = nil
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
}
