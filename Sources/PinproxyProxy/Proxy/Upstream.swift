import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Where the proxy sends a client's requests.
struct UpstreamTarget: Hashable, Sendable, CustomStringConvertible {
    var host: HostName
    var port: Int
    /// Whether to speak TLS to the upstream.
    var tls: Bool
    /// The name sent as SNI and checked against the certificate.
    var serverName: HostName

    var scheme: String { tls ? "https" : "http" }
    /// `host[:port]` as a Host field writes it: the port only when not the scheme's default.
    var authority: String { authority(naming: host) }

    /// The authority with `name` in place of the host (URLs name the server name).
    func authority(naming name: HostName) -> String {
        port == (tls ? 443 : 80) ? name.uriHost : "\(name.uriHost):\(port)"
    }
    var description: String { "\(scheme)://\(host.uriHost):\(port)" }
}

/// Why an upstream could not be used.
struct UpstreamFailure: Error, Sendable {
    /// A whole sentence, for the 502 body.
    var reason: String
    /// Whether the upstream certificate failed verification.
    var verificationFailed: Bool
    /// The verifier's own words, when verification failed.
    var verifierReason: String? = nil
    /// The upstream refused with a fatal alert, so connecting again would not help.
    var isRefusal = false
    /// The connection reached pinproxy itself (see ``OwnAddresses``).
    var selfAddressed: OwnAddresses.Endpoint? = nil

    /// The status the client is answered with.
    var status: Int { selfAddressed == nil ? 502 : 403 }
}

extension UpstreamFailure {
    /// The two ways forward when an upstream certificate cannot be verified
    /// (a local or staging origin, usually), for the 502 body and the log line.
    static let verificationHint = "trust its CA with --upstream-ca FILE, or skip verification with --upstream-insecure"

    /// Why an upstream connection ended before (or instead of) answering, in
    /// one sentence: the alert it sent and what that alert usually means.
    static func ended(_ end: TransportEnd, target: UpstreamTarget, tls: TLSConnection?, when: String = "before responding") -> UpstreamFailure {
        let name = "the upstream \(target.host.uriHost):\(target.port)"
        var alert: TLSAlert?
        switch end {
        case .tlsFailed(let failure): alert = failure.receivedAlert ?? tls?.receivedAlert
        default: alert = tls?.receivedAlert
        }
        if let alert, alert.isFatal {
            var reason = "\(name) sent alert \(alert.name)"
            if alert.code == 116 || tls?.clientCertificateRequested == true {
                reason += ": it asks for a client certificate (pass one with --upstream-client-cert)"
            } else if alert.rejectsCertificate {
                reason += ": it refused the client certificate"
            }
            return UpstreamFailure(reason: reason, verificationFailed: false, isRefusal: true)
        }
        switch end {
        case .closed: return UpstreamFailure(reason: "\(name) closed the connection \(when)", verificationFailed: false)
        case .reset: return UpstreamFailure(reason: "\(name) reset the connection \(when)", verificationFailed: false)
        case .failed(let why): return UpstreamFailure(reason: "\(name) failed \(when): \(why)", verificationFailed: false)
        case .tlsFailed(let failure): return UpstreamFailure(reason: "\(name) failed \(when): \(failure.reason)", verificationFailed: false)
        }
    }
}

/// A connection to an upstream, plain or TLS, with what the exports need about it.
final class Upstream: @unchecked Sendable {
    // Sendable: confined to the client connection's queue.
    let target: UpstreamTarget
    let transport: Transport
    private(set) var chain: [Certificate] = []
    /// The chain the proxy's verifier built, leaf to anchor (attacks use its root).
    private(set) var verifiedChain: [Certificate] = []
    private(set) var tlsDetails: UpstreamTLSDetails?
    let startedAt = Date()
    private(set) var connectMilliseconds: Double = -1
    private(set) var tlsMilliseconds: Double = -1
    /// Whether an exchange already used this connection (so timings are not counted twice).
    private(set) var reused = false

    /// HAR's connect and ssl phases, for the first exchange on this connection
    /// (connect includes ssl, as HAR defines it); -1 for the ones after.
    func takeConnectTimings() -> (connect: Double, ssl: Double) {
        guard !reused, connectMilliseconds >= 0 else { return (-1, -1) }
        reused = true
        return (connectMilliseconds + max(0, tlsMilliseconds), tlsMilliseconds)
    }

    private init(target: UpstreamTarget, transport: Transport) {
        self.target = target
        self.transport = transport
    }

