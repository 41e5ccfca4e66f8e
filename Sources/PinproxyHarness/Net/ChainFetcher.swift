import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Fetches the chain a TLS server presents, without trusting it (`pin --connect`).
///
/// The proxy's TLS engine (``TLSConnection``, with an insecure client context:
/// no verification, no ALPN) driven over a blocking socket with send and
/// receive timeouts: the engine's flights are sent, the server's bytes fed
/// back, until the handshake ends. The point is to read what the server sends
/// so a policy can be written from it, never to rely on the connection.
public enum ChainFetcher {
    /// Connects to `host`:`port` (through the HTTP proxy `proxy` with CONNECT, when given),
    /// sends `serverName` as SNI (DNS names only) and returns the presented chain.
    public static func fetch(host: String, port: UInt16, serverName: String? = nil, timeout: TimeInterval = 10,
                             proxy: (host: String, port: UInt16)? = nil) throws -> [Certificate] {
        try fetchChain(host: host, port: port, serverName: serverName, timeout: timeout, proxy: proxy) { _, _ in }
    }

    /// The fetch, with `afterHandshake` called on the completed connection before it is closed.
    static func fetchChain(host: String, port: UInt16, serverName: String?, timeout: TimeInterval,
                           proxy: (host: String, port: UInt16)?,
                           afterHandshake: (TLSConnection, Int32) -> Void) throws -> [Certificate] {
        let endpoint = display(host: host, port: port)
        // Closed when the socket goes, after the fetch.
        let socket = try LoopbackSocket.connect(host: proxy?.host ?? host, port: Int(proxy?.port ?? port), timeout: timeout)
        let fd = socket.fd
        if let proxy { try tunnel(fd, to: endpoint, through: display(host: proxy.host, port: proxy.port)) }
        defer { withExtendedLifetime(socket) {} }
        let tls = try TLSConnection(context: TLSContext.client(trust: .insecure, alpn: []))
        if let name = try? HostName(validating: serverName ?? host) {
            try tls.configureClient(serverName: name)  // SNI for a DNS name; nothing else without trust
        }
        let timedOut = "timed out after \(seconds(timeout)) s waiting for the TLS handshake (the server accepted the connection but did not answer)"
        let hungUp = "the server closed the connection during the TLS handshake"
        handshake: while true {
            let result = tls.handshake()
            // The ClientHello, or the alert of a failure: out before waiting.
            // (A failure's own reason says more than a refused alert would.)
            if let error = sendOutput(tls, fd), !result.isFailure {
                throw PinproxyError(.connect, "\(endpoint): the connection failed during the TLS handshake (\(error))")
            }
            switch result {
            case .complete:
                break handshake
            case .wantRead:
                switch receive(into: tls, fd) {
                case .bytes: continue
                case .wouldBlock: throw PinproxyError(.connect, "\(endpoint): \(timedOut)")
                case .endOfStream: tls.feedEndOfInput()
                case .failed(let code):
                    throw PinproxyError(.connect, "\(endpoint): the connection failed during the TLS handshake (\(String(cString: strerror(code))))")
                }
            case .wantWrite:
                continue  // the output went out above
            case .closed, .clientHello:
                throw PinproxyError(.connect, "\(endpoint): \(hungUp)")
            case .failed(let failure):
                switch failure.kind {
                case .notTLS:
                    // Not TLS records: an HTTP server's "HTTP/1.1 400" or another protocol.
                    throw PinproxyError(.connect, "\(endpoint): the server did not answer with TLS (wrong version number: is this a plain-HTTP port?)")
                case .transport:
                    throw PinproxyError(.connect, "\(endpoint): the connection failed during the TLS handshake (\(failure.reason))")
                default:
                    throw PinproxyError(.connect, "\(endpoint): TLS handshake failed", openSSLErrors: failure.openSSLErrors)
                }
            }
        }
        let chain = tls.peerCertificates
        afterHandshake(tls, fd)
        tls.shutdown()
        _ = sendOutput(tls, fd)  // close_notify, best effort
        guard !chain.isEmpty else { throw PinproxyError(.connect, "\(endpoint): the server presented no certificate") }
        return chain
    }

    /// Asks the proxy on `fd` for a tunnel to `endpoint` and reads its answer, byte by byte up to
    /// the end of its head, so that nothing of the server's TLS is read with it.
    private static func tunnel(_ fd: Int32, to endpoint: String, through proxy: String) throws {
        let request = Array("CONNECT \(endpoint) HTTP/1.1\r\nHost: \(endpoint)\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw PinproxyError(.connect, "\(proxy): cannot send CONNECT (\(String(cString: strerror(errno))))")
        }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]) && !head.ends(with: [10, 10]) {
            guard head.count < 16 * 1024 else { throw PinproxyError(.connect, "\(proxy): the answer to CONNECT has no end of head") }
            let n = read(fd, &byte, 1)
            if n == 1 { head.append(byte); continue }
            if n < 0 && errno == EINTR { continue }
            let why = n == 0 ? "closed the connection" : errno == EAGAIN ? "did not answer in time" : String(cString: strerror(errno))
            throw PinproxyError(.connect, "\(proxy): the proxy \(why) before answering CONNECT \(endpoint)")
        }
        let statusLine = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw PinproxyError(.connect, "\(proxy): not an HTTP proxy (it answered CONNECT with '\(statusLine.prefix(80))')")
        }
        guard (200..<300).contains(status) else {
            throw PinproxyError(.connect, "\(proxy): the proxy refused CONNECT \(endpoint): \(statusLine)")
        }
    }

    enum Received { case bytes, wouldBlock, endOfStream, failed(Int32) }

    /// One blocking read (bounded by the socket's receive timeout) straight
    /// into the engine's input.
    static func receive(into tls: TLSConnection, _ fd: Int32) -> Received {
        var received = Received.wouldBlock
        _ = tls.receive(maxBytes: 16 * 1024 + 512) { space in
            while true {
                let n = read(fd, space.baseAddress, space.count)
                if n > 0 { received = .bytes; return n }
                if n == 0 { received = .endOfStream; return 0 }
                if errno == EINTR { continue }
                received = errno == EAGAIN || errno == EWOULDBLOCK ? .wouldBlock : .failed(errno)
                return -1
            }
        }
        return received
    }

    /// Sends everything the engine has for the server; the socket's error text if that failed.
    static func sendOutput(_ tls: TLSConnection, _ fd: Int32) -> String? {
        while tls.pendingOutput > 0 {
            var failure: String?
            let n = tls.withPendingOutput { bytes in
                let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
                if n < 0 && errno != EINTR { failure = String(cString: strerror(errno)) }
                return n
            }
            if let failure { return failure }
            if n == 0 { return "the socket took no bytes" }
        }
        return nil
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

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix) }
}

private extension TLSHandshakeResult {
    var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}
