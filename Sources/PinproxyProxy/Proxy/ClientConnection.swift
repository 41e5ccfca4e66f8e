import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyTLS

/// One client connection, from accept to close, on its own serial queue.
///
/// The data path, in order:
/// 1. forward mode: an ``HTTPSession`` reads plain requests; absolute-form
///    `http://` requests are forwarded, `CONNECT host:port` comes back here;
/// 2. after `200 Connection established`, the first bytes decide: a TLS
///    record starts interception, anything else is tunnelled raw;
/// 3. interception pauses the client handshake at the ClientHello, connects
///    upstream with the same SNI and verifies it, asks the attack profile for
///    the chain to show, finishes the handshake, and hands the TLS stream to
///    a new ``HTTPSession`` bound to that upstream;
/// 4. the client's TLS outcome becomes a ``TLSOutcomeEvent``: `intercepted`
///    at its first request, or how it refused.
final class ClientConnection: @unchecked Sendable {
    // Sendable: all state is touched only on `queue`.
    let server: ProxyServer
    let queue: DispatchQueue
    private let loop: EventLoop
    let client: Transport
    let peer: String
    private var session: HTTPSession?
    private var finished = false

    // Interception state.
    private var connectHost: HostName?
    private var connectPort = 443
    private var requestedHost: HostName?
    private var sni: String?
    /// Chosen once, at the ClientHello (or at CONNECT for passthrough): a
    /// connection keeps it whatever the rules become meanwhile.
    private var profile: AttackProfile?
    private var upstream: Upstream?
    private var presentedLeaf: Certificate?
    private var outcomeRecorded = false
    private var handshakeDone = false
    private var upstreamTLSForSession: Bool = true

    init(fd: Int32, server: ProxyServer) {
        self.server = server
        self.loop = server.loops.nextLoop()
        self.queue = loop.queue
        self.client = Transport(fd: fd, queue: queue)
        self.peer = Socket.peerName(fd)
    }

    func start() {
        // Through the loop's mailbox: a busy loop keeps its queue for a
        // while, and a new client should not wait for it.
        loop.execute { [self] in
            switch server.configuration.mode {
            case .forward:
                let session = HTTPSession(connection: self, client: client, kind: .forwardProxy, clientTLS: nil)
                session.onConnect = { [weak self] head, tail in self?.handleConnect(head, tail: tail) }
                session.onFinish = { [weak self] _, _ in self?.finish() }
                self.session = session
                session.start(upstream: nil)
            case .reverse(let scheme, let host, let port):
                connectHost = host
                connectPort = port
                upstreamTLSForSession = scheme == "https"
                client.onEnd = { [weak self] _ in self?.finish() }
                client.onData = { [weak self] bytes in self?.sniff(bytes, reverse: true) }
                armTimer(server.configuration.timeouts.handshake) { [weak self] in self?.finish() }
                client.start()
            }
        }
    }

    // MARK: - CONNECT

    private func handleConnect(_ head: HTTP1RequestHead, tail: ArraySlice<UInt8>) {
        // The plain-HTTP session is done with this socket.
        client.onData = nil
        client.onDrained = nil
        session = nil
        guard case .authority(let host, let port) = head.target, (1...65535).contains(port) else {
            client.send(HTTP1Response.error(status: 400, reason: "CONNECT needs host:port with a port from 1 to 65535"))
            client.closeAfterSending(lingering: Transport.unwantedInputLinger)
            finish()
            return
        }
        connectHost = host
        connectPort = port
        if let own = server.ownAddresses.endpoint(named: host, port: port) {
            recordSelfAddressed(own, host: host, port: port)
            client.send(HTTP1Response.error(status: 403, reason: own.refusal))
            client.closeAfterSending(lingering: Transport.unwantedInputLinger)
            finish()
            return
        }
        client.send(HTTP1Response.connectionEstablished)
        client.onEnd = { [weak self] _ in self?.finish() }
        if server.rules.profile(for: host) == .passthrough {
            recordPassthrough(host: host)
            tunnel(to: host, port: port, initial: tail)
            return
        }
        armHandshakeTimer()
        if !tail.isEmpty { sniff(tail, reverse: false) } else {
            client.onData = { [weak self] bytes in self?.sniff(bytes, reverse: false) }
            client.resumeReading()
        }
    }

    /// The client's own handshake deadline: it does not run while the proxy waits on the upstream.
    private func armHandshakeTimer() {
        let limit = server.configuration.timeouts.handshake
        armTimer(limit) { [weak self] in
            guard let self else { return }
            self.recordOutcome(.handshakeTimeout, reason: "the client did not complete its TLS handshake within \(TimeoutText.seconds(limit))")
            self.finish()
        }
    }

