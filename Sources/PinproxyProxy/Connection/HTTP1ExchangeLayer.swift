import Dispatch
import Foundation
import PinproxyCertificates
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
/// The client side (this file): parsing requests, routing them, reading
/// control and the layer's timers. The upstream side is in
/// `HTTP1ExchangeLayer+Upstream.swift`; an upstream that speaks only HTTP/2
/// is found out in `+HTTP2Detection.swift` and spoken to, one stream per
/// request, in `+HTTP2Upstream.swift`.
final class HTTP1ExchangeLayer: ConnectionLayer {
    enum Kind {
        /// An explicit proxy: requests carry absolute-form URLs, or are CONNECT.
        case forwardProxy
        /// Every request goes to this origin (interception, reverse mode).
        case origin(UpstreamTarget)
        /// Every request is answered with this error (the upstream failed).
        case failing(status: Int, reason: String, target: UpstreamTarget)
    }

    unowned let host: any LayerHost
    let client: Transport
    let kind: Kind
    let clientTLS: ClientTLSDetails?
    let services: ConnectionServices
    let record: ConnectionRecord
    /// Intercepted connections: the first request, or a close without one, completes the TLS outcome.
    private let tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)?
    let timer: DeadlineTimer
    let isForward: Bool

    // Per-request state, confined to the connection's queue: its stored
    // properties skip Swift's run-time exclusivity checks, which cost about
    // 6% of the instructions per keep-alive request across the proxy (see
    // docs/architecture.md, "Exclusivity checks"); the same holds for the
    // other `@exclusivity(unchecked)` properties of the connection's layers.
    @exclusivity(unchecked) private var parser = HTTP1Parser(mode: .request)
    @exclusivity(unchecked) var upstream: Upstream?
    @exclusivity(unchecked) var upstreamParser = HTTP1Parser(mode: .response)
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
    @exclusivity(unchecked) private var headerTimerArmed = false
    /// The connection went on to another layer (CONNECT or an upgrade).
    @exclusivity(unchecked) var handedOver = false
    @exclusivity(unchecked) var responseComplete = false
    /// The upstream's last exchange is complete (request sent, response read,
    /// kept alive) and no other began: it may go to the idle pool.
    @exclusivity(unchecked) var upstreamBetweenExchanges = false
    /// Set when the upstream refused with a fatal alert before the first
    /// request (a required client certificate): every request gets a 502.
    @exclusivity(unchecked) var upstreamRefusal: (target: UpstreamTarget, reason: String)?
    /// The upstream speaks only HTTP/2: requests go as its streams.
    @exclusivity(unchecked) var http2Leg: HTTP2UpstreamLeg?
    /// The current request, serialised for HTTP/1.1, held until the upstream
    /// is ready and its protocol known (it may speak only HTTP/2).
    @exclusivity(unchecked) var heldRequest: [UInt8]?
    /// What the upstream sent before this layer was current (an HTTP/2 server's SETTINGS).
    @exclusivity(unchecked) var upstreamEarlyBytes: [UInt8]

    init(host: any LayerHost, services: ConnectionServices, record: ConnectionRecord, kind: Kind, clientTLS: ClientTLSDetails?,
         tlsOutcome: (outcome: ClientTLSOutcome, tls: TLSConnection)? = nil, upstream: Upstream? = nil,
         upstreamRefusal: (target: UpstreamTarget, reason: String)? = nil, upstreamEarlyBytes: [UInt8] = []) {
        self.host = host
        self.client = host.client
        self.services = services
        self.record = record
        self.kind = kind
        self.clientTLS = clientTLS
        self.tlsOutcome = tlsOutcome
        self.timer = DeadlineTimer(queue: host.client.queue)
        if case .forwardProxy = kind { isForward = true } else { isForward = false }
        self.upstream = upstream
        self.upstreamRefusal = upstreamRefusal
        self.upstreamEarlyBytes = upstreamEarlyBytes
        exchangeTimeout = { [weak self] in self?.exchangeTimedOut() }
        idleTimeout = { [weak self] in self?.finish(nil) }
    }

    /// Runs once the layer is current.
    func start() {
        if let up = upstream { adopt(up) }
        armIdleTimer()
        client.start()
        updateReading()
    }

    // MARK: - Client side

    func clientData(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
        let corked = upstream?.transport
        corked?.cork()
        defer { corked?.uncork() }
        var events = takeEventBuffer()
        defer { returnEventBuffer(&events) }
        do { try parser.feed(bytes, into: &events) } catch {
            services.logger.notice("\(record.peer): refused a malformed request (\(error.status)): \(error.reason)")
            respondWithError(status: error.status, reason: error.reason)
            return
        }
        if exchange == nil, !parser.isIdle, !headerTimerArmed, !connectPending {
            headerTimerArmed = true
            let limit = services.timeouts.requestHeaders
            timer.arm(limit) { [weak self] in
                self?.respondWithError(status: 408, reason: "the request headers did not arrive within \(TimeoutText.seconds(limit))")
            }
        }
        handle(events)
    }

    /// An empty event array with room from earlier use: each slice of input
    /// would otherwise allocate and grow a new one. Taken rather than shared,
    /// so that a handler that feeds again meanwhile gets its own.
    @exclusivity(unchecked) private var spareEvents: [HTTP1Event] = []

    func takeEventBuffer() -> [HTTP1Event] {
        var events: [HTTP1Event] = []
        swap(&events, &spareEvents)
        return events
    }

    func returnEventBuffer(_ events: inout [HTTP1Event]) {
        events.removeAll(keepingCapacity: true)
        if events.capacity <= 64 { swap(&events, &spareEvents) }
    }

    func handle(_ events: [HTTP1Event]) {
        for (index, event) in events.enumerated() {
            guard !closed, !handedOver else { return }
            if connectPending, let head = pendingConnect {
                if case .upgrade(let tail) = event {
                    pendingConnect = nil
                    handedOver = true
                    timer.cancel()
                    // A keep-alive upstream of an earlier request has no use after CONNECT.
                    upstream?.transport.close()
                    upstream = nil
                    let next = ConnectLayer.connect(head, tail: tail, host: host, services: services, record: record)
                    host.switchLayer(to: next)
                    next.start()
                    return
                }
                continue  // the CONNECT request's end
            }
            if heldRequest != nil || (exchange?.requestEnded ?? false) {
                // The request waits for its upstream, or a pipelined one for the response.
                backlog.append(contentsOf: events[index...])
                updateReading()
                return
            }
            switch event {
            case .requestHead(let head): begin(head)
            case .body(let bytes): requestBody(bytes)
            case .end(let trailers): requestEnd(trailers)
            case .upgrade, .raw, .responseHead: break
            }
        }
    }

    private func begin(_ head: HTTP1RequestHead) {
        headerTimerArmed = false
        armExchangeTimer()
        requestCount += 1
        if requestCount == 1 { tlsOutcome?.outcome.firstRequest() }
        let target: UpstreamTarget
        switch kind {
        case .failing(let status, let reason, _):
            // Said by the proxy, not the upstream, in the words of RFC 9209: `pin --connect
            // --proxy` reads it to tell the proxy's stand-in chain from one forged from the upstream's.
            var proxyStatus = HTTPHeaders()
            proxyStatus.add(name: "Proxy-Status", value: "pinproxy; error=\(status == 403 ? "destination_ip_prohibited" : "destination_unavailable")")
            respondWithError(status: status, reason: reason, request: head, headers: proxyStatus)
            return
        case .origin(let fixed):
            target = fixed
        case .forwardProxy:
            if head.isConnect {
                // The CONNECT layer checks it (Proxy-Authorization included)
                // once the parser has handed over the bytes after it.
                pendingConnect = head
                return
            }
            guard ProxyAuthorization.allows(head, credentials: services.proxyCredentials) else {
                services.logger.notice("\(record.peer): \(head.method) \(head.target) refused (407): \(ProxyAuthorization.logReason(head))")
                var extra = HTTPHeaders()
                extra.add(name: "Proxy-Authenticate", value: "Basic realm=\"pinproxy\"")
                client.send(HTTP1Response.error(status: 407, reason: ProxyAuthorization.refusal, headers: extra))
                clientMayStillSend = true
                finish(nil)
                return
            }
            guard case .absolute(let url) = head.target else {
                services.logger.notice("\(record.peer): \(head.method) \(head.target) refused (400): not an absolute http:// URL; the client treats the proxy as an origin")
                respondWithError(status: 400, reason: "pinproxy is a proxy: send absolute-form http:// URLs (http_proxy) or CONNECT host:port (https_proxy)", request: head)
                return
            }
            if let own = services.ownAddresses.endpoint(named: url.host, port: url.port) {
                record.recordSelfAddressed(own, host: url.host, port: url.port)
                respondWithError(status: 403, reason: own.refusal, request: head)
                return
            }
            target = UpstreamTarget(host: url.host, port: url.port, tls: url.scheme == "https", serverName: url.host)
        }
        let names = targetNames.names(of: target)
        let forwarded = forwardedRequest(head, names: names)
        exchange = HTTP1Exchange(request: head, target: target, names: names, upstreamFraming: forwarded.framing,
                                 requestBody: record.makeBodyCapture(), responseBody: record.makeBodyCapture())
        guard let up = upstreamFor(target) else { return }
        upstreamBetweenExchanges = false
        if let leg = activeHTTP2Leg { return sendRequestOverHTTP2(leg) }
        if holdsRequests(for: up) {
            heldRequest = forwarded.bytes
            return updateReading()
        }
        upstreamParser.expectResponse(toMethod: head.method)
        up.transport.send(forwarded.bytes)
    }

    /// Handles the client's events that waited (for the upstream, or for a response).
    func replayBacklog() {
        let pending = backlog
        backlog = []
        handle(pending)
        updateReading()
    }

    @exclusivity(unchecked) private var targetNames = TargetNames.Cache()

    private func requestBody(_ bytes: ArraySlice<UInt8>) {
        guard let current = exchange, let up = upstream else { return }
        current.requestBody.append(bytes)
        if let leg = activeHTTP2Leg {
            sendRequestBodyOverHTTP2(bytes, leg)
            return updateReading()
        }
        if current.upstreamFraming == .chunked {
            up.transport.send(HTTP1ChunkedEncoder.chunk(bytes))
        } else {
            up.transport.send(bytes)
        }
        updateReading()
    }

    private func requestEnd(_ trailers: HTTPHeaders) {
        guard let current = exchange else { return }
        current.requestEnded = true
        current.requestSent = Date()
        if let leg = activeHTTP2Leg {
            endRequestOverHTTP2(trailers, leg)
        } else if current.upstreamFraming == .chunked {
            upstream?.transport.send(HTTP1ChunkedEncoder.end(trailers: HTTP1Forwarding.forwardableTrailers(trailers)))
        }
        if current.responseFraming != nil && current.response != nil && responseComplete { finishExchange() }
        updateReading()
    }

    func clientEnded(_ end: TransportEnd) {
        guard !closed else { return }
        finish(end)
    }

    func clientDrained() {
        if exchange != nil { armExchangeTimer() }
        if let leg = activeHTTP2Leg { clientDrainedOverHTTP2(leg) }
        updateReading()
    }

    /// Reading the client is allowed only between exchanges or while the
    /// current request body flows, and only while the upstream keeps up.
    func updateReading() {
        guard !closed, !handedOver else { return }
        let upstreamCongested = (upstream?.transport.outputIsCongested ?? false) || (activeHTTP2Leg?.requestBodyBacklogged ?? false)
        let wantClient = !connectPending && heldRequest == nil && backlog.isEmpty && !(exchange?.requestEnded ?? false) && !upstreamCongested
            && !parser.isAwaitingUpgradeDecision
        if wantClient { client.resumeReading() } else { client.pauseReading() }
        if let up = upstream {
            // An HTTP/2 upstream is held by its windows instead (body consumed once the client took it).
            if client.outputIsCongested && activeHTTP2Leg == nil { up.transport.pauseReading() } else { up.transport.resumeReading() }
        }
    }

    // MARK: - Completing exchanges

    func finishExchange() {
        guard let current = exchange else { return }
        recordFlow()
        exchange = nil
        responseComplete = false
        let keepClient = current.responseKeepsClient && current.requestEnded && !draining
        if !current.upstreamKeepAlive {
            upstream?.transport.close()
            upstream = nil
            upstreamParser = HTTP1Parser(mode: .response)
        } else {
            upstreamBetweenExchanges = current.requestEnded && upstreamParser.isIdle
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
        armIdleTimer()
        replayBacklog()
    }

    /// Records the exchange's flow.
    func recordFlow() {
        guard let current = exchange else { return }
        record.record(current.flow(clientAddress: record.peer, clientTLS: clientTLS, upstream: upstream, outcome: record.outcome))
    }

    func respondWithError(status: Int, reason: String, request: HTTP1RequestHead? = nil, headers: HTTPHeaders = HTTPHeaders()) {
        guard !closed else { return }
        if let request, exchange == nil {
            let target: UpstreamTarget? = {
                switch kind {
                case .origin(let t), .failing(_, _, let t): return t
                case .forwardProxy: return nil
                }
            }()
            var flow = Flow(clientAddress: record.peer, scheme: target?.scheme ?? "http",
                            host: target?.host.description ?? "", port: target?.port ?? 0,
                            request: HTTP1Exchange.flowRequest(request, names: target.map { targetNames.names(of: $0) }),
                            clientTLS: clientTLS, error: reason)
            flow.response = FlowResponse(status: status, reason: HTTP1Response.reasonPhrase(for: status))
            record.record(flow)
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
        guard let up = upstream else { return finish(nil) }
        recordFlow()
        handedOver = true
        let held = parser.acceptUpgrade()
        client.send(tail)
        up.transport.send(held)
        upstream = nil
        timer.cancel()
        let tunnel = TunnelLayer(host: host, record: record, logger: services.logger, idleTimeout: nil, endsOnDrain: false)
        host.switchLayer(to: tunnel)
        tunnel.relay(up)
    }

    // MARK: - Lifetime

    /// An exchange that makes no progress for the upstream-response timeout
    /// is ended: 504 if nothing was answered yet, else the client is cut off.
    func armExchangeTimer() {
        timer.arm(services.timeouts.upstreamResponse, exchangeTimeout)
    }

    private func armIdleTimer() {
        headerTimerArmed = false
        timer.arm(services.timeouts.idle, idleTimeout)
    }

    // The timer actions, made once per layer rather than once per arming
    // (the exchange timer is re-armed for every slice of a response).
    @exclusivity(unchecked) private var exchangeTimeout: () -> Void = {}
    @exclusivity(unchecked) private var idleTimeout: () -> Void = {}

    private func exchangeTimedOut() {
        guard let current = exchange else { return }
        let seconds = services.timeouts.upstreamResponse
        if current.responseFraming == nil {
            upstream?.transport.close()
            upstream = nil
            respondWithError(status: 504, reason: "the upstream sent no response within \(TimeoutText.seconds(seconds))", request: nil)
        } else {
            upstreamFailed("the exchange made no progress for \(TimeoutText.seconds(seconds))")
        }
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
        timer.cancel()
        upstream?.transport.close()
        upstream = nil
    }

    func finish(_ end: TransportEnd?) {
        guard !closed else { return }
        closed = true
        timer.cancel()
        if let up = upstream {
            // Between exchanges, the upstream may serve another client connection.
            if upstreamBetweenExchanges && exchange == nil && !draining { host.releaseUpstream(up) } else { up.transport.close() }
        }
        upstream = nil
        client.closeAfterSending(lingering: clientMayStillSend ? Transport.unwantedInputLinger : nil)
        if requestCount == 0, let tlsOutcome { tlsOutcome.outcome.closedWithoutRequest(end, tls: tlsOutcome.tls) }
        host.finish()
    }
}
