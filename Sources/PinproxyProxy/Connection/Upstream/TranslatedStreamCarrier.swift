import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// A translated stream's request on its way to an HTTP/1.1 upstream: its
/// head in HTTP/1.1 form, and the body bytes that wait for a leg.
final class TranslatedRequest {
    let exchange: HTTP2Exchange
    /// The request line and fields as the leg gets them.
    let head: HTTP1RequestHead
    // Per-stream state on the connection's queue only: unchecked exclusivity,
    // as the layers' (docs/architecture.md, "Exclusivity checks").
    /// Body bytes received and not yet handed to a leg. They still count
    /// against the client's windows, which bounds them.
    @exclusivity(unchecked) var pending: [UInt8] = []
    /// The client ended the request (END_STREAM or trailers).
    @exclusivity(unchecked) var ended: Bool
    @exclusivity(unchecked) var trailers = HTTPHeaders()
    /// The carrier it is on, once one was free.
    @exclusivity(unchecked) var carrier: TranslatedStreamCarrier?

    init(exchange: HTTP2Exchange, head: HTTP1RequestHead, ended: Bool) {
        self.exchange = exchange
        self.head = head
        self.ended = ended
    }

    var stream: HTTP2StreamID { exchange.clientStream }
}

/// One upstream leg of a translated HTTP/2 connection, and the client
/// stream it carries: each stream becomes one exchange on the leg, which
/// waits for the next when both sides kept it alive.
///
/// The leg is the HTTP/1.1 layer's own (``HTTP1Leg``: the request
/// serialised and re-framed, the response parsed, a request sent again
/// when a reused connection closed before answering, an upstream that turns
/// out to speak only HTTP/2 handed to an ``HTTP2Leg``); the carrier turns
/// its response events into the client's HTTP/2 frames.
///
/// Flow control crosses it both ways. The client's DATA is given back to
/// its windows (`consume`) only once the bytes went to a leg that is not
/// backed up, else when it drains. The response is read only while the
/// client's stream has at most about one stream window queued
/// (``HTTP2Session/bufferedBytes(on:)``); the pool resumes it when the
/// client session reports bytes written. A carrier thus holds at most a
/// socket's congestion bound and a stream window, whatever the body's size.
final class TranslatedStreamCarrier: UpstreamLegOwner {
    // Read and written for every stream, on the connection's queue only:
    // unchecked exclusivity, as the layers' per-request state.
    @exclusivity(unchecked) private(set) var leg: (any UpstreamLeg)?
    private unowned let pool: HTTP1UpstreamPool
    @exclusivity(unchecked) private(set) var closed = false
    @exclusivity(unchecked) private(set) var request: TranslatedRequest?
    /// Request body bytes handed to the leg and not yet given back to the client.
    @exclusivity(unchecked) private var unconsumed = 0
    @exclusivity(unchecked) private var requestEndSent = false
    @exclusivity(unchecked) private var inInterim = false
    /// END_STREAM went to the client already: with the final head (HEAD, 204, 304, empty
    /// bodies), or with the body's last bytes when no trailers followed.
    @exclusivity(unchecked) private var sentEndStream = false
    @exclusivity(unchecked) private var keepAlive = true
    @exclusivity(unchecked) private(set) var readingPaused = false

    private init(pool: HTTP1UpstreamPool) {
        self.pool = pool
    }

    /// A carrier over a new leg to the pool's target.
    static func opened(for pool: HTTP1UpstreamPool) throws(UpstreamFailure) -> TranslatedStreamCarrier {
        let carrier = TranslatedStreamCarrier(pool: pool)
        carrier.leg = try pool.layer.host.openLeg(pool.target, for: carrier, via: false)
        return carrier
    }

    /// A carrier over `upstream`, ready already (the connection opened at
    /// the ClientHello, which chose HTTP/1.1); `early`: what it sent first.
    static func adopting(_ upstream: Upstream, early: [UInt8], for pool: HTTP1UpstreamPool) -> TranslatedStreamCarrier {
        let carrier = TranslatedStreamCarrier(pool: pool)
        let leg = pool.layer.host.adoptLeg(upstream, early: early, for: carrier, via: false)
        carrier.leg = leg
        leg.upstream(upstream, .ready)
        return carrier
    }

    /// Open, and no stream on it.
    var isIdle: Bool { !closed && request == nil && (leg?.canCarry(pool.target) ?? false) }

