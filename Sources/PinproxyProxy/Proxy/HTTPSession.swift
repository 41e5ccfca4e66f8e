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
/// output is congested. After `101 Switching Protocols` the two connections
/// are relayed raw.
final class HTTPSession: @unchecked Sendable {
    // Sendable: touched only on the connection's queue.
    enum Kind {
        /// An explicit proxy: requests carry absolute-form URLs, or are CONNECT.
        case forwardProxy
        /// Every request goes to this origin (interception, reverse mode).
        case origin(UpstreamTarget)
        /// Every request is answered with this error (the upstream failed).
        case failing(status: Int, reason: String, target: UpstreamTarget)
    }

    /// The exchange in progress. A class, so that updating it as bytes pass
    /// does not copy its heads and flow in and out of an optional each time.
    private final class Exchange {
        let request: HTTP1RequestHead
        let target: UpstreamTarget
        let names: TargetNames
        let upstreamFraming: HTTP1BodyFraming
        var requestEnded = false
        /// How the response goes to the client, once its head was sent.
        var responseFraming: HTTP1BodyFraming?
        /// Whether the client connection may stay open after the response.
        var responseKeepsClient = false
        var upstreamStatus = 0
        var upstreamKeepAlive = true
        var inInterim = false
        /// What the flow will show; the flow itself is built once, when it
        /// is recorded (see ``HTTPSession/recordFlow()``).
        var response: FlowResponse?
        var upstreamTLS: UpstreamTLSDetails?
        var error: String?
        var requestBody: BodyCapture
        var responseBody: BodyCapture
        let started = Date()
        var requestSent: Date?
        var firstResponseByte: Date?

        init(request: HTTP1RequestHead, target: UpstreamTarget, names: TargetNames, upstreamFraming: HTTP1BodyFraming,
             requestBody: BodyCapture, responseBody: BodyCapture) {
            self.request = request
            self.target = target
            self.names = names
            self.upstreamFraming = upstreamFraming
            self.requestBody = requestBody
            self.responseBody = responseBody
        }
    }

    let connection: ClientConnection
    let client: Transport
    let kind: Kind
    let clientTLS: ClientTLSDetails?
    private var server: ProxyServer { connection.server }
    private var queue: DispatchQueue { connection.queue }

    private var parser: HTTP1Parser
    private var upstream: Upstream?
    private var upstreamParser = HTTP1Parser(mode: .response)
    private var exchange: Exchange?
    private var backlog: [HTTP1Event] = []
    private var pendingConnect: HTTP1RequestHead? {
        didSet { connectPending = pendingConnect != nil }
    }
    /// Whether ``pendingConnect`` is set; testing the optional itself copies
    /// the whole head, and it is tested for every event and every update.
    private var connectPending = false
    private var requestCount = 0
    private var closed = false
    private var draining = false
    /// The proxy answered (or refused) a request whose body may still be
    /// arriving: the client connection is half-closed and drained rather
    /// than closed under it (see ``Transport/closeAfterSending(lingering:)``).
    private var clientMayStillSend = false
    private var headerTimerArmed = false
    private var handedOver = false

    /// Called once, when the first request head arrives.
    var onFirstRequest: (() -> Void)?
    /// Called once when the session ends: requests seen, and how the client ended (nil: closed by the proxy).
    var onFinish: ((Int, TransportEnd?) -> Void)?
    /// Forward mode: a CONNECT request and the bytes that followed it.
    var onConnect: ((HTTP1RequestHead, ArraySlice<UInt8>) -> Void)?

    init(connection: ClientConnection, client: Transport, kind: Kind, clientTLS: ClientTLSDetails?) {
        self.connection = connection
        self.client = client
        self.kind = kind
        self.clientTLS = clientTLS
        self.parser = HTTP1Parser(mode: .request)
    }

    func start(upstream initial: Upstream?) {
        if let initial { adopt(initial) }
        client.onData = { [weak self] bytes in self?.clientBytes(bytes) }
        client.onEnd = { [weak self] end in self?.clientEnded(end) }
        client.onDrained = { [weak self] in
            guard let self else { return }
            if self.exchange != nil { self.armExchangeTimer() }
            self.updateReading()
        }
        armIdleTimer()
        client.start()
        updateReading()
    }

