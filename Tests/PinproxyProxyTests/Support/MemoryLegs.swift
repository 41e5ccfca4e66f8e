import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyTLS
import Testing
@testable import PinproxyProxy

/// The client's side of a connection in memory: what a layer sends is kept,
/// and whether it reads, closes or is congested is recorded.
final class MemoryClient: ClientSide {
    let queue = DispatchQueue(label: "memory-client")
    private(set) var received: [UInt8] = []
    var congested = false
    private(set) var reading = false
    private(set) var closed = false
    /// `closeAfterSending`'s linger, when it was called.
    private(set) var closedAfterSending: TimeInterval?? = nil

    var text: String { String(decoding: received, as: UTF8.self) }
    func start() {}
    func send(_ bytes: ArraySlice<UInt8>) { received += bytes }
    func send(_ bytes: [UInt8]) { received += bytes }
    func cork() {}
    func uncork() {}
    var outputIsCongested: Bool { congested }
    func pauseReading() { reading = false }
    func resumeReading() { reading = true }
    func closeAfterSending(lingering: TimeInterval?) { closedAfterSending = .some(lingering) }
    func close() { closed = true }
    func startTLS(_ connection: TLSConnection, initial: ArraySlice<UInt8>, handler: @escaping (TLSHandshakeResult) -> Void) {
        Issue.record("an exchange layer started TLS")
    }
    func continueHandshake() { Issue.record("an exchange layer continued a handshake") }
    func abandonTLS() -> [UInt8] {
        Issue.record("an exchange layer abandoned TLS")
        return []
    }
}

/// A host whose legs are made by the test: no socket is ever opened.
final class MemoryHost: LayerHost {
    let memory = MemoryClient()
    var client: any ClientSide { memory }
    /// Makes the leg for each `openLeg`; nil: opening fails at once.
    var makeLeg: ((UpstreamTarget, any UpstreamLegOwner, Bool) -> any UpstreamLeg)?
    private(set) var opened: [any UpstreamLeg] = []
    private(set) var released: [Upstream] = []
    private(set) var finished = false
    weak var layer: (any ConnectionLayer)?

    func openUpstream(_ target: UpstreamTarget, alpn: [String]?, mayTakeIdle: Bool) throws(UpstreamFailure) -> Upstream {
        throw UpstreamFailure(reason: "no sockets in memory", verificationFailed: false)
    }

    func openLeg(_ target: UpstreamTarget, for owner: any UpstreamLegOwner, via: Bool) throws(UpstreamFailure) -> any UpstreamLeg {
        guard let makeLeg else { throw UpstreamFailure(reason: "cannot connect to \(target.host.uriHost):\(target.port)", verificationFailed: false) }
        let leg = makeLeg(target, owner, via)
        opened.append(leg)
        return leg
    }

    func adoptLeg(_ upstream: Upstream, early: [UInt8], for owner: any UpstreamLegOwner, via: Bool) -> any UpstreamLeg {
        Issue.record("no upstream is handed over in memory")
        return MemoryLeg(target: upstream.target, owner: owner)
    }

    func upstreamRefused(_ target: UpstreamTarget, reason: String) {}
    func releaseUpstream(_ upstream: Upstream) { released.append(upstream) }
    func switchLayer(to next: any ConnectionLayer) { layer = next }

    func finish() {
        guard !finished else { return }
        finished = true
        layer?.close()
    }

    /// Runs `body` on the connection's queue, as every event of a real connection runs.
    func run<T>(_ body: () throws -> T) rethrows -> T { try memory.queue.sync(execute: body) }
}

/// A leg the test plays: it records what the layer asked of it and answers
/// with response bytes parsed as an HTTP/1.1 connection would.
final class MemoryLeg: UpstreamLeg {
    let target: UpstreamTarget
    private unowned let owner: any UpstreamLegOwner
    private var parser = HTTP1Parser(mode: .response)
    private(set) var heads: [HTTP1RequestHead] = []
    private(set) var body: [UInt8] = []
    private(set) var requestEnds = 0
    private(set) var exchangesEnded: [(keepAlive: Bool, requestEnded: Bool)] = []
    private(set) var closed = false
    private(set) var readingResponses = true
    var backedUp = false

    init(target: UpstreamTarget, owner: any UpstreamLegOwner) {
        self.target = target
        self.owner = owner
    }

    var connection: Upstream? { nil }
    func canCarry(_ target: UpstreamTarget) -> Bool { !closed && target == self.target }
    var holdsRequest: Bool { false }
    var isBackedUp: Bool { backedUp }

    func send(_ head: HTTP1RequestHead, names: TargetNames) {
        heads.append(head)
        parser.expectResponse(toMethod: head.method)
    }

    func sendBody(_ bytes: ArraySlice<UInt8>) { body += bytes }
    func endRequest(_ trailers: HTTPHeaders) { requestEnds += 1 }

    func exchangeEnded(upstreamKeepAlive: Bool, requestEnded: Bool) -> Bool {
        exchangesEnded.append((upstreamKeepAlive, requestEnded))
        return upstreamKeepAlive && !closed
    }

    func readResponses(_ allowed: Bool) { readingResponses = allowed }
    func clientDrained() {}
    func cork() {}
    func uncork() {}
    func upstream(_ upstream: Upstream, _ event: UpstreamEvent) { Issue.record("a socket's event reached a leg in memory") }
    func takeConnectionForTunnel() -> Upstream? { nil }
    func takeConnectionBetweenExchanges() -> Upstream? { nil }
    func close() { closed = true }

    /// The upstream sends `text`.
    func respond(_ text: String) throws {
        var events = try parser.feed(Array(text.utf8)[...])
        owner.leg(self, received: &events)
    }

    /// The upstream closes its side: a body framed by the close ends.
    func endOfStream() throws {
        var events = try parser.finish()
        if !events.isEmpty { owner.leg(self, received: &events) }
        if !closed { fail("the upstream closed the connection") }
    }

    /// The connection fails (reset, broken TLS...).
    func fail(_ reason: String) {
        closed = true
        owner.legFailed(self, UpstreamFailure(reason: reason, verificationFailed: false))
    }
}

/// What an exchange layer is handed in memory: services with no socket and
/// no listener behind them.
enum MemoryServices {
    static let authority = Result { try CertificateAuthority.create() }

    static func make(http2: Bool = false) throws -> ConnectionServices {
        let logger = Logger(label: "memory") { _ in SwiftLogNoOpLogHandler() }
        let configuration = ProxyConfiguration()
        let own = OwnAddresses(interfaceAddresses: { [] })
        return ConnectionServices(
            mode: .forward, timeouts: configuration.timeouts,
            connector: UpstreamConnector(tls: try TLSContext.client(trust: .insecure), connectTimeout: 5, handshakeTimeout: 5,
                                         upstreamAddresses: UpstreamAddresses(), ownAddresses: own),
            interception: InterceptionPolicy(profile: { _ in .forge }, catalog: configuration.catalog,
                                             resources: try AttackResources(authority: authority.get())),
            recorder: FlowRecorder(capture: CaptureRecorder(), counters: ProxyCounters(), logger: logger),
            logger: logger, interceptionTLS: try TLSContext.server(), ownAddresses: own,
            proxyCredentials: nil, rewritesHost: true, http2: http2)
    }
}