    /// Whether body bytes go to the leg now: not while it holds the request
    /// for a connection still being set up (they wait in the request).
    var takesBody: Bool { !closed && leg?.holdsRequest == false }

    /// Whether `upstream` is this carrier's connection.
    func handles(_ upstream: Upstream) -> Bool { leg?.connection === upstream }

    private var downstream: HTTP2Session { pool.downstream }

    /// Makes `next` this carrier's stream: its head goes to the leg at once.
    func attach(_ next: TranslatedRequest) {
        guard let leg, !closed else { return }
        request = next
        next.carrier = self
        next.exchange.upstreamConnection = leg.connection
        requestEndSent = false
        inInterim = false
        sentEndStream = false
        keepAlive = true
        leg.send(next.head, names: pool.layer.names)
        // When it runs out, the pool has this carrier fail the stream (``HTTP1UpstreamPool/responseTimedOut``):
        // no closure per stream, and no weak reference that would move the request's
        // reference counts to a side table.
        pool.layer.armResponseTimer(next.exchange)
        sendBody()
    }

    /// Hands the leg what the client sent of the body so far and the end
    /// of it once the client ended it.
    func sendBody() {
        guard takesBody, let leg, let current = request else { return }
        if !current.pending.isEmpty {
            let bytes = current.pending
            current.pending = []
            unconsumed += bytes.count
            leg.sendBody(bytes[...])
        }
        if current.ended && !requestEndSent {
            requestEndSent = true
            current.exchange.requestSent = Date()
            leg.endRequest(HTTP2Translation.http1Trailers(current.trailers))
        }
        giveBack()
    }

    /// Gives the client's windows back what left for a leg that is not backed up.
    func giveBack() {
        guard unconsumed > 0, let current = request, let leg, !leg.isBackedUp else { return }
        downstream.consume(unconsumed, on: current.stream)
        unconsumed = 0
        pool.layer.extendResponseTimer(current.exchange)
    }

    /// The client's session wrote some of the stream's body: read again once it is back under the bound.
    func responseWritten() {
        guard readingPaused, !closed, let current = request,
              downstream.bufferedBytes(on: current.stream) <= pool.streamBufferBound else { return }
        readingPaused = false
        leg?.readResponses(true)
    }

    // MARK: - UpstreamLegOwner

    var clientIsCongested: Bool {
        guard let current = request else { return false }
        return downstream.bufferedBytes(on: current.stream) > pool.streamBufferBound
    }

    func legReady(_ ready: any UpstreamLeg) {
        guard ready === leg, !closed else { return }
        request?.exchange.upstreamConnection = ready.connection
        sendBody()
    }

    func leg(_ from: any UpstreamLeg, received events: inout [HTTP1Event]) {
        guard from === leg, !closed else { return }
        // Nothing was asked: a server that speaks first is not one to reuse.
        guard request != nil else { return pool.retire(self) }
        handle(&events)
        if !closed, request != nil, clientIsCongested {
            readingPaused = true
            leg?.readResponses(false)
        }
    }

    func legFailed(_ failed: any UpstreamLeg, _ failure: UpstreamFailure) {
        guard failed === leg, !closed else { return }
        if let own = failure.selfAddressed { pool.layer.record.recordSelfAddressed(own, host: pool.target.host, port: pool.target.port) }
        fail(failure.reason, status: failure.status)
    }

    func legDrained(_ drained: any UpstreamLeg) {
        if drained === leg { giveBack() }
    }

    func leg(_ old: any UpstreamLeg, replacedBy next: any UpstreamLeg) {
        guard old === leg, !closed else { return next.close() }
        leg = next
    }
}

// MARK: - The response, and the end of an exchange