    // MARK: - Client side

    private func clientBytes(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
        let corked = upstream?.transport
        corked?.cork()
        defer { corked?.uncork() }
        var events = takeEventBuffer()
        defer { returnEventBuffer(&events) }
        do { try parser.feed(bytes, into: &events) } catch {
            respondWithError(status: error.status, reason: error.reason)
            return
        }
        if exchange == nil, !parser.isIdle, !headerTimerArmed, !connectPending {
            headerTimerArmed = true
            connection.armTimer(server.configuration.timeouts.requestHeaders) { [weak self] in
                guard let self else { return }
                self.respondWithError(status: 408, reason: "the request headers did not arrive within \(TimeoutText.seconds(self.server.configuration.timeouts.requestHeaders))")
            }
        }
        handle(events)
    }

    /// An empty event array with room from earlier use: each slice of input
    /// would otherwise allocate and grow a new one. Taken rather than shared,
    /// so that a handler that feeds again meanwhile gets its own.
    private var spareEvents: [HTTP1Event] = []

    private func takeEventBuffer() -> [HTTP1Event] {
        var events: [HTTP1Event] = []
        swap(&events, &spareEvents)
        return events
    }

    private func returnEventBuffer(_ events: inout [HTTP1Event]) {
        events.removeAll(keepingCapacity: true)
        if events.capacity <= 64 { swap(&events, &spareEvents) }
    }

