import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import PinproxyTLS
import Synchronization

/// The intercepting proxy: a listening socket, one serial queue per client
/// connection, and the shared state they use (CA, leaf cache, rules, history).
///
/// ```swift
/// let server = try ProxyServer(configuration: configuration, authority: ca)
/// let address = try server.start()
/// ...
/// server.stop()   // stops accepting, drains, closes
/// ```
public final class ProxyServer: Sendable {
    public let configuration: ProxyConfiguration
    public let authority: CertificateAuthority
    public let leaves: LeafCache
    /// The CAs, caches and keys the attack profiles draw on.
    public let attacks: AttackResources
    /// Where flows and TLS outcomes go (files, and the ring behind the control API).
    public let recorder: CaptureRecorder
    /// Counters since start, for `/health`.
    public let counters: ProxyCounters
    let logger: Logger
    let serverTLS: TLSContext
    let upstreamTLS: TLSContext
    /// The event loops this server's connections run on.
    let loops: EventLoops
    /// Idle upstream connections kept for the next client connection, per loop.
    let idleUpstreams: IdleUpstreamPools
    /// Where the proxy itself listens: requests addressed there are refused.
    let ownAddresses = OwnAddresses()
    private let rulesState: Locked<InterceptionRules>
    private let state = Locked(State())
    /// The loop whose epoll set watches the listening socket: connections
    /// are accepted there, between its other events, rather than on a queue
    /// of their own that then had to wake the loop (two hand-offs between
    /// threads per connection).
    private let acceptLoop: EventLoop

    private struct State: ~Copyable {
        var listener: Descriptor?
        var address: ListenAddress?
        var connections: [ObjectIdentifier: ClientConnection] = [:]
        var stopping = false
        /// ``cutDrainShort()`` was called: the drain ends now.
        var drainCut = false
    }

    public init(configuration: ProxyConfiguration, authority: CertificateAuthority,
                recorder: CaptureRecorder? = nil, logger: Logger = Logger(label: "pinproxy")) throws {
        try configuration.validate()
        let fixedTime = configuration.fixedTime
        let clock: @Sendable () -> Date = { fixedTime ?? Date() }
        // Every leaf would be refused by clients as expired; say so once, up front.
        try authority.checkValidity(at: clock())
        self.configuration = configuration
        self.authority = authority
        if let misissuing = configuration.misissuingAuthority {
            if misissuing.certificate == authority.certificate {
                throw PinproxyError(.invalidArgument, "the misissuing CA is the proxy CA itself; give a second CA (pinproxy ca init --dir OTHER)")
            }
            if let problem = misissuing.validityProblem(at: clock()) { throw PinproxyError(.invalidArgument, "the misissuing CA cannot sign usable leaves: \(problem)") }
        }
        self.attacks = try AttackResources(authority: authority, misissuingAuthority: configuration.misissuingAuthority,
                                           untrustedAuthority: configuration.untrustedAuthority,
                                           rotationAuthorities: configuration.rotationAuthorities, clock: clock)
        self.leaves = attacks.leaves
        self.recorder = recorder ?? CaptureRecorder(bodyCaptureLimit: configuration.bodyCaptureLimit, logger: logger)
        self.counters = ProxyCounters()
        self.logger = logger
        self.serverTLS = try TLSContext.server()
        self.upstreamTLS = try TLSContext.client(trust: configuration.upstreamTrust,
                                                clientCertificate: configuration.upstreamClientCertificate,
                                                verificationTime: fixedTime)
        self.rulesState = Locked(configuration.rules)
        self.loops = EventLoops.shared(count: configuration.eventLoops)
        self.acceptLoop = loops.nextLoop()
        let idleUpstream = configuration.timeouts.idleUpstream
        let idleUpstreams = IdleUpstreamPools(limits: idleUpstream > 0 ? IdleUpstreamPool.Limits(idleTimeout: idleUpstream) : nil)
        self.idleUpstreams = idleUpstreams
        let rulesState = self.rulesState
        let rewritesHost: Bool
        if case .reverse = configuration.mode { rewritesHost = !configuration.keepHostHeader } else { rewritesHost = false }
        self.services = ConnectionServices(
            mode: configuration.mode, timeouts: configuration.timeouts,
            connector: UpstreamConnector(
                tls: upstreamTLS, connectTimeout: configuration.timeouts.upstreamConnect,
                handshakeTimeout: configuration.timeouts.upstreamHandshake,
                upstreamAddresses: configuration.upstreamAddresses, ownAddresses: ownAddresses),
            idleUpstreams: idleUpstreams,
            interception: InterceptionPolicy(
                profile: { host in rulesState.withLock { $0 }.profile(for: host) },
                catalog: configuration.catalog, resources: attacks),
            recorder: FlowRecorder(capture: self.recorder, counters: counters, logger: logger),
            logger: logger, interceptionTLS: serverTLS, ownAddresses: ownAddresses,
            proxyCredentials: configuration.proxyAuthentication.map { Data($0.utf8).base64EncodedString() },
            rewritesHost: rewritesHost, http2: configuration.http2, upstreamHTTP2: configuration.upstreamHTTP2)
    }

