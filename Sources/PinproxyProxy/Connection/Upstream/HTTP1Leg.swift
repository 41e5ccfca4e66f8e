import Foundation
import PinproxyHTTP1

/// An upstream leg over one HTTP/1.1 connection: the request serialised for
/// the upstream (its body re-framed when the framing changes), the response
/// parsed into events, the connection kept alive between exchanges when
/// both sides allow it.
///
/// It also finds out when a TLS upstream speaks only HTTP/2 (see
/// ``HTTP2OnlyUpstreams`` for the ways servers refuse HTTP/1.1) and hands the
/// exchange to an ``HTTP2Leg`` then. With `--http2 on`, a request to a TLS
/// upstream that is still connecting is held, with the client's bytes after
/// it, until the connection is ready and its protocol known: nothing of the
/// request is lost when the first connection is refused. A request is sent
/// again, on a connection offering `h2` only, only when no byte of its body
/// went on the first one and no byte of a response came back.
///
/// A request that meets the close of a reused connection before any
/// response goes again, once, on a new connection when ``UpstreamReplay``
/// allows it: the head the leg keeps for a replay is all it needs, since a
/// request whose body already left is never sent again.
final class HTTP1Leg: UpstreamLeg {
    private(set) var upstream: Upstream
    private unowned let owner: any UpstreamLegOwner
    private let context: LegContext
    // Per-request state, confined to the connection's queue; unchecked
    // exclusivity as in HTTP1ExchangeLayer (docs/architecture.md).
    @exclusivity(unchecked) private var parser = HTTP1Parser(mode: .response)
    /// The request in progress (sent again when the upstream wants HTTP/2).
    @exclusivity(unchecked) private var request: (head: HTTP1RequestHead, names: TargetNames)?
    /// How the body goes upstream.
    @exclusivity(unchecked) private var framing: HTTP1BodyFraming = .none
    /// The serialised request, held until the connection is ready and its protocol known.
    @exclusivity(unchecked) private var held: [UInt8]?
    /// A byte of the body, or the end of a chunked one, went upstream.
    @exclusivity(unchecked) private var bodySent = false
    /// The request in progress was sent again after its connection closed.
    @exclusivity(unchecked) private var replayed = false
    @exclusivity(unchecked) private var answered = false
    /// The last exchange is complete (request sent, response read, kept alive) and no other began.
    @exclusivity(unchecked) private var betweenExchanges = false
    /// The response in progress has its final head (not a 1xx one), and then its end.
    @exclusivity(unchecked) private var responseIsFinal = false
    @exclusivity(unchecked) private var responseEnded = false
    /// The upstream sent bytes after the response it owed: an answer to no
    /// request, or bytes that are no HTTP. The connection carries no other request.
    @exclusivity(unchecked) private var overran = false
    @exclusivity(unchecked) private var closed = false
    /// What the upstream sent before the leg existed (an HTTP/2 server's SETTINGS).
    private var early: [UInt8]
    @exclusivity(unchecked) private var spareEvents = SpareHTTP1Events()

    init(upstream: Upstream, owner: any UpstreamLegOwner, context: LegContext, early: [UInt8] = []) {
        self.upstream = upstream
        self.owner = owner
        self.context = context
        self.early = early
    }

    var target: UpstreamTarget { upstream.target }
    var connection: Upstream? { upstream }
    var holdsRequest: Bool { held != nil }
    var isBackedUp: Bool { upstream.outputIsCongested }

    func canCarry(_ target: UpstreamTarget) -> Bool {
        !closed && upstream.target == target && upstream.isOpen
    }

    // MARK: - The request

    func send(_ head: HTTP1RequestHead, names: TargetNames) {
        betweenExchanges = false
        responseIsFinal = false
        responseEnded = false
        bodySent = false
        answered = false
        replayed = false
        request = (head, names)
        let forwarded = serialized(head, names: names)
        framing = forwarded.framing
        if context.http2 && upstream.target.tls && !upstream.isReady {
            held = forwarded.bytes
            return
        }
        parser.expectResponse(toMethod: head.method)
        upstream.sendRequest(forwarded.bytes)
    }

