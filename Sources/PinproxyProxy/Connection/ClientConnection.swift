import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyTLS

/// One client connection, from accept to close, on its own serial queue:
/// the bottom of its stack of layers.
///
/// It owns the client's socket and sets its callbacks once, and it hands
/// every event (the client's and the upstreams') to the current layer:
///
/// ```
/// forward:  HTTP1ExchangeLayer ─(CONNECT)─▶ ConnectLayer ─▶ TLSInterceptionLayer ─▶ HTTP1ExchangeLayer
///                                                      └──▶ TunnelLayer (passthrough, not TLS)
/// reverse:  ConnectLayer ─▶ TLSInterceptionLayer ─▶ HTTP1ExchangeLayer ─(101)─▶ TunnelLayer
/// ```
///
/// A layer goes on to the next through ``switchLayer(to:)``; each owns its
/// state and timers and is handed the narrow values it needs
/// (``ConnectionServices``), never the server.
final class ClientConnection: LayerHost, @unchecked Sendable {
    // Sendable: all state is touched only on `queue`.
    let queue: DispatchQueue
    private let loop: EventLoop
    let transport: Transport
    var client: any ClientSide { transport }
    private let services: ConnectionServices
    private let record: ConnectionRecord
    private let finished: (ClientConnection) -> Void
    // Read for every event; unchecked exclusivity as in HTTP1ExchangeLayer.
    @exclusivity(unchecked) private var layer: (any ConnectionLayer)?
    @exclusivity(unchecked) private var isFinished = false
    /// This loop's idle upstream connections; nil when none are kept.
    /// An upstream that refused this connection with a fatal alert (see ``LayerHost/upstreamRefused(_:reason:)``).
    private var refused: (target: UpstreamTarget, reason: String)?
    /// What the transport's callbacks and the upstreams' events reach the connection through.
    private let owner = OwnerLink<ClientConnection>()
    private lazy var idleUpstreams: IdleUpstreamPool? = services.idleUpstreams.pool(for: loop)

    /// `finished` runs once, on the connection's queue, when it has closed.
    init(descriptor: Descriptor, loop: EventLoop, services: ConnectionServices, finished: @escaping (ClientConnection) -> Void) {
        self.loop = loop
        self.queue = loop.queue
        self.transport = Transport(descriptor: descriptor, queue: queue)
        self.services = services
        self.record = ConnectionRecord(peer: Socket.peerName(descriptor), recorder: services.recorder)
        self.finished = finished
        owner.attach(self)
    }

    deinit { owner.sever() }

    func start() {
        // Accepted on this loop: it begins at once. From elsewhere through the
        // loop's mailbox: a busy loop keeps its queue for a while, and a new
        // client should not wait for it.
        if loop.isCurrent { begin() } else { loop.execute { [self] in begin() } }
    }

    private func begin() {
        // The connection stays alive until the layer returns: a layer may
        // finish it mid-event (a send that finds the client gone) and still
        // touch its host (unowned) on the way out.
        let owner = self.owner
        transport.onData = { bytes in
            guard let self = owner.object else { return }
            withExtendedLifetime(self) { self.layer?.clientData(bytes) }
        }
        transport.onEnd = { end in
            guard let self = owner.object else { return }
            withExtendedLifetime(self) { self.layer?.clientEnded(end) }
        }
        transport.onDrained = {
            guard let self = owner.object else { return }
            withExtendedLifetime(self) { self.layer?.clientDrained() }
        }
        switch services.mode {
        case .forward:
            let first = HTTP1ExchangeLayer(host: self, services: services, record: record, kind: .forwardProxy, clientTLS: nil)
            layer = first
            first.start()
        case .reverse(_, let host, let port):
            let first = ConnectLayer.reverse(to: host, port: port, host: self, services: services, record: record)
            layer = first
            first.start()
        }
    }

    // MARK: - LayerHost