    /// What each client connection's layers are handed.
    private let services: ConnectionServices

    /// The rules in force; replace them with ``updateRules(_:)``.
    public var rules: InterceptionRules { rulesState.withLock { $0 } }

    /// Replaces the rules at run time (new connections see them at once).
    public func updateRules(_ rules: InterceptionRules) throws {
        try rules.validate(for: configuration)
        rulesState.withLock { $0 = rules }
        logger.info("rules updated: default \(rules.defaultProfile), \(rules.passthrough.count) passthrough pattern(s), \(rules.rules.count) rule(s)")
    }

    /// The address actually bound (with the real port when 0 was asked for).
    public var address: ListenAddress? { state.withLock { $0.address } }

    /// Binds the listening socket and starts accepting.
    @discardableResult
    public func start() throws -> ListenAddress {
        signal(SIGPIPE, SIG_IGN)  // a peer that vanishes must not kill the process
        Socket.raiseDescriptorLimit()
        let listener = try Socket.listen(configuration.listen)
        let bound = ListenAddress(host: configuration.listen.host, port: Socket.localPort(listener))
        ownAddresses.add(bound, role: .proxy)
        state.withLock {
            $0.listener = listener
            $0.address = bound
        }
        counters.markReady()
        watch(listener)
        return bound
    }

    /// Has the accept loop watch `listener` (again).
    private func watch(_ listener: Descriptor) {
        let loop = acceptLoop
        loop.execute { [weak self] in
            guard let self, self.state.withLock({ $0.listener == listener }) else { return }
            if !loop.watchListener(listener, accept: { [weak self] in self?.acceptPending(listener) }) {
                self.logger.error("cannot watch the listening socket: \(Socket.errorText())")
            }
        }
    }

    /// Pauses of accept for want of descriptors since the last warning about them, and when that was.
    private let descriptorPauses = Locked<(pauses: Int, warned: Date?)>((0, nil))

    /// Accepts what the listening socket holds, up to a batch, on the accept loop.
    private func acceptPending(_ listener: Descriptor) {
        for _ in 0..<64 {
            let accepted: Descriptor
            switch Socket.accept(listener) {
            case .success(let descriptor):
                accepted = descriptor
            case .failure(let error):
                if error == .tooManyOpenFiles || error == .tooManyOpenFilesInSystem {
                    // Said at most every 10 s, not ten times a second while the shortage lasts.
                    let now = Date()
                    let pausesBefore = descriptorPauses.withLock { state -> Int? in
                        state.pauses += 1
                        guard state.warned.map({ now.timeIntervalSince($0) >= 10 }) ?? true else { return nil }
                        defer { (state.pauses, state.warned) = (0, now) }
                        return state.pauses - 1
                    }
                    if let pausesBefore {
                        let since = pausesBefore > 0 ? "; \(pausesBefore) more pause\(pausesBefore == 1 ? "" : "s") since the last warning" : ""
                        logger.warning("out of file descriptors; pausing accept for 100 ms at a time until one frees (raise the limit: ulimit -n)\(since)")
                    }
                    acceptLoop.unwatchListener(listener)
                    acceptLoop.queue.later(after: 0.1) { [weak self] in self?.watch(listener) }
                }
                return
            }
            Socket.setNoDelay(accepted)  // non-blocking: the transport sets it
            if state.withLock({ $0.stopping }) { accepted.close(); continue }
            let connection = ClientConnection(descriptor: accepted, loop: loops.nextLoop(), services: services) { [weak self] finished in
                self?.connectionFinished(finished)
            }
            state.withLock { $0.connections[ObjectIdentifier(connection)] = connection }
            counters.countConnection()
            connection.start()
        }
    }

    private func connectionFinished(_ connection: ClientConnection) {
        state.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Connections currently open.
    public var openConnections: Int { state.withLock { $0.connections.count } }

    /// Ends a drain in progress (``stop()``) now: the connections still open are closed as at
    /// the drain's deadline, their exchanges recorded as interrupted. A second SIGINT does this.
    public func cutDrainShort() {
        state.withLock { $0.drainCut = true }
    }

    /// Stops accepting, lets in-flight exchanges finish for up to the drain
    /// timeout (or until ``cutDrainShort()``), then closes every connection. Blocks until done.
    public func stop() {
        let (listener, connections) = state.withLock { s -> (Descriptor?, [ClientConnection]) in
            s.stopping = true
            let listener = s.listener
            s.listener = nil
            return (listener, Array(s.connections.values))
        }
        if let listener {
            // Closed on the loop, once out of its epoll set: a batch of events
            // fetched before may still name the descriptor.
            let loop = acceptLoop
            let closed = DispatchSemaphore(value: 0)
            loop.execute {
                loop.unwatchListener(listener)
                listener.close()
                closed.signal()
            }
            _ = closed.wait(timeout: .now() + 2)
        }
        for c in connections { c.queue.async { c.drain() } }
        let deadline = Date().addingTimeInterval(configuration.timeouts.drain)
        while openConnections > 0 && Date() < deadline && !state.withLock({ $0.drainCut }) { usleep(20_000) }
        let rest = state.withLock { Array($0.connections.values) }
        let group = DispatchGroup()
        for c in rest { c.queue.async(group: group) { c.forceClose() } }
        _ = group.wait(timeout: .now() + 2)
        idleUpstreams.closeAll()
    }

}

/// Counters since start, for `/health`.
///
/// Client refusals come in two grades (see ``TLSOutcomeEvent/Refusal``):
/// `rejected` counts definite ones (an alert, a broken-off handshake),
/// `suspected` a completed handshake followed by silence, which a pinning
/// client and a mere probe (`openssl s_client`) look alike in.
public final class ProxyCounters: Sendable {
    public struct Counts: Sendable, Codable, Equatable {
        public var connections = 0
        public var flows = 0
        public var intercepted = 0
        /// Definite refusals.
        public var rejected = 0
        /// Suspected refusals.
        public var suspected = 0
        public var passthrough = 0
        public var upstreamFailures = 0
        public var events = 0
        /// Requests sent again on a new upstream connection after a reused
        /// one closed before responding (see ``UpstreamReplay``).
        public var upstreamRetries = 0
    }

