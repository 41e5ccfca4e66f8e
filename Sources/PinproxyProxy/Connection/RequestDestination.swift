import PinproxyHTTP1

/// Where an HTTP/1 layer's requests go: chosen by the layer before it
/// (forward mode's first layer, or TLS interception once the upstream is known).
enum RequestDestination {
    /// An explicit proxy: requests carry absolute-form URLs, or are CONNECT.
    case forwardProxy
    /// Every request goes to this origin (interception, reverse mode).
    case origin(UpstreamTarget)
    /// Every request is answered with this error (the upstream failed).
    case failing(status: Int, reason: String, target: UpstreamTarget)

    /// The `Proxy-Status` of a request answered ``failing``: said by the
    /// proxy, not the upstream, in the words of RFC 9209. `pin --connect
    /// --proxy` reads it to tell the proxy's stand-in chain from one forged
    /// from the upstream's.
    static func proxyStatus(for status: Int) -> HTTPHeaders {
        var fields = HTTPHeaders()
        fields.add(name: "Proxy-Status", value: "pinproxy; error=\(status == 403 ? "destination_ip_prohibited" : "destination_unavailable")")
        return fields
    }

    /// The one target every request goes to; nil in forward mode.
    var fixedTarget: UpstreamTarget? {
        switch self {
        case .origin(let target), .failing(_, _, let target): return target
        case .forwardProxy: return nil
        }
    }
}
