import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyTLS

/// The client's TLS handshake with the proxy, after CONNECT (or on a
/// reverse-mode connection).
///
/// 1. The handshake pauses at the ClientHello. A refused server name ends
///    it with `unrecognized_name`; a host whose profile does not intercept
///    is tunnelled raw with the bytes read so far (``TunnelLayer``).
/// 2. The upstream is opened with the same server name and verified; the
///    client's handshake deadline stops meanwhile and restarts in full.
/// 3. The attack profile forges the chain shown to the client (from the
///    upstream's, when it answered); when the upstream failed, the
///    handshake still completes, so the client can be told why in a 502.
/// 4. Once the handshake completes, ALPN picks the application layer on the
///    same TLS connection; it is handed the upstream as it stands.
///
/// How the handshake went is recorded as the connection's TLS outcome (see
/// ``ClientTLSOutcome``).
final class TLSInterceptionLayer: ConnectionLayer {
    private unowned let host: any LayerHost
    private let services: ConnectionServices
    private let record: ConnectionRecord
    private let timer: DeadlineTimer
    private let target: (host: HostName, port: Int)
    /// Whether the upstream speaks TLS (reverse mode may name an http:// origin).
    private let upstreamTLS: Bool
    private let deadline: DispatchTime
    private let timeoutRecordsOutcome: Bool
    private var tls: TLSConnection?
    private var closed = false

    private var sni: String?
    private var requestedHost: HostName?
    /// The name the certificate is made for: the requested host, except in
    /// reverse mode without SNI, where the client dialled an address
    /// (clients send no SNI for an IP literal): that address.
    private var presentedHost: HostName?
    /// Chosen once, at the ClientHello: a connection keeps it whatever the rules become meanwhile.
    private var profile: AttackProfile?
    private var strategy: (any AttackStrategy)?
    private var upstream: Upstream?
    /// The upstream failed: the handshake completes anyway, and requests get this error.
    private var upstreamFailure: UpstreamFailure?
    /// The upstream ended between its handshake and the client's; a refusal is kept.
    private var upstreamRefusal: (target: UpstreamTarget, reason: String)?
    private var presentedLeaf: Certificate?
    /// The ClientHello was taken and the upstream is being opened: no
    /// certificate has been shown, so a client that leaves now refused nothing.
    private var awaitingUpstream = false
    /// The client offered `h2` and the proxy may speak HTTP/2: a TLS upstream is offered it too.
    private var clientOffersHTTP2 = false
    /// What the client offered by ALPN, for ``ClientProtocolChoice``.
    private var clientALPN: [String] = []
    /// What the upstream sent before the client's handshake completed: an
    /// HTTP/2 server speaks first (its SETTINGS), an HTTP/1.1 one does not.
    private var upstreamEarlyBytes: [UInt8] = []

    init(host: any LayerHost, services: ConnectionServices, record: ConnectionRecord, target: (host: HostName, port: Int),
         upstreamTLS: Bool, deadline: DispatchTime, timeoutRecordsOutcome: Bool) {
        self.host = host
        self.services = services
        self.record = record
        self.timer = DeadlineTimer(queue: host.client.queue)
        self.target = target
        self.upstreamTLS = upstreamTLS
        self.deadline = deadline
        self.timeoutRecordsOutcome = timeoutRecordsOutcome
    }

    private var outcome: ClientTLSOutcome {
        ClientTLSOutcome(connectionRecord: record, host: requestedHost?.description ?? target.host.description, port: target.port,
                         profile: profile, upstreamFailed: upstreamFailure != nil)
    }

    /// Starts the handshake with the bytes already read (the start of the ClientHello).
    func start(initial: ArraySlice<UInt8>) {
        // The deadline set at CONNECT still runs.
        timer.arm(at: deadline) { [weak self] in self?.handshakeTimedOut(recording: self?.timeoutRecordsOutcome ?? false) }
        let tls: TLSConnection
        do { tls = try TLSConnection(context: services.interceptionTLS) } catch {
            services.logger.error("cannot start TLS: \(error)")
            return host.finish()
        }
        self.tls = tls
        host.client.startTLS(tls, initial: initial) { [weak self] result in self?.handshakeProgress(result, tls: tls) }
    }

    /// The client's own handshake deadline: it does not run while the proxy waits on the upstream.
    private func armHandshakeTimer() {
        timer.arm(services.timeouts.handshake) { [weak self] in self?.handshakeTimedOut(recording: true) }
    }

    private func handshakeTimedOut(recording: Bool) {
        if recording {
            let limit = services.timeouts.handshake
            outcome.record(.handshakeTimeout, reason: "the client did not complete its TLS handshake within \(TimeoutText.seconds(limit))")
        }
        host.finish()
    }

