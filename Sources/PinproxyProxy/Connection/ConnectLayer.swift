import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyHTTP1

/// What happens after `CONNECT host:port` (and on a reverse-mode
/// connection, which begins where a CONNECT would have ended).
///
/// In order:
/// 1. the request is checked: Proxy-Authorization when the proxy asks for
///    it (407), a `host:port` target (400), not the proxy's own address (403);
/// 2. `200 Connection established`; a host the rules pass through is
///    tunnelled raw at once (``TunnelLayer``);
/// 3. the client's first bytes decide, under its handshake deadline: a TLS
///    record is intercepted (``TLSInterceptionLayer``: ClientHello, upstream
///    check, attack profile, forged chain, then HTTP/1 exchanges); anything
///    else is tunnelled raw (forward mode) or refused with a 400 (reverse
///    mode, whose port speaks TLS only).
///
/// The decisions are ``ConnectStateMachine``'s, on values alone; this layer
/// carries out its actions on the connection.
final class ConnectLayer: ConnectionLayer {
    private unowned let host: any LayerHost
    private let services: ConnectionServices
    private let record: ConnectionRecord
    private var machine: ConnectStateMachine
    private let timer: DeadlineTimer
    /// Whether the handshake deadline records a `handshake-timeout` outcome.
    /// A reverse-mode connection that never sent a byte is closed silently.
    private let timeoutRecordsOutcome: Bool
    private var deadline: DispatchTime?
    private var target: (host: HostName, port: Int)?

    private init(host: any LayerHost, services: ConnectionServices, record: ConnectionRecord, machine: ConnectStateMachine,
                 timeoutRecordsOutcome: Bool) {
        self.host = host
        self.services = services
        self.record = record
        self.machine = machine
        self.timer = DeadlineTimer(queue: host.client.queue)
        self.timeoutRecordsOutcome = timeoutRecordsOutcome
    }

    /// Forward mode: a CONNECT request read by the HTTP/1 layer, and the bytes that followed it.
    static func connect(_ head: HTTP1RequestHead, tail: ArraySlice<UInt8>, host: any LayerHost, services: ConnectionServices,
                        record: ConnectionRecord) -> ConnectLayer {
        let own = services.ownAddresses
        let policy = services.interception
        let machine = ConnectStateMachine(
            credentials: services.proxyCredentials, ownEndpoint: { own.endpoint(named: $0, port: $1) }, profile: policy.profile)
        let layer = ConnectLayer(host: host, services: services, record: record, machine: machine, timeoutRecordsOutcome: true)
        layer.pending = (head, tail)
        return layer
    }

    /// Reverse mode: every connection is a tunnel to `origin` that must start with TLS.
    static func reverse(to origin: HostName, port: Int, host: any LayerHost, services: ConnectionServices,
                        record: ConnectionRecord) -> ConnectLayer {
        let machine = ConnectStateMachine(reverseTo: origin, port: port)
        return ConnectLayer(host: host, services: services, record: record, machine: machine, timeoutRecordsOutcome: false)
    }

    private var pending: (HTTP1RequestHead, ArraySlice<UInt8>)?

    /// A reverse-mode connection: no CONNECT came before its first bytes.
    private var isReverse = false

    /// Runs once the layer is current.
    func start() {
        if let (head, tail) = pending {
            pending = nil
            perform(machine.connect(head, tail: tail))
        } else {
            isReverse = true
            perform(machine.reverseStarted())
        }
    }

    private func perform(_ actions: [ConnectStateMachine.Action]) {
        for action in actions {
            switch action {
            case .refuse(let status, let reason, let challenge):
                // In reverse mode the refused bytes were no CONNECT (plain HTTP on the TLS port).
                services.logger.notice("\(record.peer): \(isReverse ? "connection" : "CONNECT") refused (\(status)): \(reason)")
                var extra = HTTPHeaders()
                if challenge { extra.add(name: "Proxy-Authenticate", value: "Basic realm=\"pinproxy\"") }
                host.client.send(HTTP1Response.error(status: status, reason: reason, headers: extra))
                host.client.closeAfterSending(lingering: Transport.unwantedInputLinger)
                return host.finish()
            case .recordSelfAddressed(let own, let name, let port):
                record.recordSelfAddressed(own, host: name, port: port)
            case .establish(let name, let port):
                target = (name, port)
                host.client.send(HTTP1Response.connectionEstablished)
            case .recordPassthrough(let name, let port):
                record.recordOutcome(.passthrough, host: name.description, port: port, reason: nil, profile: .passthrough)
            case .armHandshakeDeadline(let name, let port):
                target = (name, port)
                armHandshakeDeadline()
            case .readFirstBytes:
                host.client.start()
                host.client.resumeReading()
            case .tunnel(let name, let port, let initial, let sniffed):
                timer.cancel()
                if sniffed {
                    services.logger.debug("\(record.peer): CONNECT \(name.uriHost):\(port) carries no TLS; tunnelling raw")
                }
                let tunnel = TunnelLayer(host: host, record: record, logger: services.logger, idleTimeout: services.timeouts.tunnelIdle,
                                         endsOnDrain: true)
                host.switchLayer(to: tunnel)
                tunnel.connect(to: name, port: port, initial: initial)
            case .intercept(let initial):
                guard let target, let deadline else { return host.finish() }
                timer.cancel()
                let upstreamTLS: Bool
                if case .reverse(let scheme, _, _) = services.mode { upstreamTLS = scheme == "https" } else { upstreamTLS = true }
                let tls = TLSInterceptionLayer(
                    host: host, services: services, record: record, target: target, upstreamTLS: upstreamTLS,
                    deadline: deadline, timeoutRecordsOutcome: timeoutRecordsOutcome)
                host.switchLayer(to: tls)
                tls.start(initial: initial)
            }
        }
    }

    /// The client's handshake deadline, from the end of CONNECT (or from
    /// accept, in reverse mode); the TLS layer keeps it.
    private func armHandshakeDeadline() {
        let limit = services.timeouts.handshake
        deadline = DispatchTime.now() + limit
        timer.arm(limit) { [weak self] in
            guard let self else { return }
            if self.timeoutRecordsOutcome, let target = self.target {
                self.record.recordOutcome(
                    .handshakeTimeout, host: target.host.description, port: target.port,
                    reason: "the client did not complete its TLS handshake within \(TimeoutText.seconds(limit))", profile: nil)
            }
            self.host.finish()
        }
    }

    func clientData(_ bytes: ArraySlice<UInt8>) { perform(machine.firstBytes(bytes)) }

    func clientEnded(_ end: TransportEnd) { host.finish() }
    func clientDrained() {}
    func upstream(_ upstream: Upstream, _ event: UpstreamEvent) {}
    func drain() { host.finish() }
    func interrupt() {}
    func close() { timer.cancel() }
}