    private func handle(_ events: [HTTP1Event]) {
        for (index, event) in events.enumerated() {
            guard !closed, !handedOver else { return }
            if connectPending, let head = pendingConnect {
                if case .upgrade(let tail) = event {
                    pendingConnect = nil
                    handedOver = true
                    connection.cancelTimer()
                    client.onData = nil
                    onConnect?(head, tail)
                    return
                }
                continue  // the CONNECT request's end
            }
            if let current = exchange, current.requestEnded {
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
        if requestCount == 1 { onFirstRequest?() }
        let target: UpstreamTarget
        switch kind {
        case .failing(let status, let reason, _):
            respondWithError(status: status, reason: reason, request: head)
            return
        case .origin(let fixed):
            target = fixed
        case .forwardProxy:
            guard authorized(head) else {
                var extra = HTTPHeaders()
                extra.add(name: "Proxy-Authenticate", value: "Basic realm=\"pinproxy\"")
                client.send(HTTP1Response.error(status: 407, reason: "this proxy requires Proxy-Authorization (Basic)", headers: extra))
                clientMayStillSend = true
                finish(nil)
                return
            }
            if head.isConnect {
                pendingConnect = head
                return
            }
            guard case .absolute(let url) = head.target else {
                respondWithError(status: 400, reason: "pinproxy is a proxy: send absolute-form http:// URLs (http_proxy) or CONNECT host:port (https_proxy)", request: head)
                return
            }
            if let own = server.ownAddresses.endpoint(named: url.host, port: url.port) {
                connection.recordSelfAddressed(own, host: url.host, port: url.port)
                respondWithError(status: 403, reason: own.refusal, request: head)
                return
            }
            let tls = url.scheme == "https"
            target = UpstreamTarget(host: url.host, port: url.port, tls: tls, serverName: url.host)
        }
        let names = names(of: target)
        var host: String? = nil
        if case .reverse = server.configuration.mode, !server.configuration.keepHostHeader {
            // The client named the proxy (its address or a test host name);
            // the origin expects its own name, as it would from a direct client.
            host = names.authority
        }
        let forwarded = HTTP1Forwarding.serializedRequestForUpstream(
            head, via: isForward ? HTTP1Forwarding.defaultVia : nil, host: host)
        exchange = Exchange(request: head, target: target, names: names, upstreamFraming: forwarded.framing,
                            requestBody: server.recorder.makeBodyCapture(), responseBody: server.recorder.makeBodyCapture())
        guard let up = upstreamFor(target) else { return }
        upstreamParser.expectResponse(toMethod: head.method)
        up.transport.send(forwarded.bytes)
    }

    private var isForward: Bool { if case .forwardProxy = kind { return true } else { return false } }

    /// The request side of a flow; the URL is absolute, named by the
    /// target's server name (or as written, when there is no target).
    private func flowRequest(_ head: HTTP1RequestHead, names: TargetNames?) -> FlowRequest {
        let url: String
        if case .absolute(let absolute) = head.target { url = absolute.description }
        else if let names { url = names.urlPrefix + head.target.path }
        else { url = head.target.description }
        return FlowRequest(method: head.method, url: url, httpVersion: head.version.description,
                           headers: head.headers.fields, headersSize: -1)
    }

    /// The text forms of the last target, kept: a keep-alive connection asks
    /// for the same target's names with every request.
    private var targetNames: (target: UpstreamTarget, names: TargetNames)?

    private final class TargetNames {
        /// The host as flows show it.
        let host: String
        /// `scheme://authority` of request URLs, named by the server name.
        let urlPrefix: String
        /// The target's `Host` field value.
        let authority: String

        init(_ target: UpstreamTarget) {
            host = target.host.description
            urlPrefix = "\(target.scheme)://\(target.authority(naming: target.serverName))"
            authority = target.authority
        }
    }

    private func names(of target: UpstreamTarget) -> TargetNames {
        if let cached = targetNames, cached.target == target { return cached.names }
        let names = TargetNames(target)
        targetNames = (target, names)
        return names
    }

    private func authorized(_ head: HTTP1RequestHead) -> Bool {
        guard let credentials = server.proxyCredentials else { return true }
        return head.headers["Proxy-Authorization"].contains { value in
            let parts = value.split(separator: " ", omittingEmptySubsequences: true)
            return parts.count == 2 && parts[0].lowercased() == "basic" && parts[1] == credentials
        }
    }

    private func requestBody(_ bytes: ArraySlice<UInt8>) {
        guard let current = exchange, let up = upstream else { return }
        current.requestBody.append(bytes)
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
        if current.upstreamFraming == .chunked { upstream?.transport.send(HTTP1ChunkedEncoder.end(trailers: HTTP1Forwarding.forwardableTrailers(trailers))) }
        if current.responseFraming != nil && current.response != nil && responseComplete { finishExchange() }
        updateReading()
    }

    private var responseComplete = false

    private func clientEnded(_ end: TransportEnd) {
        guard !closed else { return }
        finish(end)
    }

    /// Reading the client is allowed only between exchanges or while the
    /// current request body flows, and only while the upstream keeps up.
    private func updateReading() {
        guard !closed, !handedOver else { return }
        let upstreamCongested = upstream?.transport.outputIsCongested ?? false
        let wantClient = !connectPending && backlog.isEmpty && !(exchange?.requestEnded ?? false) && !upstreamCongested
            && !parser.isAwaitingUpgradeDecision
        if wantClient { client.resumeReading() } else { client.pauseReading() }
        if let up = upstream {
            if client.outputIsCongested { up.transport.pauseReading() } else { up.transport.resumeReading() }
        }
    }

    // MARK: - Upstream side

    private func upstreamFor(_ target: UpstreamTarget) -> Upstream? {
        if let refusal = upstreamRefusal, refusal.target == target {
            upstreamFailed(refusal.reason)
            return nil
        }
        if let up = upstream, up.target == target, !up.transport.isClosed, up.transport.endReason == nil {
            return up
        }
        upstream?.transport.close()
        upstream = nil
        upstreamParser = HTTP1Parser(mode: .response)
        var opened: Upstream?
        opened = Upstream.open(target, server: server, queue: queue) { [weak self] failure in
            guard let self, !self.closed else { opened?.transport.close(); return }
            guard let up = opened, self.upstream === up else { return }
            if let failure {
                self.upstream = nil
                self.upstreamFailed(failure)
                return
            }
            self.adopt(up)
        }
        guard let up = opened else {
            // Resolution failed synchronously; the failure arrives asynchronously.
            let placeholder = target
            queue.later { [weak self] in
                guard let self, !self.closed, self.exchange?.target == placeholder else { return }
                self.upstreamFailed("cannot connect to \(placeholder.host.uriHost):\(placeholder.port)")
            }
            return nil
        }
        upstream = up
        up.transport.onEnd = { [weak self] end in
            guard let self, self.upstream === up else { return }
            self.upstream = nil
            self.upstreamFailed(UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls).reason)
        }
        return up
    }

    /// Set when the upstream refused with a fatal alert before the first
    /// request (a required client certificate): every request gets a 502.
    private var upstreamRefusal: (target: UpstreamTarget, reason: String)?

    private func adopt(_ up: Upstream) {
        if let end = up.transport.endReason {
            // It ended between its handshake and this session taking it over.
            up.transport.close()
            let failure = UpstreamFailure.ended(end, target: up.target, tls: up.transport.tls)
            if failure.isRefusal { upstreamRefusal = (up.target, failure.reason) }
            upstream = nil
            if exchange != nil { upstreamFailed(failure.reason) }
            return
        }
        upstream = up
        up.transport.onData = { [weak self] bytes in self?.upstreamBytes(bytes) }
        up.transport.onEnd = { [weak self] end in self?.upstreamEnded(end, up) }
        up.transport.onDrained = { [weak self] in self?.updateReading() }
        up.transport.start()
        if let flowTLS = up.tlsDetails, let current = exchange {
            current.upstreamTLS = flowTLS
        }
    }

    private func upstreamBytes(_ bytes: ArraySlice<UInt8>) {
        guard !closed else { return }
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
                // A final answer before the request body is complete (an early
                // 401 or 413): the connection cannot carry another request,
                // so the client is told at once that it closes after this one.
                let forClient = HTTP1Forwarding.serializedResponseForClient(
                    head, to: current.request, closeConnection: draining || !current.requestEnded,
                    via: isForward ? HTTP1Forwarding.defaultVia : nil)
                current.responseFraming = forClient.framing
                current.responseKeepsClient = forClient.keepAlive
                current.upstreamStatus = head.status
                current.upstreamKeepAlive = head.keepAlive
                current.response = FlowResponse(status: head.status, reason: head.reason, httpVersion: head.version.description,
                                                headers: head.headers.fields)
                client.send(forClient.bytes)
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

    private func upstreamEnded(_ end: TransportEnd, _ up: Upstream) {
        guard upstream === up, !closed else { return }
        upstream = nil
        up.transport.close()
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

    private func upstreamFailed(_ failure: UpstreamFailure) {
        if let own = failure.selfAddressed, let current = exchange {
            connection.recordSelfAddressed(own, host: current.target.host, port: current.target.port)
        }
        upstreamFailed(failure.reason, status: failure.status)
    }

    /// The upstream failed during an exchange: `status` (502) if nothing was sent yet, else cut the client off.
    private func upstreamFailed(_ reason: String, status: Int = 502) {
        guard !closed else { return }
        upstream?.transport.close()
        upstream = nil
        if let current = exchange {
            current.error = reason
            if current.responseFraming == nil {
                respondWithError(status: status, reason: reason, request: current.request)
                return
            }
            recordFlow()
            server.logger.notice("\(connection.peer): \(reason); closing the client connection mid-response")
            client.close()
            finish(nil)
        }
    }

    private func switchProtocols(tail: ArraySlice<UInt8>) {
        guard let up = upstream else { return finish(nil) }
        recordFlow()
        handedOver = true
        let held = parser.acceptUpgrade()
        client.send(tail)
        up.transport.send(held)
        upstream = nil
        connection.cancelTimer()
        Relay.pipe(client, up.transport) { [weak self] in self?.finish(nil) }
    }

    // MARK: - Completing exchanges

    private func finishExchange() {
        guard let current = exchange else { return }
        recordFlow()
        exchange = nil
        responseComplete = false
        let keepClient = current.responseKeepsClient && current.requestEnded && !draining
        if !current.upstreamKeepAlive {
            upstream?.transport.close()
            upstream = nil
            upstreamParser = HTTP1Parser(mode: .response)
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
        let pending = backlog
        backlog = []
        handle(pending)
        updateReading()
    }

    /// Builds the exchange's flow, in one go, and records it.
    private func recordFlow() {
        guard let current = exchange else { return }
        let now = Date()
        var request = flowRequest(current.request, names: current.names)
        request.bodySize = current.requestBody.size
        request.body = current.requestBody.captured
        current.response?.bodySize = current.responseBody.size
        current.response?.body = current.responseBody.captured
        let sent = current.requestSent ?? now
        let first = current.firstResponseByte ?? now
        let connectTimings = upstream?.takeConnectTimings() ?? (connect: -1, ssl: -1)
        let timings = FlowTimings(
            connect: connectTimings.connect, ssl: connectTimings.ssl,
            send: max(0, sent.timeIntervalSince(current.started) * 1000),
            wait: max(0, first.timeIntervalSince(sent) * 1000),
            receive: max(0, now.timeIntervalSince(first) * 1000))
        server.record(Flow(
            startedAt: current.started, clientAddress: connection.peer, scheme: current.target.scheme,
            host: current.names.host, port: current.target.port, request: request, response: current.response,
            timings: timings, clientTLS: clientTLS, upstreamTLS: current.upstreamTLS ?? upstream?.tlsDetails,
            outcome: connection.outcome, error: current.error))
    }

    private func respondWithError(status: Int, reason: String, request: HTTP1RequestHead? = nil) {
        guard !closed else { return }
        if let request, exchange == nil {
            let target: UpstreamTarget? = {
                switch kind {
                case .origin(let t), .failing(_, _, let t): return t
                case .forwardProxy: return nil
                }
            }()
            var flow = Flow(clientAddress: connection.peer, scheme: target?.scheme ?? "http",
                            host: target?.host.description ?? "", port: target?.port ?? 0,
                            request: flowRequest(request, names: target.map(names(of:))),
                            clientTLS: clientTLS, error: reason)
            flow.response = FlowResponse(status: status, reason: HTTP1Response.reasonPhrase(for: status))
            server.record(flow)
        } else if let current = exchange {
            current.response = FlowResponse(status: status, reason: HTTP1Response.reasonPhrase(for: status))
            current.error = reason
            recordFlow()
        }
        exchange = nil
        client.send(HTTP1Response.error(status: status, reason: reason))
        clientMayStillSend = true
        finish(nil)
    }

    // MARK: - Lifetime

    /// An exchange that makes no progress for the upstream-response timeout
    /// is ended: 504 if nothing was answered yet, else the client is cut off.
    private func armExchangeTimer() {
        connection.armTimer(server.configuration.timeouts.upstreamResponse, exchangeTimeout)
    }

    private func armIdleTimer() {
        headerTimerArmed = false
        connection.armTimer(server.configuration.timeouts.idle, idleTimeout)
    }

    // The timer actions, made once per session rather than once per arming
    // (the exchange timer is re-armed for every slice of a response).
    private lazy var exchangeTimeout: () -> Void = { [weak self] in
        guard let self, let current = self.exchange else { return }
        let seconds = self.server.configuration.timeouts.upstreamResponse
        if current.responseFraming == nil {
            self.upstream?.transport.close()
            self.upstream = nil
            self.respondWithError(status: 504, reason: "the upstream sent no response within \(TimeoutText.seconds(seconds))", request: nil)
        } else {
            self.upstreamFailed("the exchange made no progress for \(TimeoutText.seconds(seconds))")
        }
    }

    private lazy var idleTimeout: () -> Void = { [weak self] in self?.finish(nil) }

    /// Stops after the current exchange (or now, when idle).
    func drain() {
        draining = true
        if exchange == nil && parser.isIdle { finish(nil) }
    }

    /// Records the exchange in progress, if any, as cut short by `reason`
    /// (shutdown), so it appears in the flows and the HAR.
    func interrupt(_ reason: String) {
        guard !closed, let current = exchange else { return }
        current.error = reason
        recordFlow()
        exchange = nil
    }

    /// Closes the upstream; the connection closes the client.
    func close() {
        closed = true
        upstream?.transport.close()
        upstream = nil
    }

    private func finish(_ end: TransportEnd?) {
        guard !closed else { return }
        closed = true
        upstream?.transport.close()
        upstream = nil
        client.closeAfterSending(lingering: clientMayStillSend ? Transport.unwantedInputLinger : nil)
        let handler = onFinish
        onFinish = nil
        handler?(requestCount, end)
    }
}
