import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Fetches the chain a TLS server presents, without trusting it (`pin --connect`).
///
/// The proxy's TLS engine (``TLSConnection``, with an insecure client context:
/// no verification, no ALPN) driven over a blocking socket with send and
/// receive timeouts by ``TLSBlockingStream``, as the harness's clients are. The point is to read what the server sends
/// so a policy can be written from it, never to rely on the connection.
public enum ChainFetcher {
    /// Connects to `host`:`port` (through the HTTP proxy `proxy` with CONNECT, when given),
    /// sends `serverName` as SNI (DNS names only) and returns the presented chain.
    public static func fetch(host: String, port: UInt16, serverName: String? = nil, timeout: TimeInterval = 10,
                             proxy: (host: String, port: UInt16)? = nil) throws -> [Certificate] {
        try fetchChain(host: host, port: port, serverName: serverName, timeout: timeout, proxy: proxy) { _ in }
    }

    /// The fetch, with `afterHandshake` called on the completed connection before it is closed.
    static func fetchChain(host: String, port: UInt16, serverName: String?, timeout: TimeInterval,
                           proxy: (host: String, port: UInt16)?,
                           afterHandshake: (TLSBlockingStream) -> Void) throws -> [Certificate] {
        let endpoint = display(host: host, port: port)
        // Closed when the socket goes, after the fetch.
        let socket = try LoopbackSocket.connect(host: proxy?.host ?? host, port: Int(proxy?.port ?? port), timeout: timeout)
        if let proxy {
            let name = display(host: proxy.host, port: proxy.port)
            let answer = try ProxyTunnel.open(socket, to: endpoint, proxy: name)
            guard (200..<300).contains(answer.status) else {
                throw PinproxyError(.connect, "\(name): the proxy refused CONNECT \(endpoint): \(answer.statusLine)")
            }
        }
        let connection = try TLSConnection(context: TLSContext.client(trust: .insecure, alpn: []))
        if let name = try? HostName(validating: serverName ?? host) {
            try connection.configureClient(serverName: name)  // SNI for a DNS name; nothing else without trust
        }
        let tls = TLSBlockingStream(connection, over: socket)
        do {
            try tls.handshake()
        } catch {
            let (text, errors) = Self.explain(error, timeout: timeout)
            throw PinproxyError(.connect, "\(endpoint): \(text)", openSSLErrors: errors)
        }
        let chain = connection.peerCertificates
        afterHandshake(tls)
        tls.shutdown()  // close_notify, best effort
        guard !chain.isEmpty else { throw PinproxyError(.connect, "\(endpoint): the server presented no certificate") }
        return chain
    }

    /// What went wrong in the handshake, in `pin --connect`'s words, and OpenSSL's when they
    /// say more.
    private static func explain(_ error: TLSStreamError, timeout: TimeInterval) -> (String, [String]) {
        switch error.kind {
        case .timedOut:
            return ("timed out after \(seconds(timeout)) s waiting for the TLS handshake (the server accepted the connection but did not answer)", [])
        case .closed:
            return ("the server closed the connection during the TLS handshake", [])
        case .transport:
            return ("the connection failed during the TLS handshake (\(error.reason))", [])
        default:
            // Not TLS records: an HTTP server's "HTTP/1.1 400" or another protocol.
            if error.failure?.kind == .notTLS {
                return ("the server did not answer with TLS (wrong version number: is this a plain-HTTP port?)", [])
            }
            return ("TLS handshake failed", error.failure?.openSSLErrors ?? [])
        }
    }

    /// `host:port`, with an IPv6 literal in brackets (`[::1]:443`).
    public static func display(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Seconds for messages: `2`, `0.5`.
    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%g", value)
    }

    /// Splits `HOST:PORT`, `[v6]:PORT`.
    public static func parse(endpoint: String) throws -> (host: String, port: UInt16) {
        func refuse() -> PinproxyError {
            // A bare name most likely means HTTPS's port.
            let hint = !endpoint.isEmpty && !endpoint.contains(":") ? " (for HTTPS: \(endpoint):443)" : ""
            return PinproxyError(.invalidArgument, "'\(endpoint)' is not HOST:PORT\(hint)")
        }
        let hostPart: Substring
        let portPart: Substring
        if endpoint.hasPrefix("[") {
            guard let close = endpoint.firstIndex(of: "]") else { throw refuse() }
            hostPart = endpoint[endpoint.index(after: endpoint.startIndex)..<close]
            let rest = endpoint[endpoint.index(after: close)...]
            guard rest.hasPrefix(":") else { throw refuse() }
            portPart = rest.dropFirst()
        } else {
            guard let colon = endpoint.lastIndex(of: ":") else { throw refuse() }
            hostPart = endpoint[..<colon]
            portPart = endpoint[endpoint.index(after: colon)...]
        }
        guard !hostPart.isEmpty, let port = UInt16(portPart), port > 0 else { throw refuse() }
        _ = try HostName(validating: String(hostPart))
        return (String(hostPart), port)
    }
}
