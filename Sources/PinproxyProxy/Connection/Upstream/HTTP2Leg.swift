import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// An upstream leg over a connection that speaks only HTTP/2, carrying the
/// HTTP/1.1 requests of one client connection: one stream per request, one
/// at a time, on one client session for as long as the connection lasts
/// (docs/http2.md, "HTTP/1.1 clients and HTTP/2-only upstreams"). Each
/// stream's response comes back translated to HTTP/1.1 events.
///
/// Flow control follows the client: a DATA frame's bytes are given back to
/// the upstream's windows only once the client socket took them, so a slow
/// client stalls the stream and the proxy holds at most a window of body.
final class HTTP2Leg: UpstreamLeg {
    /// The connection (an ``Upstream``; bytes in memory in tests).
    let wire: any LegWire
    private unowned let owner: any UpstreamLegOwner
    private let context: LegContext
    private let session: HTTP2Session
    /// The stream of the exchange in progress.
    private var stream: HTTP2StreamID?
    /// The request's method and version, for the response head's translation.
    private var request: (method: String, version: HTTPVersion)?
    /// The request head ended the stream (no body).
    private var headEndedStream = false
    /// The response head went to the owner: DATA belongs to the exchange.
    private var headDelivered = false
    /// Response body bytes handed to the client socket while its output was
    /// congested: given back to the upstream's windows once it drains.
    private var unconsumed = 0
    /// The upstream sent GOAWAY: no new stream goes on this connection.
    private var wentAway = false
    /// Whether ``pump()`` is running (an event it handles may send a request).
    private var pumping = false
    private var closed = false

    /// Request body bytes queued in the session beyond this stop the client
    /// being read until they leave.
    static let requestBodyBound = 256 * 1024
    /// Bytes of session output handed to the socket at a time.
    static let outputSlice = 64 * 1024

    init(wire: any LegWire, owner: any UpstreamLegOwner, context: LegContext) throws(HTTP2Error) {
        self.wire = wire
        self.owner = owner
        self.context = context
        // A connection from the idle pool brings the session left on it.
        let session = try Upstream.http2Session(continuing: wire as? Upstream)
        self.session = session
        wire.whenIdle { session.releaseIdleMemory() }  // strongly, as HTTP2RelayLeg does
    }

    /// Starts the session with what the upstream sent so far (its SETTINGS),
    /// and sends `pending`, the request an ``HTTP1Leg`` held.
    func start(early: [UInt8], pending: (head: HTTP1RequestHead, names: TargetNames)?) {
        if !early.isEmpty { session.receive(early) }
        pump()
        guard !closed else { return }
        if let pending { send(pending.head, names: pending.names) }
        guard !closed else { return }
        owner.legReady(self)
    }

    var target: UpstreamTarget { wire.target }
    var connection: Upstream? { wire as? Upstream }
    var holdsRequest: Bool { false }

    var isBackedUp: Bool {
        guard let stream else { return false }
        return session.bufferedBytes(on: stream) > Self.requestBodyBound || wire.outputIsCongested
    }

    func canCarry(_ target: UpstreamTarget) -> Bool {
        !closed && !wentAway && wire.target == target && wire.isOpen
    }

    // MARK: - The request

    func send(_ head: HTTP1RequestHead, names: TargetNames) {
        if head.requestsUpgrade {
            let wanted = head.upgradeProtocols.joined(separator: ", ")
            return fail("the upstream \(target.host.uriHost):\(target.port) speaks only HTTP/2, which has no Upgrade: the switch to \(wanted) cannot be relayed", status: 501)
        }
        var forwarded = HTTP2RequestHead(http1: head, scheme: target.scheme)
        // The client named the proxy; the origin expects its own name.
        if context.rewritesHost || forwarded.authority == nil { forwarded.authority = names.authority }
        if context.via { forwarded.headers.add(name: "via", value: "\(head.version.major).\(head.version.minor) \(HTTP1Forwarding.defaultVia)") }
        switch head.framing {
        case .none, .contentLength(0): headEndedStream = true
        default: headEndedStream = false
        }
        request = (head.method, head.version)
        headDelivered = false
        do { stream = try session.sendRequest(forwarded, endStream: headEndedStream) } catch {
            return fail("the request could not be sent to the HTTP/2 upstream: \(error)")
        }
        pump()
    }

    func sendBody(_ bytes: ArraySlice<UInt8>) {
        guard let stream else { return }
        do { try session.sendData(Array(bytes), on: stream) } catch {
            return fail("the request body could not be sent to the HTTP/2 upstream: \(error)")
        }
        pump()
    }

    func endRequest(_ trailers: HTTPHeaders) {
        guard let stream, !headEndedStream else { return }
        let translated = HTTP2Translation.http2Trailers(trailers)
        do {
            if translated.isEmpty {
                try session.sendData([], on: stream, endStream: true)
            } else {
                try session.sendTrailers(translated, on: stream)
            }
        } catch {
            return fail("the end of the request could not be sent to the HTTP/2 upstream: \(error)")
        }
        pump()
    }

    /// The stream is over. A response that came before the end of the
    /// request body resets it: the rest of the body goes nowhere.
    func exchangeEnded(upstreamKeepAlive: Bool, requestEnded: Bool) -> Bool {
        if let stream {
            if unconsumed > 0 { session.consume(unconsumed, on: stream) }
            if !requestEnded { try? session.reset(stream, code: .noError) }
        }
        unconsumed = 0
        stream = nil
        request = nil
        pump()
        return !closed
    }

