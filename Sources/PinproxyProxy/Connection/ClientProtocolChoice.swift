/// The application protocol an intercepted client is offered, and how its
/// requests reach the upstream: the one rule, decided once the upstream
/// connection opened at the ClientHello has settled.
///
/// The proxy behaves as a direct connection would wherever it can: a client
/// that offers both `h2` and `http/1.1` gets what the upstream chose. It
/// translates only where mirroring would leave the client without a
/// protocol it speaks, or where the upstream has no ALPN to mirror (a plain
/// `http://` origin in reverse mode, where the client's TLS ends at the proxy):
///
/// | `--http2` | client offers | upstream | client gets |
/// |---|---|---|---|
/// | off | anything | anything | HTTP/1.1 (``http1``) |
/// | on | no `h2` | anything | HTTP/1.1 (``http1``) |
/// | on | `h2` (with or without `http/1.1`) | TLS, chose `h2` | HTTP/2, relayed stream for stream (``relayHTTP2``) |
/// | on | `h2` (with or without `http/1.1`) | plain `http://` (reverse mode) | HTTP/2, translated to HTTP/1.1 (``translate``) |
/// | on | `h2` and `http/1.1` | TLS, chose `http/1.1` or nothing | HTTP/1.1, mirrored (``http1``) |
/// | on | `h2` only | TLS, chose `http/1.1` or nothing | HTTP/2, translated to HTTP/1.1 (``translate``) |
/// | on | `h2` and `http/1.1` | failed | HTTP/1.1; requests get the 502 (``http1``) |
/// | on | `h2` only | failed | HTTP/2; every stream gets the 502 (``translate``) |
///
/// With `--upstream-http2 off` a TLS upstream is offered `http/1.1` only, as HAProxy
/// and nginx do by default, and a client that offers `h2` gets HTTP/2 translated
/// whatever it offered besides (every stream gets the 502 when the upstream failed);
/// an upstream that refused HTTP/1.1 and was reached over `h2` is relayed.
///
/// An HTTP/2 connection whose upstream is opened again later (the first one
/// went away) relays when the new one chose `h2` and translates otherwise.
enum ClientProtocolChoice: Equatable, Sendable {
    /// HTTP/1.1 with the client: the HTTP/1 layer.
    case http1
    /// HTTP/2 on both legs.
    case relayHTTP2
    /// HTTP/2 with the client, HTTP/1.1 with the upstream (``HTTP1UpstreamPool``).
    case translate

    /// The choice for a client that offered `clientOffers` by ALPN.
    /// - Parameters:
    ///   - upstreamTLS: whether the upstream speaks TLS (false for a reverse-mode `http://` origin).
    ///   - upstreamALPN: what the upstream chose (nil: no ALPN, or it failed).
    ///   - upstreamFailed: the upstream could not be reached or verified.
    ///   - upstreamHTTP2: whether the upstream was offered `h2` (`--upstream-http2`).
    static func choose(http2: Bool, upstreamHTTP2: Bool = true, clientOffers: [String], upstreamTLS: Bool, upstreamALPN: String?,
                       upstreamFailed: Bool) -> ClientProtocolChoice {
        guard http2, clientOffers.contains("h2") else { return .http1 }
        if !upstreamFailed && upstreamTLS && upstreamALPN == "h2" { return .relayHTTP2 }
        if !upstreamHTTP2 || (!upstreamFailed && !upstreamTLS) { return .translate }
        return clientOffers.contains("http/1.1") ? .http1 : .translate
    }

    /// What the client's TLS connection accepts by ALPN, in the proxy's
    /// order of preference; nil keeps the context's (`http/1.1`).
    var clientALPN: [String]? { self == .http1 ? nil : ["h2", "http/1.1"] }
}
