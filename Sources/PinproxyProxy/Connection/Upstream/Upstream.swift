import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyHTTP2
import PinproxyTLS

/// How the proxy reaches upstreams: the TLS context that verifies them, the
/// timeouts for connecting and for their handshake, the fixed addresses
/// configured for names, and the proxy's own addresses to refuse.
struct UpstreamConnector: Sendable {
    var tls: TLSContext
    var connectTimeout: TimeInterval
    var handshakeTimeout: TimeInterval
    /// Fixed addresses for names (`serve --resolve`, `PUT /resolve`), instead of resolving them.
    var upstreamAddresses: UpstreamAddresses
    var ownAddresses: OwnAddresses
}

/// What an upstream connection tells the layer that uses it.
enum UpstreamEvent {
    /// Connected (and, for TLS, handshaken and verified): usable.
    case ready
    /// Connecting, the handshake or verification failed; the connection is closed.
    case failed(UpstreamFailure)
    /// Response bytes (plain, or decrypted).
    case data(ArraySlice<UInt8>)
    /// No more bytes will arrive (after ``ready``).
    case ended(TransportEnd)
    /// Output fell back under the congestion bound.
    case drained
}

/// A connection to an upstream, plain or TLS, with what the exports need about it.
///
/// It owns its transport and sets the transport's callbacks once: while
/// connecting it watches for failure itself, and from then on it passes the
/// transport's events, as ``UpstreamEvent``s, to the `events` function given
/// at ``open(_:with:queue:events:)`` (the client connection, which hands
/// them to its current layer).
final class Upstream: @unchecked Sendable {
    // Sendable: confined to the client connection's queue.
    let target: UpstreamTarget
    let transport: Transport
    private(set) var chain: [Certificate] = []
    /// The chain the proxy's verifier built, leaf to anchor (attacks use its root).
    private(set) var verifiedChain: [Certificate] = []
    /// Whether the upstream chose HTTP/2 by ALPN.
    var speaksHTTP2: Bool { tlsDetails?.alpn == "h2" }
    // Read for every flow; unchecked exclusivity as in HTTP1ExchangeLayer.
    @exclusivity(unchecked) private(set) var tlsDetails: UpstreamTLSDetails?
    let startedAt = Date()
    @exclusivity(unchecked) private(set) var connectMilliseconds: Double = -1
    @exclusivity(unchecked) private(set) var tlsMilliseconds: Double = -1
    /// Whether an exchange already used this connection (so timings are not counted twice).
    @exclusivity(unchecked) private(set) var reused = false
    /// Request heads sent on this connection, the current one included (``sendRequest(_:)``).
    @exclusivity(unchecked) private(set) var requestsSent = 0
    /// Whether the current request is not the first on this connection: the
    /// upstream may have closed it, idle, just as the request went out (see ``UpstreamReplay``).
    var isReused: Bool { requestsSent > 1 }

    /// Sends a request head, counted (``isReused``).
    @inline(__always) func sendRequest(_ head: [UInt8]) {
        requestsSent &+= 1
        transport.send(head[...])
    }
    /// Ready or failed: connecting is over.
    @exclusivity(unchecked) private var settled = false
    /// The handshake's time limit, cancelled once settled.
    @exclusivity(unchecked) private var handshakeLimit: LoopTimer?
    /// Connected (and handshaken): bytes sent now go out at once.
    @exclusivity(unchecked) private(set) var isReady = false
    /// Whether `h2` was among the protocols offered by ALPN.
    var offeredHTTP2: Bool { (alpn ?? connector.tls.alpn).contains("h2") }
    private let connector: UpstreamConnector
    /// The address connected to: the configured one for the name, or the name itself.
    private let connectHost: String
    /// The ALPN offer in place of the context's (`h2` beside `http/1.1`).
    private let alpn: [String]?
    /// Where events go: the client connection using it, or, while idle, the ``IdleUpstreamPool``.
    /// Read for every event, on the loop's queue only: unchecked exclusivity.
    @exclusivity(unchecked) private var events: (Upstream, UpstreamEvent) -> Void