    /// The upstream is held by its windows instead: body is consumed once the client took it.
    func readResponses(_ allowed: Bool) { wire.resumeReading() }

    /// The body bytes the client socket took go back to the upstream's windows.
    func clientDrained() {
        if unconsumed > 0, let stream { session.consume(unconsumed, on: stream) }
        unconsumed = 0
        pump()
    }

    func cork() { wire.cork() }
    func uncork() { wire.uncork() }

    // MARK: - The connection and the session

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard up === wire else { return }
        wireEvent(event)
    }

    /// An event of the connection: bytes for the session, its end, its output drained.
    func wireEvent(_ event: UpstreamEvent) {
        guard !closed else { return }
        switch event {
        case .data(let bytes):
            bytes.withUnsafeBytes { session.receive($0) }
            pump()
        case .drained:
            pump()
        case .ready:
            break
        case .failed(let failure):
            close()
            owner.legFailed(self, failure)
        case .ended(let end):
            close()
            owner.legFailed(self, wire.endFailure(end, when: "before the response was complete"))
        }
    }

    /// Takes the session's events and writes its output while the socket
    /// keeps up, until neither has more.
    private func pump() {
        guard !pumping, !closed else { return }
        pumping = true
        defer { pumping = false }
        var progressed = true
        while progressed && !closed {
            progressed = false
            var events = session.takeEvents()
            if !events.isEmpty { progressed = true }
            for index in events.indices where !closed { handle(events.take(at: index)) }
            guard !closed else { return }
            while session.wantsWrite && !wire.outputIsCongested {
                let bytes = session.takeOutput(limit: Self.outputSlice)
                if bytes.isEmpty { break }
                wire.send(bytes)
                progressed = true
            }
        }
        guard !closed else { return }
        if stream == nil && session.isFinished {
            // GOAWAY went both ways and nothing is open: the next request opens another connection.
            close()
            return owner.legFailed(self, UpstreamFailure(reason: "the HTTP/2 upstream went away", verificationFailed: false))
        }
        owner.legDrained(self)
    }

    private func deliver(_ events: [HTTP1Event]) {
        var events = events
        owner.leg(self, received: &events)
    }

    private func handle(_ event: HTTP2Event) {
        switch event {
        case .response(let stream, let head, let endStream):
            guard stream == self.stream, let request else { return }
            if head.isInformational {
                let interim = HTTP1ResponseHead(status: head.status, headers: HTTP1Forwarding.removingHopByHop(head.headers))
                return deliver([.responseHead(interim), .end(trailers: HTTPHeaders())])
            }
            var announced = head
            // Trailers announced (`trailer`) can reach an HTTP/1.1 client only in a chunked body.
            if !head.headers["trailer"].isEmpty && request.version == .http1_1 && !endStream {
                announced.headers.remove(name: "content-length")
            }
            headDelivered = true
            let translated = announced.http1Head(requestMethod: request.method, endStream: endStream)
            deliver(endStream ? [.responseHead(translated), .end(trailers: HTTPHeaders())] : [.responseHead(translated)])
        case .data(let stream, let bytes, let endStream):
            guard stream == self.stream, headDelivered else { return session.consume(bytes.count, on: stream) }
            if !bytes.isEmpty { deliver([.body(bytes[...])]) }
            // Given back only once the client socket took them.
            if self.stream == stream {
                if owner.clientIsCongested { unconsumed += bytes.count } else { session.consume(bytes.count, on: stream) }
            }
            if endStream, self.stream == stream { deliver([.end(trailers: HTTPHeaders())]) }
        case .trailers(let stream, let trailers):
            guard stream == self.stream, headDelivered else { return }
            deliver([.end(trailers: HTTP2Translation.http1Trailers(trailers))])
        case .dataWritten:
            owner.legDrained(self)
        case .reset(let stream, let code):
            guard stream == self.stream else { return }
            fail("the HTTP/2 upstream reset the stream (\(code))")
        case .streamClosed(let stream, let code):
            guard stream == self.stream, code != .noError else { return }
            fail(code == .refusedStream ? "the HTTP/2 upstream refused the stream (GOAWAY)" : "the HTTP/2 upstream stream ended with \(code)")
        case .goAway(_, let code, _):
            wentAway = true
            context.logger.info("\(context.peer): the HTTP/2 upstream sent GOAWAY (\(code)); the next request opens another connection")
        case .connectionError(let error):
            fail("the upstream broke HTTP/2: \(error)")
        case .request:
            break
        }
    }

    /// The connection cannot go on: the exchange in progress fails with `reason`.
    private func fail(_ reason: String, status: Int? = nil) {
        guard !closed else { return }
        close()
        owner.legFailed(self, UpstreamFailure(reason: reason, verificationFailed: false, answerStatus: status))
    }

    /// HTTP/2 has no `101 Switching Protocols`.
    func takeConnectionForTunnel() -> Upstream? { nil }
    /// An HTTP/2 connection's session belongs to this leg: it is not pooled.
    func takeConnectionBetweenExchanges() -> Upstream? { nil }

    func close() {
        closed = true
        wire.close()
    }
}