extension TranslatedStreamCarrier {
    /// Handles the upstream's events, moving each out of `events` as it goes
    /// (the one after it is still there to look at).
    private func handle(_ events: inout [HTTP1Event]) {
        for index in events.indices {
            guard !closed, let current = request else { return }
            let exchange = current.exchange
            switch events.take(at: index) {
            case .responseHead(let head):
                if exchange.firstResponseByte == nil { exchange.firstResponseByte = Date() }
                if head.status == 101 { return fail("the upstream switched protocols (101), which HTTP/2 cannot carry") }
                if head.isInformational {
                    inInterim = true
                    pool.layer.extendResponseTimer(exchange)
                    do { try downstream.sendResponse(http1: head, on: current.stream, endStream: false) } catch { return fail("\(error)") }
                    continue
                }
                exchange.stopResponseClock()
                keepAlive = head.keepAlive
                // The fields as the client got them, for a flow; without one, the status says the head came.
                exchange.response = pool.layer.record.wantsFlows
                    ? HTTP2Exchange.flowResponse((try? HTTP2ResponseHead(http1: head)) ?? HTTP2ResponseHead(status: head.status))
                    : HTTP2Exchange.unrecordedResponse(status: head.status)
                // A body that ends at once (HEAD, 204, 304, length 0) ends the stream with the head.
                var endsNow = false
                if index + 1 < events.count, case .end(let trailers) = events[index + 1], trailers.isEmpty { endsNow = true }
                sentEndStream = endsNow
                do { try downstream.sendResponse(http1: head, on: current.stream, endStream: endsNow) } catch { return fail("\(error)") }
            case .body(let bytes):
                if inInterim { continue }
                exchange.responseBody.append(bytes)
                // The last bytes of a body that ends here without trailers end the stream:
                // one DATA frame, not one more empty one.
                var endsNow = false
                if index + 1 < events.count, case .end(let trailers) = events[index + 1], trailers.isEmpty { endsNow = true }
                if endsNow { sentEndStream = true }
                do { try downstream.sendData(Array(bytes), on: current.stream, endStream: endsNow) } catch { return fail("\(error)") }
            case .end(let trailers):
                if inInterim {
                    inInterim = false
                    continue
                }
                if !sentEndStream {
                    let forwarded = trailers.isEmpty ? trailers : HTTP2Translation.http2Trailers(trailers)
                    do {
                        if forwarded.isEmpty {
                            try downstream.sendData([], on: current.stream, endStream: true)
                        } else {
                            try downstream.sendTrailers(forwarded, on: current.stream)
                        }
                    } catch { return fail("\(error)") }
                }
                responseComplete(current)
            case .upgrade:
                return fail("the upstream switched protocols, which HTTP/2 cannot carry")
            case .raw, .requestHead:
                break
            }
        }
    }

    /// The whole response went to the client: the leg waits for the next
    /// stream if both sides keep it alive and the request went whole.
    private func responseComplete(_ current: TranslatedRequest) {
        let kept = leg?.exchangeEnded(upstreamKeepAlive: keepAlive, requestEnded: requestEndSent) ?? false
        detach(current)
        // A response that came before the end of the request body (an early
        // 413 or 401) leaves the connection unusable; the rest of the body
        // goes nowhere (the pool consumes it as it comes).
        pool.finished(current)
        if kept && requestEndSent {
            if readingPaused {
                readingPaused = false
                leg?.readResponses(true)
            }
            pool.legIdle(self)
        } else {
            pool.retire(self)
        }
    }

    /// The stream leaves this carrier; what it sent is given back to the client.
    private func detach(_ current: TranslatedRequest) {
        current.exchange.stopResponseClock()
        let owed = unconsumed + current.pending.count
        unconsumed = 0
        current.pending = []
        if owed > 0 { downstream.consume(owed, on: current.stream) }
        current.carrier = nil
        request = nil
    }

    /// The exchange on this carrier failed: the client gets `status` when
    /// no head went to it yet, else its stream is reset; the leg is closed
    /// (it cannot carry another exchange).
    func fail(_ reason: String, status: Int = 502) {
        guard let current = request else { return pool.retire(self) }
        detach(current)
        pool.finished(current)
        let exchange = current.exchange
        if exchange.response == nil {
            pool.layer.answer(exchange, status: status, reason: reason)
        } else {
            if exchange.error == nil { exchange.error = reason }
            try? downstream.reset(current.stream, code: .internalError)
        }
        pool.retire(self)
    }

    /// The client reset the stream: the leg is mid-exchange and cannot be reused.
    func abandon() {
        if let current = request {
            current.exchange.stopResponseClock()
            current.carrier = nil
            request = nil
        }
        pool.retire(self)
    }

    /// The leg's connection, idle, for the idle pool; this carrier is done with it.
    func takeConnection() -> Upstream? {
        guard isIdle, let leg else { return nil }
        closed = true
        // A leg that never completed an exchange keeps no connection to hand on.
        let connection = leg.takeConnectionBetweenExchanges()
        if connection == nil { leg.close() }
        return connection
    }

    func close() {
        guard !closed else { return }
        closed = true
        leg?.close()
    }
}