    func openUpstream(_ target: UpstreamTarget, alpn: [String]?, mayTakeIdle: Bool) throws(UpstreamFailure) -> Upstream {
        // The default offer is `h2` only for an upstream known to refuse HTTP/1.1.
        let offer = alpn ?? services.http2OnlyUpstreams.alpn(for: target, http2: services.http2)
        let owner = self.owner
        let events: (Upstream, UpstreamEvent) -> Void = { upstream, event in
            guard let self = owner.object else { return }
            withExtendedLifetime(self) { self.layer?.upstream(upstream, event) }  // as for the client's events
        }
        if target.tls, mayTakeIdle, let pool = idleUpstreams,
           let idle = pool.take(IdleUpstreamPool.Key(target: target, connectHost: Upstream.connectHost(for: target, with: services.connector),
                                                     alpn: offer)) {
            // Ready as a new one would be, once the caller holds it, after the
            // batch of events being served (the socket was seen quiet just
            // now). Whatever the upstream says meanwhile is held back: a layer
            // expects nothing before `.ready`, so a close then fails it instead.
            var early: UpstreamEvent?
            idle.rebind { _, event in
                if case .drained = event { return }
                if early == nil { early = event }
            }
            loop.later { [weak self] in
                // The client left first: back to the pool (unless the layer
                // already gave it back, or it spoke meanwhile).
                guard let self, !self.isFinished else { return early == nil ? pool.park(idle) : idle.closeIdle() }
                idle.rebind(events)
                guard early == nil, idle.isOpen else {
                    idle.close()
                    let reason = "the upstream \(target.host.uriHost):\(target.port) closed its idle connection as it was taken"
                    self.layer?.upstream(idle, .failed(UpstreamFailure(reason: reason, verificationFailed: false)))
                    return
                }
                self.layer?.upstream(idle, .ready)
            }
            return idle
        }
        return try Upstream.open(target, with: services.connector, queue: queue, alpn: offer, events: events)
    }

    func openLeg(_ target: UpstreamTarget, for owner: any UpstreamLegOwner, via: Bool) throws(UpstreamFailure) -> any UpstreamLeg {
        if let refused, refused.target == target { throw UpstreamFailure(reason: refused.reason, verificationFailed: false, isRefusal: true) }
        let up: Upstream
        do { up = try openUpstream(target, alpn: nil) } catch {
            throw UpstreamFailure(reason: "cannot connect to \(target.host.uriHost):\(target.port)", verificationFailed: false)
        }
        return HTTP1Leg(upstream: up, owner: owner, context: legContext(via: via))
    }

    func adoptLeg(_ upstream: Upstream, early: [UInt8], for owner: any UpstreamLegOwner, via: Bool) -> any UpstreamLeg {
        HTTP1Leg(upstream: upstream, owner: owner, context: legContext(via: via), early: early)
    }

    private func legContext(via: Bool) -> LegContext {
        LegContext(host: self, via: via, rewritesHost: services.rewritesHost, http2: services.http2,
                   http2OnlyUpstreams: services.http2OnlyUpstreams, counters: services.recorder.counters, logger: services.logger,
                   peer: record.peer)
    }

    func upstreamRefused(_ target: UpstreamTarget, reason: String) {
        refused = (target, reason)
    }

    /// The layer is done with `upstream` after a complete exchange, or before
    /// any (the client left during its handshake): kept for another client
    /// connection when it may be, closed otherwise.
    func releaseUpstream(_ upstream: Upstream) {
        guard let pool = idleUpstreams else { return upstream.closeIdle() }
        pool.park(upstream)
    }

    func switchLayer(to next: any ConnectionLayer) {
        guard !isFinished else { return }
        layer = next
    }

    func finish() {
        guard !isFinished else { return }
        isFinished = true
        layer?.close()
        layer = nil
        transport.closeAfterSending()
        finished(self)
    }

    // MARK: - Shutdown

    /// Stops taking new requests; idle connections close now, busy ones after their exchange.
    func drain() {
        guard !isFinished else { return }
        layer?.drain()
    }

    func forceClose() {
        layer?.interrupt()
        finish()
        transport.close()
    }
}