    /// The first bytes after CONNECT (or on a reverse-mode connection) decide.
    private func sniff(_ bytes: ArraySlice<UInt8>, reverse: Bool) {
        client.onData = nil
        guard let host = connectHost else { return finish() }
        if bytes.first == 0x16 {
            intercept(initial: bytes)
        } else if reverse {
            client.send(HTTP1Response.error(status: 400, reason: "this port speaks TLS (reverse proxy for \(host.uriHost)); use https://"))
            client.closeAfterSending(lingering: Transport.unwantedInputLinger)
            finish()
        } else {
            cancelTimer()
            server.logger.debug("\(peer): CONNECT \(host.uriHost):\(connectPort) carries no TLS; tunnelling raw")
            tunnel(to: host, port: connectPort, initial: bytes)
        }
    }

    // MARK: - Raw tunnel

    private func tunnel(to host: HostName, port: Int, initial: ArraySlice<UInt8>) {
        cancelTimer()
        client.pauseReading()
        let target = UpstreamTarget(host: host, port: port, tls: false, serverName: host)
        var opened: Upstream?
        opened = Upstream.open(target, server: server, queue: queue) { [weak self] failure in
            guard let self, !self.finished else { opened?.transport.close(); return }
            if let failure {
                if let own = failure.selfAddressed { self.recordSelfAddressed(own, host: host, port: port) }
                self.server.logger.notice("\(self.peer): tunnel to \(host.uriHost):\(port) failed: \(failure.reason)")
                self.client.close()
                self.finish()
                return
            }
            guard let up = opened else { return self.finish() }
            up.transport.send(initial)
            // Nothing else ends a tunnel whose ends both went quiet.
            let idle = self.server.configuration.timeouts.tunnelIdle
            let upstreamTransport = up.transport
            let expire = { [weak self] in
                guard let self else { return }
                self.server.logger.info("\(self.peer): tunnel to \(host.uriHost):\(port) idle for \(TimeoutText.seconds(idle)); closing it")
                upstreamTransport.close()
                self.finish()
            }
            self.armTimer(idle, expire)
            Relay.pipe(self.client, up.transport, onActivity: { [weak self] in self?.armTimer(idle, expire) }) { [weak self] in self?.finish() }
        }
    }

    // MARK: - Interception

    private func intercept(initial: ArraySlice<UInt8>) {
        let tls: TLSConnection
        do { tls = try TLSConnection(context: server.serverTLS) } catch {
            server.logger.error("cannot start TLS: \(error)")
            return finish()
        }
        client.onEnd = { [weak self] end in self?.clientEndedDuringHandshake(end) }
        client.startTLS(tls, initial: initial) { [weak self] result in self?.handshakeProgress(result, tls: tls) }
    }

    private func handshakeProgress(_ result: TLSHandshakeResult, tls: TLSConnection) {
        guard !finished else { return }
        switch result {
        case .clientHello(let hello):
            clientHello(hello, tls: tls)
        case .complete:
            handshakeComplete(tls)
        case .closed:
            recordOutcome(.closedDuringHandshake, reason: nil)
            finish()
        case .failed(let failure):
            classifyHandshakeFailure(failure, tls: tls)
            finish()
        case .wantRead, .wantWrite:
            break
        }
    }

    private func clientHello(_ hello: ClientHello, tls: TLSConnection) {
        sni = hello.serverNameRaw
        if let raw = hello.serverNameRaw, hello.serverName == nil {
            let why = hello.serverNameProblem ?? "invalid"
            recordOutcome(.invalidServerName, host: HostName.quotedForLog(raw), reason: why)
            tls.rejectClientHello(alert: .unrecognizedName, reason: "refused server name: \(why)")
            client.continueHandshake()
            return
        }
        guard let host = hello.serverName ?? connectHost, let connectHost else { return finish() }
        requestedHost = host
        let chosen = server.rules.profile(for: host)
        profile = chosen
        guard let strategy = server.configuration.catalog.strategy(for: chosen) else { return finish() }
        if !strategy.intercepts {
            recordPassthrough(host: host)
            let bytes = client.abandonTLS()
            tunnel(to: connectHost, port: connectPort, initial: bytes[...])
            return
        }
        // Look upstream before choosing the certificate.
        let target = UpstreamTarget(host: connectHost, port: connectPort, tls: upstreamTLSForSession,
                                    serverName: hello.serverName ?? connectHost)
        client.pauseReading()
        // The client waits on the upstream now: its handshake clock stops,
        // and restarts in full once the proxy can continue the handshake.
        cancelTimer()
        var opened: Upstream?
        opened = Upstream.open(target, server: server, queue: queue) { [weak self] failure in
            guard let self, !self.finished else { opened?.transport.close(); return }
            self.client.resumeReading()
            self.armHandshakeTimer()
            if let failure {
                self.upstreamFailed(failure, host: host, tls: tls, strategy: strategy)
                return
            }
            self.upstream = opened
            self.present(strategy: strategy, host: host, chain: opened?.chain ?? [], verified: opened?.verifiedChain ?? [], tls: tls)
        }
        if opened == nil { return }
    }

