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
    /// Whether intercepted connections may speak HTTP/2 (ALPN `h2` on both legs).
    var http2: Bool = false
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
    var logger: Logger

    func record(_ event: TLSOutcomeEvent) {
        counters.record(event)
        capture.record(event)
    }

    func record(_ flow: Flow) {
        counters.countFlow()
        capture.record(flow)
        logger.info("\(flow.clientAddress) \(flow.request.method) \(flow.request.url) -> \(flow.response.map { String($0.status) } ?? "-")\(flow.error.map { " (\($0))" } ?? "")\(flow.clientTLS?.profile.map { " (profile \($0))" } ?? "")")
    }

    /// A body accumulator with the capture's limit.
    func makeBodyCapture() -> BodyCapture { capture.makeBodyCapture() }
}