    /// What must match for this connection to be reused by another client connection.
    var poolKey: IdleUpstreamPool.Key { IdleUpstreamPool.Key(target: target, connectHost: connectHost, alpn: alpn) }

    /// Whether another client connection may use it once idle: TLS whose
    /// chain the proxy verified, and HTTP/1.1, or HTTP/2 with its session
    /// left idle and reusable (see ``IdleUpstreamPool``).
    var mayBeReused: Bool {
        guard settled, let details = tlsDetails, details.verified, connector.tls.trust != .insecure else { return false }
        guard speaksHTTP2 else { return !verifiedChain.isEmpty }
        return idleSession?.isReusable == true && !verifiedChain.isEmpty
    }

    /// An HTTP/2 connection's client session, left by the relay that used
    /// it once its streams were done, for the next one to go on with (same
    /// SETTINGS, windows and HPACK tables; the next stream identifier). Taken
    /// by that relay; without it an HTTP/2 connection is not reused.
    @exclusivity(unchecked) var idleSession: HTTP2Session?
    /// What the transport's callbacks and the handshake's timer reach the connection through.
    private let owner = OwnerLink<Upstream>()

    /// Sends this connection's events elsewhere from now on (it goes to or
    /// comes from the idle pool); the connection counts as reused.
    func rebind(_ events: @escaping (Upstream, UpstreamEvent) -> Void) {
        self.events = events
        reused = true
    }

    /// HAR's connect and ssl phases, for the first exchange on this connection
    /// (connect includes ssl, as HAR defines it); -1 for the ones after.
    func takeConnectTimings() -> (connect: Double, ssl: Double) {
        guard !reused, connectMilliseconds >= 0 else { return (-1, -1) }
        reused = true
        return (connectMilliseconds + max(0, tlsMilliseconds), tlsMilliseconds)
    }

    private init(target: UpstreamTarget, transport: Transport, connector: UpstreamConnector, connectHost: String, alpn: [String]?,
                 events: @escaping (Upstream, UpstreamEvent) -> Void) {
        self.target = target
        self.connectHost = connectHost
        self.alpn = alpn
        self.transport = transport
        self.connector = connector
        self.events = events
        owner.attach(self)
        let owner = self.owner
        transport.onData = { bytes in
            guard let self = owner.object else { return }
            self.events(self, .data(bytes))
        }
        transport.onDrained = {
            guard let self = owner.object else { return }
            self.events(self, .drained)
        }
        transport.onEnd = { end in
            guard let self = owner.object else { return }
            if self.settled { return self.events(self, .ended(end)) }
            self.settle(UpstreamFailure(reason: "the upstream \(target.host.uriHost):\(target.port) closed the connection (\(end))", verificationFailed: false,
                                            endedWhileConnecting: end))
        }
    }

    deinit { owner.sever() }

    /// Starts connecting; `.ready` or `.failed` follows through `events`.
    /// Bytes sent before that are queued and go out once it is ready. Throws
    /// when the connection cannot even be started (no `events` follow).
    /// `alpn` replaces the TLS context's ALPN offer.
    static func open(_ target: UpstreamTarget, with connector: UpstreamConnector, queue: DispatchQueue, alpn: [String]? = nil,
                     events: @escaping (Upstream, UpstreamEvent) -> Void) throws(UpstreamFailure) -> Upstream {
        let connectHost = connectHost(for: target, with: connector)
        var created: Upstream?
        let transport: Transport
        do {
            transport = try Transport.connecting(host: connectHost, port: target.port, queue: queue,
                                                 timeout: connector.connectTimeout) { error in
                created?.connected(error)
            }
        } catch let error as PinproxyError {
            throw UpstreamFailure(reason: error.reason, verificationFailed: false)
        } catch {
            throw UpstreamFailure(reason: "\(error)", verificationFailed: false)
        }
        let upstream = Upstream(target: target, transport: transport, connector: connector, connectHost: connectHost,
                                alpn: alpn, events: events)
        created = upstream
        // Connecting is bounded by the transport's connect timeout; the TLS
        // handshake by its own timer (startTLS).
        return upstream
    }