    private func present(strategy: any AttackStrategy, host: HostName, chain: [Certificate], verified: [Certificate], tls: TLSConnection) {
        do {
            let context = AttackContext(host: host, upstreamChain: chain, genuineChain: verified, resources: server.attacks)
            let presented = try strategy.present(context)
            try tls.installCertificate(presented.certificate, privateKey: presented.privateKey, chain: presented.chain)
            presentedLeaf = presented.certificate
        } catch {
            server.logger.error("\(peer): cannot present a certificate for \(host) (profile \(profile?.name ?? "?")): \(error)")
            tls.rejectClientHello(alert: .internalError, reason: "no certificate: \(error)")
        }
        client.continueHandshake()
    }

    /// The upstream failed: finish the client handshake anyway so the client
    /// can be told why, in a 502.
    private var upstreamFailure: UpstreamFailure?

    private func upstreamFailed(_ failure: UpstreamFailure, host: HostName, tls: TLSConnection, strategy: any AttackStrategy) {
        upstreamFailure = failure
        if let own = failure.selfAddressed, let connectHost {
            recordSelfAddressed(own, host: connectHost, port: connectPort)
        } else if failure.verificationFailed {
            recordOutcome(.upstreamVerificationFailed, reason: failure.verifierReason ?? failure.reason)
        } else {
            recordOutcome(.upstreamFailed, reason: failure.reason)
        }
        present(strategy: strategy, host: host, chain: [], verified: [], tls: tls)
    }

    private func handshakeComplete(_ tls: TLSConnection) {
        cancelTimer()
        handshakeDone = true
        guard let connectHost else { return finish() }
        let info = tls.sessionInfo
        let details = ClientTLSDetails(
            sni: sni, version: info.version, cipher: info.cipher, alpn: info.alpn,
            forgedLeafPin: presentedLeaf?.spkiPin.okhttp, forgedLeafSerial: presentedLeaf?.serialNumberHex,
            profile: profile?.name)
        let kind: HTTPSession.Kind
        if let upstreamFailure {
            kind = .failing(status: upstreamFailure.status, reason: upstreamFailure.reason,
                            target: UpstreamTarget(host: connectHost, port: connectPort, tls: upstreamTLSForSession,
                                                   serverName: requestedHost ?? connectHost))
        } else {
            kind = .origin(UpstreamTarget(host: connectHost, port: connectPort, tls: upstreamTLSForSession,
                                          serverName: requestedHost ?? connectHost))
        }
        let session = HTTPSession(connection: self, client: client, kind: kind, clientTLS: details)
        session.onFirstRequest = { [weak self] in
            guard let self else { return }
            if self.upstreamFailure == nil { self.recordOutcome(.intercepted, reason: nil) }
        }
        session.onFinish = { [weak self] requests, end in
            guard let self else { return }
            if requests == 0 { self.classifyCloseWithoutRequest(end, tls: tls) }
            self.finish()
        }
        self.session = session
        let up = upstream
        upstream = nil
        session.start(upstream: up)
    }

    private func clientEndedDuringHandshake(_ end: TransportEnd) {
        guard !finished else { return }
        switch end {
        case .reset: recordOutcome(.reset, reason: nil)
        case .tlsFailed(let failure): classifyHandshakeFailure(failure, tls: nil)
        default: recordOutcome(.closedDuringHandshake, reason: nil)
        }
        finish()
    }

    private func classifyHandshakeFailure(_ failure: TLSFailure, tls: TLSConnection?) {
        if let alert = failure.receivedAlert ?? tls?.receivedAlert {
            recordOutcome(.clientAlert, alert: alert.name, reason: failure.reason)
            return
        }
        switch failure.kind {
        case .noSharedParameters: recordOutcome(.noSharedProtocolOrCipher, reason: failure.reason)
        case .notTLS: recordOutcome(.notTLS, reason: failure.reason)
        case .transport: recordOutcome(.reset, reason: failure.reason)
        default:
            if outcomeRecorded { return }
            recordOutcome(.handshakeFailed, reason: failure.reason)
        }
    }