    private func handshakeProgress(_ result: TLSHandshakeResult, tls: TLSConnection) {
        guard !closed else { return }
        switch result {
        case .clientHello(let hello):
            clientHello(hello, tls: tls)
        case .complete:
            handshakeComplete(tls)
        case .closed:
            if awaitingUpstream { return leftWhileAwaitingUpstream("closed the connection") }
            outcome.record(.closedDuringHandshake, reason: nil)
            host.finish()
        case .failed(let failure):
            if awaitingUpstream { return leftWhileAwaitingUpstream("broke off (\(failure.reason))") }
            outcome.handshakeFailed(failure, tls: tls)
            host.finish()
        case .wantRead, .wantWrite:
            break
        }
    }

    private func clientHello(_ hello: ClientHello, tls: TLSConnection) {
        sni = hello.serverNameRaw
        if let raw = hello.serverNameRaw, hello.serverName == nil {
            let why = hello.serverNameProblem ?? "invalid"
            record.recordOutcome(.invalidServerName, host: HostName.quotedForLog(raw), port: target.port, reason: why, profile: profile)
            tls.rejectClientHello(alert: .unrecognizedName, reason: "refused server name: \(why)")
            host.client.continueHandshake()
            return
        }
        let name = hello.serverName ?? target.host
        requestedHost = name
        if hello.serverNameRaw == nil, case .reverse = services.mode, let dialled = host.client.localAddress {
            presentedHost = dialled
        }
        let chosen = services.interception.profile(name)
        profile = chosen
        guard let strategy = services.interception.catalog.strategy(for: chosen) else { return host.finish() }
        self.strategy = strategy
        if !strategy.intercepts {
            profile = .passthrough
            outcome.record(.passthrough, reason: nil)
            let bytes = host.client.abandonTLS()
            timer.cancel()
            let tunnel = TunnelLayer(host: host, record: record, logger: services.logger, idleTimeout: services.timeouts.tunnelIdle,
                                     endsOnDrain: true)
            host.switchLayer(to: tunnel)
            tunnel.connect(to: target.host, port: target.port, initial: bytes[...])
            return
        }
        // Look upstream before choosing the certificate.
        let upstreamTarget = UpstreamTarget(host: target.host, port: target.port, tls: upstreamTLS, serverName: name)
        host.client.pauseReading()
        awaitingUpstream = true
        // The client waits on the upstream now: its handshake clock stops,
        // and restarts in full once the proxy can continue the handshake.
        timer.cancel()
        clientALPN = hello.alpn
        clientOffersHTTP2 = services.http2 && upstreamTLS && hello.alpn.contains("h2")
        do { upstream = try host.openUpstream(upstreamTarget, alpn: clientOffersHTTP2 ? services.upstreamOfferForHTTP2Clients : nil) } catch {
            host.client.queue.later { [weak self] in
                guard let self, !self.closed else { return }
                self.upstreamSettled(failure: error)
            }
        }
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard up === upstream, !closed else { return }
        switch event {
        case .ready:
            upstreamSettled(failure: nil)
        case .failed(let failure):
            upstream = nil
            // What it sent belongs to its own session, not to the next connection's.
            upstreamEarlyBytes = []
            // Refused http/1.1 by ALPN: once more offering h2 only (the HTTP/1 layer translates).
            if failure.refusedApplicationProtocol, services.http2, !up.offeredHTTP2,
               let again = try? host.openUpstream(up.target, alpn: HTTP2OnlyUpstreams.offer) {
                upstream = again
                return
            }
            upstreamSettled(failure: failure)
        case .ended(let end):
            // It ended before the client's handshake did: the first request
            // opens another, unless this was a refusal. What it sent (a
            // GOAWAY from a connection taken idle) is not the next one's.
            upstream = nil
            upstreamEarlyBytes = []
            up.close()
            let failure = up.endFailure(end)
            if failure.isRefusal {
                upstreamRefusal = (up.target, failure.reason)
                host.upstreamRefused(up.target, reason: failure.reason)
            }
        case .data(let bytes):
            upstreamEarlyBytes += bytes
        case .drained:
            break
        }
    }

    private func upstreamSettled(failure: UpstreamFailure?) {
        awaitingUpstream = false
        guard let tls, let name = requestedHost, let strategy else { return host.finish() }
        host.client.resumeReading()
        armHandshakeTimer()
        if let failure {
            upstreamFailure = failure
            if let own = failure.selfAddressed {
                record.recordSelfAddressed(own, host: target.host, port: target.port)
            } else if failure.verificationFailed {
                outcome.record(.upstreamVerificationFailed, reason: failure.verifierReason ?? failure.reason)
            } else {
                outcome.record(.upstreamFailed, reason: failure.reason)
            }
            tls.applicationProtocols = protocolChoice(upstreamFailed: true).clientALPN
            return present(strategy, host: presentedHost ?? name, chain: [], verified: [], tls: tls)
        }
        tls.applicationProtocols = protocolChoice(upstreamFailed: false).clientALPN
        present(strategy, host: presentedHost ?? name, chain: upstream?.chain ?? [], verified: upstream?.verifiedChain ?? [], tls: tls)
    }