    /// The address to connect to: the configured one for the name
    /// (`--resolve`, `PUT /resolve`), or the name itself, to be resolved.
    static func connectHost(for target: UpstreamTarget, with connector: UpstreamConnector) -> String {
        connector.upstreamAddresses.address(for: target.host) ?? target.host.description
    }

    private func settle(_ failure: UpstreamFailure?) {
        guard !settled else { return }
        settled = true
        handshakeLimit?.cancel()
        handshakeLimit = nil
        if let failure {
            transport.close()
            events(self, .failed(failure))
        } else {
            isReady = true
            events(self, .ready)
        }
    }

    private func connected(_ error: PinproxyError?) {
        if let error {
            settle(UpstreamFailure(reason: "cannot connect to \(target.host.uriHost):\(target.port): \(error.reason)", verificationFailed: false))
            return
        }
        connectMilliseconds = Date().timeIntervalSince(startedAt) * 1000
        // The name may have resolved to the proxy's own listener or control API.
        if let own = connector.ownAddresses.endpoint(peerOf: transport.descriptor) {
            settle(UpstreamFailure(reason: own.refusal, verificationFailed: false, selfAddressed: own))
            return
        }
        guard target.tls else {
            transport.flushQueued()
            settle(nil)
            return
        }
        startTLS()
    }

    private func startTLS() {
        let tlsStart = Date()
        let connection: TLSConnection
        do {
            connection = try TLSConnection(context: connector.tls)
            try connection.configureClient(serverName: target.serverName, alpn: alpn)
            connection.offerSession(address: connectHost, port: target.port, serverName: target.serverName)
        } catch {
            settle(UpstreamFailure(reason: "cannot start TLS to the upstream: \(error)", verificationFailed: false))
            return
        }
        let target = self.target
        let verifying = connector.tls.trust != .insecure
        let limit = connector.handshakeTimeout
        let owner = self.owner
        handshakeLimit = transport.queue.later(after: limit) {
            owner.object?.settle(UpstreamFailure(
                reason: "the TLS handshake with the upstream \(target.host.uriHost):\(target.port) timed out after \(TimeoutText.seconds(limit)): it accepted the connection but did not answer the ClientHello",
                verificationFailed: false))
        }
        transport.startTLS(connection) { result in
            guard let self = owner.object else { return }
            switch result {
            case .complete:
                self.tlsMilliseconds = Date().timeIntervalSince(tlsStart) * 1000
                self.chain = connection.peerCertificates
                self.verifiedChain = connection.verifiedChain
                let info = connection.sessionInfo
                self.tlsDetails = UpstreamTLSDetails(
                    version: info.version, cipher: info.cipher, alpn: info.alpn, verified: verifying,
                    verifierReason: verifying ? nil : "verification skipped (--upstream-insecure)",
                    chain: self.chain.map(CertificateSummary.init(certificate:)), resumed: connection.isResumed)
                self.settle(nil)
            case .failed(let failure):
                if failure.kind == .verificationFailed {
                    let why = failure.verificationError ?? failure.reason
                    self.settle(UpstreamFailure(
                        reason: "the upstream certificate of \(target.serverName) failed verification: \(why) (\(UpstreamFailure.verificationHint(for: why)))",
                        verificationFailed: true, verifierReason: why))
                } else if (failure.receivedAlert ?? connection.receivedAlert)?.isFatal == true {
                    var ended = UpstreamFailure.ended(.tlsFailed(failure), target: target, tls: connection, when: "during the TLS handshake")
                    if ended.refusedApplicationProtocol && self.alpn == HTTP2OnlyUpstreams.offer {
                        // Offered h2 alone only after http/1.1 was refused (now or earlier).
                        ended.reason += ": offered h2 after refusing http/1.1, it refused that too, so it speaks no protocol the proxy can relay"
                    }
                    self.settle(ended)
                } else {
                    self.settle(UpstreamFailure(reason: "TLS handshake with \(target.host.uriHost):\(target.port) failed: \(failure.reason)", verificationFailed: false))
                }
            case .closed:
                self.settle(UpstreamFailure(reason: "the upstream \(target.host.uriHost):\(target.port) closed the connection during the TLS handshake", verificationFailed: false))
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