    /// `head` as it goes to an HTTP/1.1 upstream.
    private func serialized(_ head: HTTP1RequestHead, names: TargetNames) -> HTTP1ForwardedHead {
        // The client named the proxy (its address or a test host name); the
        // origin expects its own name, as it would from a direct client. An
        // HTTP/1.0 request may carry no Host at all: it goes upstream as
        // HTTP/1.1, which needs one, so it names the server the proxy connects to.
        HTTP1Forwarding.serializedRequestForUpstream(head, via: context.via ? HTTP1Forwarding.defaultVia : nil,
                                                     host: context.rewritesHost || !head.headers.contains(name: "Host") ? names.authority : nil)
    }

    func sendBody(_ bytes: ArraySlice<UInt8>) {
        bodySent = true
        if framing == .chunked { upstream.send(HTTP1ChunkedEncoder.chunk(bytes)) } else { upstream.send(bytes) }
    }

    func endRequest(_ trailers: HTTPHeaders) {
        guard framing == .chunked else { return }
        bodySent = true
        upstream.send(HTTP1ChunkedEncoder.end(trailers: HTTP1Forwarding.forwardableTrailers(trailers)))
    }

    func exchangeEnded(upstreamKeepAlive: Bool, requestEnded: Bool) -> Bool {
        request = nil
        // Bytes after a complete response (a server that sent more than it
        // framed) leave a connection that cannot be trusted with another.
        guard upstreamKeepAlive, !overran else { return false }
        guard parser.isIdle else {
            noteOverrun("the start of another message")
            return false
        }
        betweenExchanges = requestEnded
        return true
    }

    func readResponses(_ allowed: Bool) {
        if allowed { upstream.resumeReading() } else { upstream.pauseReading() }
    }

    func clientDrained() {}
    func cork() { upstream.cork() }
    func uncork() { upstream.uncork() }

