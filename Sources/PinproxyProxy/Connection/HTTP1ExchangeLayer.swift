import Foundation
import PinproxyHTTP1
import PinproxyTLS

/// The HTTP/1.1 exchanges of one client connection (plain or inside TLS).
///
/// Requests are answered one at a time, in order: a pipelined request waits,
/// unread, until the response before it is complete. Bodies stream both ways
/// without being collected: each slice goes on as it arrives, re-framed when
/// the framing changes, and a side stops being read while the other side's
/// output is congested. After `101 Switching Protocols` the connection
/// becomes a ``TunnelLayer``; a CONNECT request (forward mode) hands it to a
/// ``ConnectLayer``.
///
/// The upstream side is an ``UpstreamLeg``, whatever protocol it speaks
/// (HTTP/1.1, or HTTP/2 one stream per request): the layer hands it requests
/// in HTTP/1.1 form and relays the response events it reports. This file is
/// the client side (parsing requests, routing them, reading control, the
/// deadlines of ``HTTP1LayerDeadlines``); the leg's side is in
/// `HTTP1ExchangeLayer+Leg.swift`.
final class HTTP1ExchangeLayer: ConnectionLayer {
    unowned let host: any LayerHost
    let client: any ClientSide
    let kind: RequestDestination
    let clientTLS: ClientTLSDetails?
    let services: ConnectionServices
    let record: ConnectionRecord
    /// Intercepted connections: the first request, or a close without one, completes the TLS outcome.
    private let tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)?
    let isForward: Bool

    // Per-request state, confined to the connection's queue: its stored
    // properties skip Swift's run-time exclusivity checks, which cost about
    // 6% of the instructions per keep-alive request across the proxy (see
    // docs/architecture.md, "Exclusivity checks"); the same holds for the
    // other `@exclusivity(unchecked)` properties of the connection's layers.
    @exclusivity(unchecked) private var parser = HTTP1Parser(mode: .request)
    /// The upstream side of the exchanges; nil until the first request, or after it failed.
    @exclusivity(unchecked) var leg: (any UpstreamLeg)?
    @exclusivity(unchecked) var exchange: HTTP1Exchange?
    @exclusivity(unchecked) var backlog: [HTTP1Event] = []
    @exclusivity(unchecked) private var pendingConnect: HTTP1RequestHead? {
        didSet { connectPending = pendingConnect != nil }
    }
    /// Whether ``pendingConnect`` is set; testing the optional itself copies
    /// the whole head, and it is tested for every event and every update.
    @exclusivity(unchecked) private var connectPending = false
    @exclusivity(unchecked) private var requestCount = 0
    @exclusivity(unchecked) var closed = false
    @exclusivity(unchecked) var draining = false
    /// The proxy answered (or refused) a request whose body may still be
    /// arriving: the client connection is half-closed and drained rather
    /// than closed under it (see ``Transport/closeAfterSending(lingering:)``).
    @exclusivity(unchecked) var clientMayStillSend = false
    @exclusivity(unchecked) var deadlines: HTTP1LayerDeadlines
    /// The connection went on to another layer (CONNECT or an upgrade).
    @exclusivity(unchecked) var handedOver = false
    @exclusivity(unchecked) var responseComplete = false
    /// The upstream connection the TLS layer opened, and what it sent
    /// before this layer was current (an HTTP/2 server's SETTINGS): the first leg.
    private var handed: (upstream: Upstream, early: [UInt8])?
    /// What the deadlines reach the layer through (no side table; see ``OwnerLink``).
    let owner = OwnerLink<HTTP1ExchangeLayer>()

    init(host: any LayerHost, services: ConnectionServices, record: ConnectionRecord, kind: RequestDestination, clientTLS: ClientTLSDetails?,
         tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)? = nil, upstream: Upstream? = nil,
         upstreamEarlyBytes: [UInt8] = []) {
        self.host = host
        self.client = host.client
        self.services = services
        self.record = record
        self.kind = kind
        self.clientTLS = clientTLS
        self.tlsOutcome = tlsOutcome
        self.deadlines = HTTP1LayerDeadlines(queue: host.client.queue, timeouts: services.timeouts)
        if case .forwardProxy = kind { isForward = true } else { isForward = false }
        self.handed = upstream.map { ($0, upstreamEarlyBytes) }
        self.routing = ForwardRouting(credentials: services.proxyCredentials, ownAddresses: services.ownAddresses)
        owner.attach(self)
        let owner = self.owner
        deadlines.exchangeStalled = { owner.object?.exchangeTimedOut() }
        deadlines.idle = { owner.object?.finish(nil) }
        deadlines.holdEnded = { owner.object?.upstreamHoldEnded() }
        let limit = TimeoutText.seconds(services.timeouts.requestHeaders)
        deadlines.headersLate = {
            guard let layer = owner.object else { return }
            let reason = "the request headers did not arrive within \(limit)"
            // Refused requests are logged at notice, this one too (no head to name: it never came whole).
            layer.services.logger.notice("\(layer.record.peer): refused (408): \(reason)")
            layer.respondWithError(status: 408, reason: reason)
        }
    }

    deinit { owner.sever() }

    /// Runs once the layer is current.
    func start() {
        if let (up, early) = handed {
            handed = nil
            let first = host.adoptLeg(up, early: early, for: self, via: isForward)
            leg = first
            first.upstream(up, .ready)
        }
        deadlines.betweenExchanges(holdingLeg: leg != nil)
        client.start()
        updateReading()
    }

    // MARK: - Client side

    func clientData(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
        let corked = leg
        corked?.cork()
        defer { corked?.uncork() }
        var events = spareEvents.take()
        defer { spareEvents.giveBack(&events) }
        do { try parser.feed(bytes, into: &events) } catch {
            services.logger.notice("\(record.peer): refused a malformed request (\(error.status)): \(error.reason)")
            respondWithError(status: error.status, reason: error.reason)
            return
        }
        if exchange == nil, !parser.isIdle, !connectPending { deadlines.headersStarted() }
        handle(&events)
    }

    @exclusivity(unchecked) private var spareEvents = SpareHTTP1Events()

    /// Handles `events` in order; each is moved out of the array as it is
    /// handled (a head is not copied, nor released twice), and those left
    /// waiting go to the backlog as they are.
    func handle(_ events: inout [HTTP1Event]) {
        for index in events.indices {
            guard !closed, !handedOver else { return }
            if connectPending, let head = pendingConnect {
                if case .upgrade(let tail) = events[index] {
                    pendingConnect = nil
                    handedOver = true
                    deadlines.cancel()
                    leg?.close()  // a keep-alive leg of an earlier request has no use after CONNECT
                    leg = nil
                    let next = ConnectLayer.connect(head, tail: tail, host: host, services: services, record: record)
                    host.switchLayer(to: next)
                    next.start()
                    return
                }
                continue  // the CONNECT request's end
            }
            if (leg?.holdsRequest ?? false) || (exchange?.requestEnded ?? false) {
                // The request waits for its upstream, or a pipelined one for the response.
                backlog.append(contentsOf: events[index...])
                updateReading()
                return
            }
            switch events.take(at: index) {
            case .requestHead(let head): begin(head)
            case .body(let bytes): requestBody(bytes)
            case .end(let trailers): requestEnd(trailers)
            case .upgrade, .raw, .responseHead: break
            }
        }
    }

    private func begin(_ head: HTTP1RequestHead) {
        deadlines.exchangeProgressed()
        requestCount += 1
        if requestCount == 1 { tlsOutcome?.outcome.firstRequest() }
        let target: UpstreamTarget
        switch kind {
        case .failing(let status, let reason, _):
            return respondWithError(status: status, reason: reason, request: head, headers: RequestDestination.proxyStatus(for: status))
        case .origin(let fixed):
            target = fixed
        case .forwardProxy:
            switch routing.route(head) {
            case .connect:
                pendingConnect = head
                return
            case .upstream(let forwarded):
                target = forwarded
            case .refuse(let status, let reason, let log):
                if let log { services.logger.notice("\(record.peer): \(log)") }
                return respondWithError(status: status, reason: reason, request: head)
            case .selfAddressed(let own, let name, let port):
                record.recordSelfAddressed(own, host: name, port: port)
                return respondWithError(status: 403, reason: own.refusal, request: head)
            case .authenticate(let log):
                services.logger.notice("\(record.peer): \(log)")
                client.send(ForwardRouting.authenticationRequired(head))
                clientMayStillSend = true
                return finish(nil)
            }
        }
        let names = targetNames.names(of: target)
        exchange = HTTP1Exchange(request: head, target: target, names: names,
                                 requestBody: record.makeBodyCapture(), responseBody: record.makeBodyCapture())
        guard let leg = legFor(target) else { return }
        leg.send(head, names: names)
        if leg.holdsRequest { updateReading() }
    }

    /// Handles the client's events that waited (for the upstream, or for a response).
    func replayBacklog() {
        var pending: [HTTP1Event] = []
        swap(&pending, &backlog)
        handle(&pending)
        updateReading()
    }

    @exclusivity(unchecked) private var targetNames = TargetNames.Cache()
    private let routing: ForwardRouting

    private func requestBody(_ bytes: ArraySlice<UInt8>) {
        guard let current = exchange, let leg else { return }
        current.requestBody.append(bytes)
        leg.sendBody(bytes)
        updateReading()
    }

    private func requestEnd(_ trailers: HTTPHeaders) {
        guard let current = exchange else { return }
        current.requestEnded = true
        current.requestSent = Date()
        leg?.endRequest(trailers)
        if current.responseFraming != nil && current.response != nil && responseComplete { finishExchange() }
        updateReading()
    }

    func clientEnded(_ end: TransportEnd) { finish(end) }

    func clientDrained() {
        if exchange != nil { deadlines.exchangeProgressed() }
        leg?.clientDrained()
        updateReading()
    }

    /// Reading the client is allowed only between exchanges or while the
    /// current request body flows, and only while the upstream keeps up.
    func updateReading() {
        guard !closed, !handedOver else { return }
        let upstreamHolds = leg.map { $0.holdsRequest || $0.isBackedUp } ?? false
        let wantClient = !connectPending && !upstreamHolds && backlog.isEmpty && !(exchange?.requestEnded ?? false)
            && !parser.isAwaitingUpgradeDecision
        if wantClient { client.resumeReading() } else { client.pauseReading() }
        leg?.readResponses(!client.outputIsCongested)
    }

    // MARK: - Completing exchanges

    func finishExchange() {
        guard let current = exchange else { return }
        recordFlow()
        exchange = nil
        responseComplete = false
        let keepClient = current.responseKeepsClient && current.requestEnded && !draining
        if let done = leg, !done.exchangeEnded(upstreamKeepAlive: current.upstreamKeepAlive, requestEnded: current.requestEnded) {
            done.close()
            if leg === done { leg = nil }
        }
        if !keepClient {
            finish(nil)
            return
        }
        if current.request.requestsUpgrade {
            do { backlog += try parser.declineUpgrade() } catch {
                return respondWithError(status: error.status, reason: error.reason)
            }
        }
        deadlines.betweenExchanges(holdingLeg: leg != nil)
        replayBacklog()
    }

    /// Records the exchange's flow.
    func recordFlow() {
        guard let current = exchange else { return }
        guard record.wantsFlows else { return record.countUnbuiltFlow() }
        record.record(current.flow(clientAddress: record.peer, clientTLS: clientTLS, upstream: leg?.connection, outcome: record.outcome))
    }

    func respondWithError(status: Int, reason: String, request: HTTP1RequestHead? = nil, headers: HTTPHeaders = HTTPHeaders()) {
        guard !closed else { return }
        if let request, exchange == nil {
            let target = kind.fixedTarget
            record.record(HTTP1Exchange.answeredFlow(request, target: target, names: target.map { targetNames.names(of: $0) },
                                                     clientAddress: record.peer, clientTLS: clientTLS, status: status, reason: reason))
        } else if let current = exchange {
            current.response = FlowResponse(status: status, reason: HTTP1Response.reasonPhrase(for: status))
            current.error = reason
            recordFlow()
        }
        exchange = nil
        client.send(HTTP1Response.error(status: status, reason: reason, headers: headers))
        clientMayStillSend = true
        finish(nil)
    }

    /// After `101 Switching Protocols`: the bytes the parser held go on, and
    /// the connection becomes a raw tunnel to the same upstream.
    func switchProtocols(tail: ArraySlice<UInt8>) {
        guard let up = leg?.takeConnectionForTunnel() else { return finish(nil) }
        recordFlow()
        handedOver = true
        let held = parser.acceptUpgrade()
        client.send(tail)
        up.send(held)
        leg = nil
        deadlines.cancel()
        let tunnel = TunnelLayer(host: host, record: record, logger: services.logger, idleTimeout: nil, endsOnDrain: false)
        host.switchLayer(to: tunnel)
        tunnel.relay(up)
    }

    // MARK: - Lifetime

    /// The upstream hold ran out: the leg goes, and the idle timeout runs for the rest.
    private func upstreamHoldEnded() {
        guard !closed, !handedOver else { return }
        if exchange == nil && parser.isIdle && backlog.isEmpty && !connectPending { releaseIdleLeg() }
        deadlines.afterHold()
    }

    /// The exchange made no progress for the upstream-response timeout: 504
    /// if nothing was answered yet, else the client is cut off.
    private func exchangeTimedOut() {
        guard let current = exchange else { return }
        let seconds = TimeoutText.seconds(services.timeouts.upstreamResponse)
        let reason = current.responseFraming == nil ? "the upstream sent no response within \(seconds)" : "the exchange made no progress for \(seconds)"
        upstreamFailed(UpstreamFailure(reason: reason, verificationFailed: false, answerStatus: 504))
    }

    /// Stops after the current exchange (or now, when idle).
    func drain() {
        draining = true
        if exchange == nil && parser.isIdle { finish(nil) }
    }

    /// Records the exchange in progress, if any, as cut short by shutdown,
    /// so it appears in the flows and the HAR.
    func interrupt() {
        guard !closed, let current = exchange else { return }
        current.error = "interrupted by shutdown"
        recordFlow()
        exchange = nil
    }

    /// Closes the upstream; the connection closes the client.
    func close() {
        closed = true
        deadlines.cancel()
        leg?.close()
        leg = nil
    }

    func finish(_ end: TransportEnd?) {
        guard !closed else { return }
        closed = true
        deadlines.cancel()
        if let done = leg {
            // Between exchanges, the connection may serve another client connection;
            // so may one this client never sent a request on (it left after its handshake).
            if exchange == nil && !draining, let up = done.takeConnectionBetweenExchanges() {
                host.releaseUpstream(up)
            } else if exchange == nil && !draining && requestCount == 0, let up = (done as? HTTP1Leg)?.takeUnusedConnection() {
                host.releaseUpstream(up)
            } else {
                done.close()
            }
        }
        leg = nil
        client.closeAfterSending(lingering: clientMayStillSend ? Transport.unwantedInputLinger : nil)
        if requestCount == 0, let tlsOutcome { tlsOutcome.outcome.closedWithoutRequest(end, tls: tlsOutcome.tls) }
        host.finish()
    }
}
