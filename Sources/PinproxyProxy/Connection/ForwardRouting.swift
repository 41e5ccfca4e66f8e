import Foundation
import PinproxyCertificates
import PinproxyHTTP1

/// Where a forward-mode request goes, decided on its head alone: a CONNECT
/// (for the ``ConnectLayer``), an `http://` or `https://` upstream, or a
/// refusal — no Proxy-Authorization when one is required (407), a target
/// that is not an absolute URL (400), the proxy's own address (403).
struct ForwardRouting {
    /// The base64 `user:pass` a Basic Proxy-Authorization must carry, when required.
    var credentials: String?
    /// Where the proxy itself listens: requests addressed there are refused.
    var ownAddresses: OwnAddresses

    enum Decision {
        /// A CONNECT request: the CONNECT layer checks it once the parser handed over the bytes after it.
        case connect
        case upstream(UpstreamTarget)
        /// 407 with a Basic challenge; `log` says why (as CONNECT's refusal does, no flow is recorded).
        case authenticate(log: String)
        /// A refusal recorded as the request's flow; `log`: a line for the log, when one is due.
        case refuse(status: Int, reason: String, log: String?)
        /// The request names the proxy's own listener or control API (403, recorded as self-addressed).
        case selfAddressed(OwnAddresses.Endpoint, host: HostName, port: Int)
    }

    /// The 407 answer to `head`, with its Basic challenge.
    static func authenticationRequired(_ head: HTTP1RequestHead) -> [UInt8] {
        var challenge = HTTPHeaders()
        challenge.add(name: "Proxy-Authenticate", value: "Basic realm=\"pinproxy\"")
        return HTTP1Response.error(status: 407, reason: ProxyAuthorization.refusal(for: head), headers: challenge)
    }

    func route(_ head: HTTP1RequestHead) -> Decision {
        if head.isConnect { return .connect }
        guard ProxyAuthorization.allows(head, credentials: credentials) else {
            return .authenticate(log: "\(head.method) \(head.target) refused (407): \(ProxyAuthorization.logReason(head))")
        }
        guard case .absolute(let url) = head.target else {
            return .refuse(status: 400,
                           reason: "pinproxy is a proxy: send absolute-form http:// URLs (http_proxy) or CONNECT host:port (https_proxy)",
                           log: "\(head.method) \(head.target) refused (400): not an absolute http:// URL; the client treats the proxy as an origin")
        }
        if let own = ownAddresses.endpoint(named: url.host, port: url.port) {
            return .selfAddressed(own, host: url.host, port: url.port)
        }
        return .upstream(UpstreamTarget(host: url.host, port: url.port, tls: url.scheme == "https", serverName: url.host))
    }
}