    /// Opens a connection; `ready` runs once it is usable or has failed.
    /// Bytes sent before that are queued and go out once it is ready.
    static func open(_ target: UpstreamTarget, server: ProxyServer, queue: DispatchQueue,
                     ready: @escaping (UpstreamFailure?) -> Void) -> Upstream? {
        let timeout = server.configuration.timeouts.upstreamConnect
        var finished = false
        var upstream: Upstream?
        func finish(_ failure: UpstreamFailure?) {
            guard !finished else { return }
            finished = true
            if failure != nil { upstream?.transport.close() }
            ready(failure)
        }
        // A fixed address for the name, when configured, instead of resolving it.
        let connectHost = server.configuration.upstreamAddresses.address(for: target.host) ?? target.host.description
        let transport: Transport
        do {
            transport = try Transport.connecting(host: connectHost, port: target.port, queue: queue, timeout: timeout) { error in
                guard let upstream else { return }
                if let error {
                    finish(UpstreamFailure(reason: "cannot connect to \(target.host.uriHost):\(target.port): \(error.reason)", verificationFailed: false))
                    return
                }
                upstream.connectMilliseconds = Date().timeIntervalSince(upstream.startedAt) * 1000
                // The name may have resolved to the proxy's own listener or control API.
                if let own = server.ownAddresses.endpoint(peerOf: upstream.transport.fd) {
                    finish(UpstreamFailure(reason: own.refusal, verificationFailed: false, selfAddressed: own))
                    return
                }
                guard target.tls else {
                    upstream.transport.flushQueued()
                    finish(nil)
                    return
                }
                upstream.startTLS(server: server, finish: finish)
            }
        } catch let error as PinproxyError {
            queue.later { ready(UpstreamFailure(reason: error.reason, verificationFailed: false)) }
            return nil
        } catch {
            queue.later { ready(UpstreamFailure(reason: "\(error)", verificationFailed: false)) }
            return nil
        }
        let created = Upstream(target: target, transport: transport)
        upstream = created
        transport.onEnd = { end in
            finish(UpstreamFailure(reason: "the upstream \(target.host.uriHost):\(target.port) closed the connection (\(end))", verificationFailed: false))
        }
        // Connecting is bounded by the transport's connect timeout; the TLS
        // handshake by its own timer (startTLS).
        return created
    }

    private func startTLS(server: ProxyServer, finish: @escaping (UpstreamFailure?) -> Void) {
        let tlsStart = Date()
        let connection: TLSConnection
        do {
            connection = try TLSConnection(context: server.upstreamTLS)
            try connection.configureClient(serverName: target.serverName)
        } catch {
            finish(UpstreamFailure(reason: "cannot start TLS to the upstream: \(error)", verificationFailed: false))
            return
        }
        let target = self.target
        let verifying = server.upstreamTLS.trust != .insecure
        let limit = server.configuration.timeouts.upstreamHandshake
        transport.queue.later(after: limit) {
            finish(UpstreamFailure(
                reason: "the TLS handshake with the upstream \(target.host.uriHost):\(target.port) timed out after \(TimeoutText.seconds(limit)): it accepted the connection but did not answer the ClientHello",
                verificationFailed: false))
        }
        transport.startTLS(connection) { [weak self] result in
            guard let self else { return }
            switch result {
            case .complete:
                self.tlsMilliseconds = Date().timeIntervalSince(tlsStart) * 1000
                self.chain = connection.peerCertificates
                self.verifiedChain = connection.verifiedChain
                let info = connection.sessionInfo
                self.tlsDetails = UpstreamTLSDetails(
                    version: info.version, cipher: info.cipher, alpn: info.alpn, verified: verifying,
                    verifierReason: verifying ? nil : "verification skipped (--upstream-insecure)",
                    chain: self.chain.map(CertificateSummary.init(certificate:)))
                finish(nil)
            case .failed(let failure):
                if failure.kind == .verificationFailed {
                    let why = failure.verificationError ?? failure.reason
                    finish(UpstreamFailure(
                        reason: "the upstream certificate of \(target.serverName) failed verification: \(why) (\(UpstreamFailure.verificationHint))",
                        verificationFailed: true, verifierReason: why))
                } else if (failure.receivedAlert ?? connection.receivedAlert)?.isFatal == true {
                    finish(UpstreamFailure.ended(.tlsFailed(failure), target: target, tls: connection, when: "during the TLS handshake"))
                } else {
                    finish(UpstreamFailure(reason: "TLS handshake with \(target.host.uriHost):\(target.port) failed: \(failure.reason)", verificationFailed: false))
                }
            case .closed:
                finish(UpstreamFailure(reason: "the upstream \(target.host.uriHost):\(target.port) closed the connection during the TLS handshake", verificationFailed: false))
            case .wantRead, .wantWrite, .clientHello:
                break
            }
        }
    }
}

/// Durations in log lines and 502 bodies: whole seconds unless fractional.
enum TimeoutText {
    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

extension CertificateSummary {
    init(certificate c: Certificate) {
        self.init(subject: c.subject, issuer: c.issuer, serial: c.serialNumberHex, notBefore: c.notBefore,
                  notAfter: c.notAfter, subjectAlternativeNames: c.subjectAlternativeNames.map(\.description),
                  spkiPin: c.spkiPin.okhttp)
    }
}

/// Relays bytes both ways between two transports until either side ends,
/// pausing a side while the other's output is congested. `onActivity` runs
/// whenever bytes pass, either way (an idle timer's re-arming).
enum Relay {
    static func pipe(_ a: Transport, _ b: Transport, onActivity: (() -> Void)? = nil, onClose: @escaping () -> Void) {
        var closed = false
        func closeBoth() {
            guard !closed else { return }
            closed = true
            a.closeAfterSending()
            b.closeAfterSending()
            onClose()
        }
        func wire(_ from: Transport, _ to: Transport) {
            from.onData = { bytes in
                onActivity?()
                to.send(bytes)
                if to.outputIsCongested { from.pauseReading() }
            }
            to.onDrained = { from.resumeReading() }
            from.onEnd = { _ in closeBoth() }
        }
        wire(a, b)
        wire(b, a)
        a.start()
        b.start()
        a.resumeReading()
        b.resumeReading()
    }
}