    private func classifyCloseWithoutRequest(_ end: TransportEnd?, tls: TLSConnection) {
        guard upstreamFailure == nil else { return }
        if case .tlsFailed(let failure) = end, let alert = failure.receivedAlert {
            recordOutcome(.clientAlert, alert: alert.name, reason: "after the handshake")
        } else if let alert = tls.receivedAlert, alert.isFatal {
            recordOutcome(.clientAlert, alert: alert.name, reason: "after the handshake")
        } else if end != nil {
            recordOutcome(.closedAfterHandshakeWithoutRequest, reason: nil)
        }
    }

    // MARK: - Outcomes

    private func recordPassthrough(host: HostName) {
        profile = .passthrough
        recordOutcome(.passthrough, host: host.description, reason: nil)
    }

    private func recordOutcome(_ kind: TLSOutcomeEvent.Kind, host: String? = nil, alert: String? = nil, reason: String?) {
        guard !outcomeRecorded else { return }
        outcomeRecorded = true
        let name = host ?? requestedHost?.description ?? connectHost?.description ?? "?"
        let event = TLSOutcomeEvent(kind: kind, host: name, port: connectPort, clientAddress: peer, alert: alert, reason: reason,
                                    profile: profile?.name)
        outcome = event
        server.record(event)
    }

    /// A request or CONNECT addressed to the proxy itself: always recorded,
    /// also after this connection's TLS outcome (a passthrough tunnel's).
    func recordSelfAddressed(_ own: OwnAddresses.Endpoint, host: HostName, port: Int) {
        let event = TLSOutcomeEvent(kind: .selfAddressed, host: host.description, port: port, clientAddress: peer,
                                    reason: own.description)
        if !outcomeRecorded {
            outcomeRecorded = true
            outcome = event
        }
        server.record(event)
    }

    /// The client's TLS outcome once recorded; flows on this connection carry it.
    private(set) var outcome: TLSOutcomeEvent?

    // MARK: - Lifetime

    // One deadline per connection. Re-arming only moves the deadline; a
    // dispatch timer is scheduled only when none is pending early enough, so
    // busy connections do not schedule one per request.
    private var deadline: DispatchTime?
    private var deadlineAction: (() -> Void)?
    private var scheduledAt: DispatchTime?

    func armTimer(_ seconds: TimeInterval, _ action: @escaping () -> Void) {
        let when = DispatchTime.now() + seconds
        deadline = when
        deadlineAction = action
        if scheduledAt == nil || when < scheduledAt! { schedule(at: when) }
    }

    func cancelTimer() {
        deadline = nil
        deadlineAction = nil
    }

    private func schedule(at when: DispatchTime) {
        scheduledAt = when
        let delay = Double(when.uptimeNanoseconds &- min(when.uptimeNanoseconds, DispatchTime.now().uptimeNanoseconds)) / 1e9
        queue.later(after: delay) { [weak self] in self?.timerFired(scheduledFor: when) }
    }

    private func timerFired(scheduledFor when: DispatchTime) {
        guard scheduledAt == when else { return }  // superseded by an earlier one
        scheduledAt = nil
        guard !finished, let deadline, let action = deadlineAction else { return }
        if DispatchTime.now() < deadline {
            schedule(at: deadline)
            return
        }
        self.deadline = nil
        deadlineAction = nil
        action()
    }

    /// Stops taking new requests; idle connections close now, busy ones after their exchange.
    func drain() {
        guard !finished else { return }
        if let session { session.drain() } else if !handshakeDone { finish() }
    }

    func forceClose() {
        session?.interrupt("interrupted by shutdown")
        finish()
        client.close()
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        cancelTimer()
        session?.close()
        session = nil
        upstream?.transport.close()
        upstream = nil
        client.closeAfterSending()
        server.connectionFinished(self)
    }
}

extension TLSOutcomeEvent.Kind {
    /// The server name the client sent was refused (NUL, commas, over-long, ...).
    public static let invalidServerName = Self("invalid-server-name")
    /// The upstream could not be reached or its TLS failed for a reason other than verification.
    public static let upstreamFailed = Self("upstream-failed")
    /// The client sent something that is not TLS where TLS was expected.
    public static let notTLS = Self("not-tls")
    /// The handshake failed for another reason (see the event's reason).
    public static let handshakeFailed = Self("handshake-failed")
}

extension HostName {
    /// Untrusted text made safe for a log line: control bytes as `\xNN`, at most 80 characters.
    static func quotedForLog(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(80) {
            if scalar.value < 0x20 || scalar.value >= 0x7f { out += String(format: "\\x%02x", scalar.value) }
            else if scalar == "\"" { out += "\\\"" }
            else { out.unicodeScalars.append(scalar) }
        }
        if text.unicodeScalars.count > 80 { out += "…" }
        return out + "\""
    }
}