    /// TLS outcomes under one attack profile.
    public struct ProfileCounts: Sendable, Codable, Equatable {
        public var intercepted = 0
        public var rejected = 0
        public var suspected = 0
        public var passthrough = 0
        public var upstreamFailures = 0
        /// Every outcome recorded under the profile, the ones above included.
        public var events = 0
    }

    // Atomics rather than a lock: every flow and every connection counts
    // here, from every loop at once.
    private let connections = Atomic<Int>(0)
    private let flows = Atomic<Int>(0)
    private let intercepted = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let suspected = Atomic<Int>(0)
    private let passthrough = Atomic<Int>(0)
    private let upstreamFailures = Atomic<Int>(0)
    private let events = Atomic<Int>(0)
    private let upstreamRetries = Atomic<Int>(0)
    // Once per connection, not per request: a lock is cheap enough here.
    private let byProfile = Locked<[String: ProfileCounts]>([:])
    private let ready = Locked<Date?>(nil)

    init() {}

    func markReady() { ready.withLock { $0 = Date() } }
    func countConnection() { connections.wrappingAdd(1, ordering: .relaxed) }
    func countFlow() { flows.wrappingAdd(1, ordering: .relaxed) }
    func countUpstreamRetry() { upstreamRetries.wrappingAdd(1, ordering: .relaxed) }

    func record(_ event: TLSOutcomeEvent) {
        events.wrappingAdd(1, ordering: .relaxed)
        let tally = Tally(event.kind)
        switch tally {
        case .intercepted?: intercepted.wrappingAdd(1, ordering: .relaxed)
        case .passthrough?: passthrough.wrappingAdd(1, ordering: .relaxed)
        case .upstreamFailure?: upstreamFailures.wrappingAdd(1, ordering: .relaxed)
        case .rejected?: rejected.wrappingAdd(1, ordering: .relaxed)
        case .suspected?: suspected.wrappingAdd(1, ordering: .relaxed)
        case nil: break
        }
        guard let profile = event.profile else { return }
        byProfile.withLock { all in
            var counts = all[profile] ?? ProfileCounts()
            counts.events += 1
            switch tally {
            case .intercepted?: counts.intercepted += 1
            case .passthrough?: counts.passthrough += 1
            case .upstreamFailure?: counts.upstreamFailures += 1
            case .rejected?: counts.rejected += 1
            case .suspected?: counts.suspected += 1
            case nil: break
            }
            all[profile] = counts
        }
    }

    /// Which counter an outcome adds to, in the proxy's totals and in its profile's alike;
    /// nil for an outcome only ``Counts/events`` counts.
    enum Tally {
        case intercepted, passthrough, upstreamFailure, rejected, suspected

        init?(_ kind: TLSOutcomeEvent.Kind) {
            if kind == .intercepted { self = .intercepted }
            else if kind == .passthrough { self = .passthrough }
            else if kind == .upstreamVerificationFailed || kind == .upstreamFailed { self = .upstreamFailure }
            else if kind.isDefiniteRefusal { self = .rejected }
            else if kind.isSuspectedRefusal { self = .suspected }
            else { return nil }
        }
    }

    public var counts: Counts {
        Counts(connections: connections.load(ordering: .relaxed), flows: flows.load(ordering: .relaxed),
               intercepted: intercepted.load(ordering: .relaxed), rejected: rejected.load(ordering: .relaxed),
               suspected: suspected.load(ordering: .relaxed),
               passthrough: passthrough.load(ordering: .relaxed), upstreamFailures: upstreamFailures.load(ordering: .relaxed),
               events: events.load(ordering: .relaxed), upstreamRetries: upstreamRetries.load(ordering: .relaxed))
    }
    /// Outcomes per attack profile, for the profiles that served a connection.
    public var profiles: [String: ProfileCounts] { byProfile.withLock { $0 } }
    public var readyAt: Date? { ready.withLock { $0 } }
}
