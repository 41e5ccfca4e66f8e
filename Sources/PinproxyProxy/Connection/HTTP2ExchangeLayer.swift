import Dispatch
import Foundation
import PinproxyHTTP1
import PinproxyHTTP2
import PinproxyTLS

/// The HTTP/2 streams of one intercepted client connection, relayed to an
/// upstream that speaks HTTP/2 too, or translated to HTTP/1.1 exchanges
/// when it does not (``HTTP1UpstreamPool``; ``ClientProtocolChoice`` says when).
///
/// Relayed, two sessions, both driven from the connection's queue: a server
/// session on the client's leg and a client session on the upstream's. Each
/// client stream becomes one upstream stream; heads, body bytes, trailers,
/// resets and GOAWAY cross as they arrive. Flow control is end to end: body bytes
/// received on one leg are consumed (given back to that peer's windows) only
/// when the other leg has written them, so a slow reader of one stream stalls
/// that stream alone, and a connection holds at most a connection window of
/// body per leg. A session's output is taken only while its socket keeps up.
/// A stream whose upstream sends no response head within the upstream
/// response timeout gets 504 (`+Timeouts`); the others go on.
///
/// This file: the client session's events, the layer's life and timers.
/// Opening the upstream and choosing its leg: `HTTP2ExchangeLayer+Upstream.swift`.
/// Whatever the upstream speaks, the streams go to one ``HTTP2StreamLeg``.
final class HTTP2ExchangeLayer: ConnectionLayer {
    unowned let host: any LayerHost
    let client: any ClientSide
    let services: ConnectionServices
    let record: ConnectionRecord
    let target: UpstreamTarget
    let names: TargetNames
    let clientTLS: ClientTLSDetails?
    private let tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)?
    let timer: DeadlineTimer
    /// The streams' response clock (`+Timeouts`), and when it runs out next; nil: not running.
    let responseClock: DeadlineTimer
    @exclusivity(unchecked) var responseClockDue: DispatchTime?
    /// The leg towards the client.
    let downstream: HTTP2Session
    /// What the layer's timers reach it through (no side table; see ``OwnerLink``).
    let owner = OwnerLink<HTTP2ExchangeLayer>()
    // The per-stream state below is confined to the connection's queue, as the
    // HTTP/1 layer's is, so it skips the run-time exclusivity checks.
    /// The connection being opened, until it is ready.
    @exclusivity(unchecked) var opening: Upstream?
    /// Where the streams go once the upstream is ready.
    @exclusivity(unchecked) var leg: (any HTTP2StreamLeg)?
    /// Which leg a new stream goes to: counts the relays retired (``retiring``).
    @exclusivity(unchecked) var legGeneration = 0
    /// Relays whose upstream said GOAWAY, by the generation they carried:
    /// each finishes the streams its upstream still processes, newer streams
    /// go to the next leg (another connection), and it is let go once it
    /// carries none (`+Upstream`).
    @exclusivity(unchecked) var retiring: [(generation: Int, relay: HTTP2RelayLeg)] = []
    /// Streams an upstream left unprocessed (GOAWAY) that go again on the next leg, in stream order.
    @exclusivity(unchecked) var reopening: [HTTP2Exchange] = []
    /// Every request is answered with this error (the upstream failed or went away).
    @exclusivity(unchecked) var failure: (status: Int, reason: String)?
    /// Client events that wait for the upstream to be ready.
    @exclusivity(unchecked) var held: [HTTP2Event] = []
    /// The storage `pump()` takes the client's events in, kept between turns.
    @exclusivity(unchecked) private var spareEvents: [HTTP2Event] = []
    /// What the upstream sent before this layer was current (its SETTINGS).
    var upstreamEarlyBytes: [UInt8]
    @exclusivity(unchecked) private(set) var byClient = HTTP2StreamMap<HTTP2Exchange>()
    @exclusivity(unchecked) private(set) var closed = false
    @exclusivity(unchecked) private var requestCount = 0
    @exclusivity(unchecked) private var idle = false
    /// A pump waits for the end of the event loop's batch (`pumpAfterBatch`).
    @exclusivity(unchecked) var pumpScheduled = false
    /// The event loop the connection runs on (nil off a loop), told how many
    /// streams are open: many, it yields the CPU after a small batch (``EventLoop``).
    private let loop: EventLoop?
    /// This layer's share of the loop's ``EventLoop/openStreams``.
    @exclusivity(unchecked) private var countedStreams = 0
    /// Bytes of session output handed to a socket at a time.
    static let outputSlice = 64 * 1024
    /// What the proxy offers an upstream when its client speaks HTTP/2.
    static let upstreamALPN = ["h2", "http/1.1"]

    init(host: any LayerHost, services: ConnectionServices, record: ConnectionRecord, target: UpstreamTarget,
         failure: (status: Int, reason: String)?, clientTLS: ClientTLSDetails?,
         tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)?, upstream: Upstream?,
         upstreamEarlyBytes: [UInt8] = []) throws(HTTP2Error) {
        self.host = host
        self.client = host.client
        self.services = services
        self.record = record
        self.target = target
        self.names = TargetNames(target)
        self.failure = failure
        self.clientTLS = clientTLS
        self.tlsOutcome = tlsOutcome
        self.timer = DeadlineTimer(queue: host.client.queue)
        self.responseClock = DeadlineTimer(queue: host.client.queue)
        self.downstream = try HTTP2Session(role: .server)
        self.loop = host.client.queue.getSpecific(key: EventLoop.key)?.loop
        self.opening = upstream
        self.upstreamEarlyBytes = upstreamEarlyBytes
        owner.attach(self)
    }

    deinit { owner.sever() }

    /// Runs once the layer is current.
    func start() {
        if failure == nil && leg == nil {
            if let up = opening {
                upstreamReady(up)
            } else {
                openUpstream()
            }
        }
        // An idle connection's sessions give their frame buffers back.
        // The session, not the layer: no side table for the layer (see ``OwnerLink``).
        let downstream = self.downstream
        client.whenIdle { downstream.releaseIdleMemory() }
        client.start()
        client.resumeReading()
        pump()
    }

    // MARK: - Client side

    func clientData(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
        bytes.withUnsafeBytes { downstream.receive($0) }
        pump()
    }

    func clientEnded(_ end: TransportEnd) {
        guard !closed else { return }
        // After a whole answer, a client leaving is no failure of the exchange (as a reset is not, below).
        for exchange in byClient.values where exchange.error == nil && !answeredInFull(exchange) {
            exchange.error = "the client closed the connection (\(end))"
        }
        finish(end)
    }

    func clientDrained() { pump() }

    /// Handles the client session's events; `pump` calls it.
    func clientEvent(_ event: HTTP2Event) {
        if leg == nil && failure == nil {
            switch event {
            case .data(let stream, _, _), .trailers(let stream, _), .reset(let stream, _), .streamClosed(let stream, _):
                // A stream on a relay that went away goes on there.
                if let exchange = byClient[stream], exchange.legGeneration != legGeneration { break }
                fallthrough
            case .request:
                held.append(event)
                // The idle upstream was released: the first new stream opens another.
                if opening == nil { openUpstream() }
                return
            default: break
            }
        }
        switch event {
        case .request(let stream, let head, let endStream):
            begin(stream, head, endStream: endStream)
        case .data(let stream, let bytes, let endStream):
            guard let exchange = byClient[stream] else { return downstream.consume(bytes.count, on: stream) }
            exchange.requestBody.append(bytes)
            if endStream { requestEnded(exchange) }
            guard let leg = leg(of: exchange), !exchange.answeredLocally else { return downstream.consume(bytes.count, on: stream) }
            leg.forwardData(bytes, of: exchange, endStream: endStream)
        case .trailers(let stream, let trailers):
            guard let exchange = byClient[stream] else { return }
            requestEnded(exchange)
            leg(of: exchange)?.forwardTrailers(trailers, of: exchange)
        case .reset(let stream, let code):
            guard let exchange = byClient[stream] else { return }
            // After a whole answer, a client cutting its own upload short is no failure of the exchange.
            if exchange.error == nil && !answeredInFull(exchange) { exchange.error = "the client reset the stream (\(code))" }
            leg(of: exchange)?.clientReset(exchange, code: code)
        case .streamClosed(let stream, let code):
            guard let exchange = byClient.removeValue(forKey: stream) else { return }
            countStream(-1)
            if code != .noError, exchange.error == nil, !answeredInFull(exchange) { exchange.error = "the stream was reset (\(code))" }
            leg(of: exchange)?.clientClosed(exchange, code: code)
            recordFlow(exchange)
        case .dataWritten(let stream, let count):
            if retiring.isEmpty {
                leg?.responseWritten(stream, count: count)
            } else if let exchange = byClient[stream] {
                leg(of: exchange)?.responseWritten(stream, count: count)
            }
        case .goAway:
            break  // the client opens no more streams; those open finish
        case .connectionError(let error):
            services.logger.notice("\(record.peer): ending the HTTP/2 connection: \(error)")
            for exchange in byClient.values where exchange.error == nil { exchange.error = "\(error)" }
        case .response:
            break
        }
    }

    private func begin(_ stream: HTTP2StreamID, _ head: HTTP2RequestHead, endStream: Bool) {
        requestCount += 1
        if requestCount == 1 { tlsOutcome?.outcome.firstRequest() }
        let exchange = HTTP2Exchange(clientStream: stream, request: head, requestEnded: endStream,
                                     requestBody: record.makeBodyCapture(), responseBody: record.makeBodyCapture())
        byClient[stream] = exchange
        countStream(+1)
        exchange.legGeneration = legGeneration
        if endStream { exchange.requestSent = Date() }
        if let failure { return answer(exchange, status: failure.status, reason: failure.reason) }
        leg?.open(exchange, endStream: endStream)
    }

    @inline(__always)
    private func countStream(_ change: Int) {
        guard let loop else { return }
        countedStreams += change
        loop.openStreams += change
    }

    /// The connection is over: its streams no longer count as open on the loop.
    private func uncountStreams() {
        guard let loop, countedStreams != 0 else { return }
        loop.openStreams -= countedStreams
        countedStreams = 0
    }

    private func requestEnded(_ exchange: HTTP2Exchange) {
        exchange.requestEnded = true
        exchange.requestSent = Date()
    }

    /// Answers a stream with an error status and a plain-text reason.
    func answer(_ exchange: HTTP2Exchange, status: Int, reason: String) {
        exchange.answeredLocally = true
        exchange.error = reason
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/plain; charset=utf-8")
        let head = HTTP2ResponseHead(status: status, headers: headers)
        exchange.response = HTTP2Exchange.flowResponse(head)
        do {
            try downstream.sendResponse(head, on: exchange.clientStream, endStream: false)
            try downstream.sendData(Array("\(reason)\n".utf8), on: exchange.clientStream, endStream: true)
        } catch {
            try? downstream.reset(exchange.clientStream, code: .internalError)
        }
    }

    func recordFlow(_ exchange: HTTP2Exchange) {
        guard record.wantsFlows else {
            if exchange.endUnrecorded() { record.countUnbuiltFlow() }
            return
        }
        if let flow = exchange.takeFlow(clientAddress: record.peer, names: names, target: target, clientTLS: clientTLS,
                                        upstream: exchange.upstreamConnection ?? leg(of: exchange)?.connection, outcome: record.outcome) {
            record.record(flow)
        }
    }

    // MARK: - Driving the sessions

    /// Takes every session's events and output until neither has more, then
    /// finishes when the client's session is done.
    func pump() {
        var progressed = true
        while progressed && !closed {
            progressed = false
            // The batch's storage goes back and forth between the session and
            // `spareEvents`; a pump entered again meanwhile gets an empty one.
            var events: [HTTP2Event] = []
            swap(&events, &spareEvents)
            downstream.takeEvents(into: &events)
            if !events.isEmpty { progressed = true }
            for index in events.indices where !closed { clientEvent(events.take(at: index)) }
            events.removeAll(keepingCapacity: true)
            swap(&events, &spareEvents)
            if !closed, let leg, leg.pump() { progressed = true }
            if !closed && !retiring.isEmpty && pumpRetiring() { progressed = true }
            if Self.write(downstream, to: client) { progressed = true }
        }
        guard !closed else { return }
        if downstream.isFinished || (downstream.failure != nil && !downstream.wantsWrite) { return finish(nil) }
        updateIdleTimer()
    }

    /// Hands `session`'s output to `transport` while it keeps up; whether anything went.
    static func write(_ session: HTTP2Session, to transport: any ByteOutput) -> Bool {
        var wrote = false
        while session.wantsWrite && !transport.outputIsCongested {
            let bytes = session.takeOutput(limit: Self.outputSlice)
            if bytes.isEmpty { break }
            transport.send(bytes)
            wrote = true
        }
        return wrote
    }

    /// With no stream open: the idle timeout, and before it, while an
    /// upstream is held, the upstream hold (``releaseIdleUpstream()``).
    private func updateIdleTimer() {
        if byClient.isEmpty && !idle {
            idle = true
            let (hold, limit) = (services.timeouts.upstreamHold, services.timeouts.idle)
            guard leg != nil && hold < limit else {
                return timer.arm(limit) { [owner] in owner.object?.goAwayAndFinish() }
            }
            timer.arm(hold) { [owner] in
                guard let self = owner.object, !self.closed else { return }
                self.releaseIdleUpstream()
                self.timer.arm(limit - hold) { owner.object?.goAwayAndFinish() }
            }
        } else if !byClient.isEmpty && idle {
            idle = false
            timer.cancel()
        }
    }

    private func goAwayAndFinish() {
        // A stream held while a released upstream is opened again is not idle.
        guard !closed, held.isEmpty else { return }
        try? downstream.goAway(code: .noError)
        pump()
        finish(nil)
    }

    // MARK: - Shutdown

    /// Stops taking new streams (GOAWAY); finishes once the open ones are done.
    func drain() {
        guard !closed else { return }
        try? downstream.goAway(code: .noError)
        pump()
        if !closed && byClient.isEmpty { finish(nil) }
    }

    func interrupt() {
        guard !closed else { return }
        for exchange in byClient.values {
            if exchange.error == nil { exchange.error = "interrupted by shutdown" }
            recordFlow(exchange)
        }
    }

    func close() {
        closed = true
        uncountStreams()
        timer.cancel()
        responseClock.cancel()
        closeRetiring()
        leg?.close()
        opening?.close()
        opening = nil
    }

    /// The upstream's whole response was handed to the client's session (nothing of it still
    /// queued here): the client cutting its own upload short after that, or leaving, is no
    /// failure of the exchange.
    private func answeredInFull(_ exchange: HTTP2Exchange) -> Bool {
        exchange.responseEnded && downstream.bufferedBytes(on: exchange.clientStream) == 0
    }

    func finish(_ end: TransportEnd?) {
        guard !closed else { return }
        for exchange in byClient.values {
            if exchange.error == nil && !answeredInFull(exchange) { exchange.error = "the connection ended before the stream did" }
            recordFlow(exchange)
        }
        closed = true
        uncountStreams()
        timer.cancel()
        responseClock.cancel()
        // An upstream with nothing left to do is kept for the next client
        // connection (``HTTP2StreamLeg/releaseIdle()``), as between requests.
        if byClient.isEmpty, held.isEmpty, failure == nil, leg?.releaseIdle() == true { leg = nil }
        closeRetiring()
        leg?.close()
        opening?.close()
        opening = nil
        // After GOAWAY the client may still have frames on the way (HEADERS
        // sent before it read the GOAWAY, WINDOW_UPDATE): closing under them
        // would reset the connection, and the client's TCP could drop the
        // GOAWAY and the last responses it has not read yet.
        client.closeAfterSending(lingering: Transport.unwantedInputLinger)
        if requestCount == 0, let tlsOutcome { tlsOutcome.outcome.closedWithoutRequest(end, tls: tlsOutcome.tls) }
        host.finish()
    }
}

extension Array where Element == HTTP2Event {
    /// The event at `index`, moved out (an empty `dataWritten` left in its
    /// place): handling a head or a body neither copies it nor releases it
    /// twice, as for HTTP/1 events (``Array/take(at:)``).
    @inline(__always)
    mutating func take(at index: Int) -> HTTP2Event {
        var event = HTTP2Event.dataWritten(.connection, count: 0)
        swap(&event, &self[index])
        return event
    }
}
