import Foundation
import Logging
import PinproxyCertificates
import PinproxyTLS

/// What a client connection's layers may use of the proxy, each as a
/// narrow value: a layer takes the parts it needs, never the server.
struct ConnectionServices: Sendable {
    /// Forward proxy or reverse proxy for one origin.
    var mode: ProxyConfiguration.Mode
    var timeouts: ProxyConfiguration.Timeouts
    /// Opens upstream connections (plain or verified TLS).
    var connector: UpstreamConnector
    /// Idle upstream connections kept for the next client connection, one pool per event loop.
    var idleUpstreams = IdleUpstreamPools(limits: nil)
    /// Which attack profile serves a host, and what the profiles draw on.
    var interception: InterceptionPolicy
    /// Where flows and TLS outcomes go.
    var recorder: FlowRecorder
    var logger: Logger
    /// The TLS context the proxy shows clients (certificates are installed per connection).
    var interceptionTLS: TLSContext
    /// Where the proxy itself listens: requests addressed there are refused.
    var ownAddresses: OwnAddresses
    /// The base64 `user:pass` a Basic Proxy-Authorization must carry, when required.
    var proxyCredentials: String?
    /// Reverse mode without `--keep-host-header`: requests name the origin in `Host`.
    var rewritesHost: Bool
    /// Whether intercepted connections may speak HTTP/2 with the client (see ``ClientProtocolChoice``).
    var http2: Bool = true
    /// Whether upstreams are offered `h2` (see ``ClientProtocolChoice``); off, a client's HTTP/2
    /// is translated to HTTP/1.1 unless the upstream refuses HTTP/1.1.
    var upstreamHTTP2: Bool = true
    /// Upstreams found to speak only HTTP/2 (shared by every connection).
    var http2OnlyUpstreams = HTTP2OnlyUpstreams()

    /// What a TLS upstream is offered by ALPN when the client speaks (or offered) HTTP/2:
    /// `h2, http/1.1`, or with `--upstream-http2 off` nil (the default `http/1.1`, or `h2`
    /// only for an upstream known to refuse HTTP/1.1; see `LayerHost.openUpstream`).
    var upstreamOfferForHTTP2Clients: [String]? { upstreamHTTP2 ? HTTP2ExchangeLayer.upstreamALPN : nil }
}

/// The attack profile for a host and the resources the profiles draw on.
struct InterceptionPolicy: Sendable {
    /// The profile the rules in force give `host` (rules change at run time).
    var profile: @Sendable (HostName) -> AttackProfile
    var catalog: AttackCatalog
    var resources: AttackResources
}

/// Records flows and TLS outcomes: counters, capture files and the log line.
struct FlowRecorder: Sendable {
    var capture: CaptureRecorder
    var counters: ProxyCounters
    var logger: Logger {
        didSet {
            flowLog = FlowLog(logger)
            wantsFlows = capture.wantsFlows || !flowLog.isOff
        }
    }
    /// Where each flow's line goes, worked out from `logger` once.
    private var flowLog: FlowLog
    /// Whether a flow goes anywhere (recent flows, a file, the log). When
    /// not, the layers only count their exchanges and build no `Flow`: about
    /// a tenth of the proxy's instructions per keep-alive request.
    private(set) var wantsFlows: Bool

    init(capture: CaptureRecorder, counters: ProxyCounters, logger: Logger) {
        self.capture = capture
        self.counters = counters
        self.logger = logger
        flowLog = FlowLog(logger)
        wantsFlows = capture.wantsFlows || !flowLog.isOff
    }

    func record(_ event: TLSOutcomeEvent) {
        counters.record(event)
        capture.record(event)
    }

    /// Counts an exchange whose flow was not built (``wantsFlows`` is false).
    func countUnbuiltFlow() { counters.countFlow() }

    func record(_ flow: Flow) {
        counters.countFlow()
        capture.record(flow)
        flowLog.log(flow)
    }

    /// The flow's log line: `client method url -> status (error) (profile name)`.
    static func line(for flow: Flow) -> String { FlowLog.line(for: flow) }

    /// A body accumulator with the capture's limit.
    func makeBodyCapture() -> BodyCapture { capture.makeBodyCapture() }
}