    // MARK: - The connection's events

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard up === upstream, !closed else { return }
        switch event {
        case .data(let bytes):
            received(bytes)
        case .drained:
            owner.legDrained(self)
        case .ready:
            ready()
        case .failed(let failure):
            if up.offeredHTTP2 { context.http2OnlyUpstreams.forget(up.target) }
            if failure.refusedApplicationProtocol, mayOfferHTTP2Instead, reopenOfferingHTTP2() { return }
            // An idle connection taken from the pool may have closed as it was taken.
            if let refused = replayOnNewConnection(failure.endedWhileConnecting.map { up.endFailure($0) } ?? failure) { fail(refused) }
        case .ended(let end):
            ended(end)
        }
    }

    /// Ready for requests: HTTP/2 (handed to an ``HTTP2Leg``), HTTP/2 frames
    /// where HTTP/1.1 was offered (connect again), or HTTP/1.1 (the held request goes).
    private func ready() {
        upstream.start()
        let early = self.early
        self.early = []
        if upstream.speaksHTTP2 { return handOverToHTTP2(early: early) }
        if upstream.offeredHTTP2 { context.http2OnlyUpstreams.forget(upstream.target) }
        if !early.isEmpty, retriedOfferingHTTP2(afterAnswer: early[...]) { return }
        if let bytes = held, let request {
            held = nil
            parser.expectResponse(toMethod: request.head.method)
            upstream.sendRequest(bytes)
        }
        owner.legReady(self)
    }

    private func received(_ bytes: ArraySlice<UInt8>) {
        if !answered {
            if retriedOfferingHTTP2(afterAnswer: bytes) { return }
            answered = true
        }
        var events = spareEvents.take()
        defer { spareEvents.giveBack(&events) }
        do { try parser.feedKeepingCompleteMessages(bytes, into: &events) } catch {
            // A complete response followed by bytes that are no HTTP still goes
            // to the client; only the connection is done.
            guard request != nil, !responseEnded, endsTheResponse(events) else {
                return fail(UpstreamFailure(reason: "the upstream sent an invalid response: \(error.reason)", verificationFailed: false))
            }
            noteOverrun("bytes that are no response (\(error.reason))")
            return owner.leg(self, received: &events)
        }
        if !overran, runsPastTheResponse(events) {
            noteOverrun("another response, to no request,")
            // Between exchanges there is nothing to deliver: the connection just goes.
            if request == nil { return fail(UpstreamFailure(reason: "the upstream sent a response to no request", verificationFailed: false)) }
        }
        owner.leg(self, received: &events)
    }

    /// Follows the response in `events`: true when something comes after the
    /// end of the final response (bytes answering no request), the tail of
    /// a switch of protocols aside.
    private func runsPastTheResponse(_ events: [HTTP1Event]) -> Bool {
        for event in events {
            if responseEnded {
                switch event {
                case .upgrade, .raw: continue
                default: return true
                }
            }
            switch event {
            case .responseHead(let head): responseIsFinal = !head.isInformational || head.status == 101
            case .end: if responseIsFinal { responseEnded = true }
            default: break
            }
        }
        return false
    }

    /// Whether the final response ends within `events`.
    private func endsTheResponse(_ events: [HTTP1Event]) -> Bool {
        _ = runsPastTheResponse(events)
        return responseEnded
    }

    private func noteOverrun(_ what: String) {
        overran = true
        context.logger.notice("\(context.peer): the upstream \(upstream.target.host.uriHost):\(upstream.target.port) sent \(what) after the response it owed; its connection is not used again")
    }

    /// The upstream closed its side: a response framed by close ends here; any other is cut short.
    private func ended(_ end: TransportEnd) {
        upstream.close()
        if retriedOfferingHTTP2(afterEndOf: ()) { return }
        guard request != nil else {
            // An idle keep-alive connection went away; a refusal is remembered.
            let failure = upstream.endFailure(end)
            if failure.isRefusal { context.host.upstreamRefused(upstream.target, reason: failure.reason) }
            return fail(failure)
        }
        // Sent again, or the reason it was not (nothing said once a response began).
        guard let refused = replayOnNewConnection(upstream.endFailure(end)) else { return }
        let respondedAtAll = answered || !parser.isIdle
        if !respondedAtAll { return fail(refused) }
        var events: [HTTP1Event]
        do { events = try parser.finish() } catch {
            return fail(UpstreamFailure(reason: "the upstream closed the connection early: \(error.reason)", verificationFailed: false))
        }
        if !events.isEmpty { owner.leg(self, received: &events) }
        if request != nil {
            fail(upstream.endFailure(end, when: "before the response was complete"))
        } else {
            fail(upstream.endFailure(end, when: "between requests"))
        }
    }

    private func fail(_ failure: UpstreamFailure) {
        guard !closed else { return }
        close()
        owner.legFailed(self, failure)
    }

    func takeConnectionForTunnel() -> Upstream? {
        closed = true
        return upstream
    }

    func takeConnectionBetweenExchanges() -> Upstream? {
        guard betweenExchanges, !closed else { return nil }
        closed = true
        return upstream
    }

    /// The connection, when this leg, over a ready connection, never carried
    /// a request and holds nothing from it: for the idle pool (see
    /// ``IdleUpstreamPool/park(_:)``). Nil otherwise.
    func takeUnusedConnection() -> Upstream? {
        guard !closed, request == nil, held == nil, early.isEmpty, upstream.isReady else { return nil }
        closed = true
        return upstream
    }

    func close() {
        closed = true
        held = nil
        upstream.close()
    }

    // MARK: - A reused connection the upstream closed

    /// The upstream ended (or reset) the connection before a byte of the
    /// response: the request goes again, once, on a new connection when
    /// ``UpstreamReplay`` allows it (nil then, the client's bytes after it
    /// waiting for that connection); else `failure`, with the reason it was
    /// not sent again when there is one.
    private func replayOnNewConnection(_ failure: UpstreamFailure) -> UpstreamFailure? {
        guard let request, !failure.isRefusal else { return failure }
        let verdict = UpstreamReplay.verdict(reusedConnection: upstream.isReused, responded: answered || !parser.isIdle,
                                             alreadyReplayed: replayed, method: request.head.method,
                                             bodyDeclared: framing.declaresBody, bodySent: bodySent)
        guard verdict == .replay else { return failure.refused(verdict) }
        let target = upstream.target
        upstream.close()
        do { upstream = try context.host.openUpstream(target, alpn: nil, mayTakeIdle: false) } catch { return failure }
        replayed = true
        parser = HTTP1Parser(mode: .response)
        held = serialized(request.head, names: request.names).bytes
        context.counters.countUpstreamRetry()
        context.logger.info("\(context.peer): \(failure.reason), a reused connection; \(request.head.method) \(request.head.target) goes again on a new one")
        owner.legDrained(self)
        return nil
    }

    // MARK: - Upstreams that speak only HTTP/2

    /// Whether the exchange, refused or dropped, may go again on a connection offering `h2` only.
    private var mayOfferHTTP2Instead: Bool {
        // A connection that carried an exchange in HTTP/1.1 (or a request
        // sent again after one did) speaks HTTP/1.1: a close there is a stale
        // connection, for ``replayOnNewConnection(_:)``.
        guard context.http2, upstream.target.tls, !upstream.offeredHTTP2, upstream.tlsDetails?.alpn == nil,
              upstream.requestsSent <= 1, !replayed else { return false }
        return request == nil || (!answered && !bodySent)
    }

    /// The upstream answered an HTTP/1.1 request with HTTP/2 frames: retried offering `h2` only.
    private func retriedOfferingHTTP2(afterAnswer bytes: ArraySlice<UInt8>) -> Bool {
        guard context.http2, parser.isIdle, HTTP2OnlyUpstreams.looksLikeHTTP2Frames(bytes), mayOfferHTTP2Instead else { return false }
        return reopenOfferingHTTP2()
    }

    /// The upstream ended without a byte of response, having chosen no protocol (nghttpd closes so).
    private func retriedOfferingHTTP2(afterEndOf: Void) -> Bool {
        guard request != nil, parser.isIdle, mayOfferHTTP2Instead else { return false }
        return reopenOfferingHTTP2()
    }

    /// Closes the connection and opens another offering `h2` only; the request, if any, waits for it.
    private func reopenOfferingHTTP2() -> Bool {
        upstream.close()
        parser = HTTP1Parser(mode: .response)
        do { upstream = try context.host.openUpstream(upstream.target, alpn: HTTP2OnlyUpstreams.offer) } catch { return false }
        if let request { held = serialized(request.head, names: request.names).bytes }
        owner.legDrained(self)
        return true
    }

    /// The connection chose `h2`: an ``HTTP2Leg`` carries the exchange from now on.
    private func handOverToHTTP2(early: [UInt8]) {
        let next: HTTP2Leg
        do { next = try HTTP2Leg(wire: upstream, owner: owner, context: context) } catch {
            return fail(UpstreamFailure(reason: "cannot start an HTTP/2 session: \(error)", verificationFailed: false))
        }
        closed = true
        context.http2OnlyUpstreams.remember(upstream.target)
        context.logger.info("\(context.peer): the upstream \(upstream.target.host.uriHost):\(upstream.target.port) speaks only HTTP/2; HTTP/1.1 requests are translated")
        owner.leg(self, replacedBy: next)
        let pending = held != nil ? request : nil
        held = nil
        next.start(early: early, pending: pending)
    }
}