    /// What the client is offered by ALPN (see ``ClientProtocolChoice`` for the rule).
    private func protocolChoice(upstreamFailed: Bool) -> ClientProtocolChoice {
        ClientProtocolChoice.choose(http2: services.http2, upstreamHTTP2: services.upstreamHTTP2, clientOffers: clientALPN, upstreamTLS: upstreamTLS,
                                    upstreamALPN: upstream?.tlsDetails?.alpn, upstreamFailed: upstreamFailed)
    }

    private func present(_ strategy: any AttackStrategy, host name: HostName, chain: [Certificate], verified: [Certificate],
                         tls: TLSConnection) {
        do {
            let context = AttackContext(host: name, upstreamChain: chain, genuineChain: verified, resources: services.interception.resources)
            let presented = try strategy.present(context)
            try tls.installCertificate(presented.certificate, privateKey: presented.privateKey, chain: presented.chain)
            presentedLeaf = presented.certificate
        } catch {
            services.logger.error("\(record.peer): cannot present a certificate for \(name) (profile \(profile?.name ?? "?")): \(error)")
            tls.rejectClientHello(alert: .internalError, reason: "no certificate: \(error)")
        }
        host.client.continueHandshake()
    }

    private func handshakeComplete(_ tls: TLSConnection) {
        timer.cancel()
        let info = tls.sessionInfo
        let details = ClientTLSDetails(
            sni: sni, version: info.version, cipher: info.cipher, alpn: info.alpn,
            forgedLeafPin: presentedLeaf?.spkiPin.okhttp, forgedLeafSerial: presentedLeaf?.serialNumberHex,
            profile: profile?.name)
        let origin = UpstreamTarget(host: target.host, port: target.port, tls: upstreamTLS, serverName: requestedHost ?? target.host)
        let kind: RequestDestination
        if let upstreamFailure {
            kind = .failing(status: upstreamFailure.status, reason: upstreamFailure.reason, target: origin)
        } else {
            kind = .origin(origin)
        }
        let handed = upstream
        upstream = nil
        // ALPN picks the application layer on this TLS connection.
        if info.alpn == "h2" {
            return startHTTP2(details: details, origin: origin, upstream: handed, tls: tls)
        }
        let application = HTTP1ExchangeLayer(
            host: host, services: services, record: record, kind: kind, clientTLS: details,
            tlsOutcome: (outcome, tls), upstream: handed, upstreamEarlyBytes: upstreamEarlyBytes)
        host.switchLayer(to: application)
        application.start()
    }

    private func startHTTP2(details: ClientTLSDetails, origin: UpstreamTarget, upstream handed: Upstream?, tls: TLSConnection) {
        let failure = upstreamFailure.map { (status: $0.status, reason: $0.reason) }
            ?? upstreamRefusal.map { (status: 502, reason: $0.reason) }
        do {
            let application = try HTTP2ExchangeLayer(
                host: host, services: services, record: record, target: origin, failure: failure, clientTLS: details,
                tlsOutcome: (outcome, tls), upstream: handed, upstreamEarlyBytes: upstreamEarlyBytes)
            host.switchLayer(to: application)
            application.start()
        } catch {
            services.logger.error("\(record.peer): cannot start HTTP/2: \(error)")
            handed?.close()
            host.finish()
        }
    }

    func clientData(_ bytes: ArraySlice<UInt8>) {}

    func clientEnded(_ end: TransportEnd) {
        guard !closed else { return }
        if awaitingUpstream { return leftWhileAwaitingUpstream(end == .reset ? "reset the connection" : "ended the connection") }
        outcome.endedDuringHandshake(end)
        host.finish()
    }

    /// The client left after its ClientHello, while the proxy was still
    /// opening the upstream: it was shown no certificate, so this is no
    /// refusal and records no outcome. The upstream being opened is closed
    /// with the connection (``close()``), not left to its own timeout.
    private func leftWhileAwaitingUpstream(_ how: String) {
        services.logger.info("\(record.peer): the client \(how) while the proxy was still opening \(target.host.uriHost):\(target.port) (no certificate shown yet)")
        host.finish()
    }

    func clientDrained() {}
    func drain() { host.finish() }
    func interrupt() {}

    func close() {
        closed = true
        timer.cancel()
        // A client that left during its handshake (a pinning client refusing
        // the certificate, a probe) sent nothing upstream: the connection,
        // taken idle or opened for it, may serve the next client (the pool
        // keeps it only when verified, settled and quiet). One that said
        // something of its own first is not the next one's.
        if let up = upstream {
            if upstreamEarlyBytes.isEmpty { host.releaseUpstream(up) } else { up.close() }
        }
        upstream = nil
    }
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
