import PinproxyCertificates

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
