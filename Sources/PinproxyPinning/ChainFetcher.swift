internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// Fetches the chain a TLS server presents, without trusting it.
///
/// A blocking client handshake with `SSL_VERIFY_NONE` over a socket with send
/// and receive timeouts: the point is to read what the server sends so a policy
/// can be written from it, never to rely on the connection.
public enum ChainFetcher {
    /// Connects to `host`:`port`, sends `serverName` as SNI (DNS names only) and returns the presented chain.
    public static func fetch(host: String, port: UInt16, serverName: String? = nil, timeout: TimeInterval = 10) throws -> [Certificate] {
        let endpoint = display(host: host, port: port)
        let fd = try connect(host: host, port: port, timeout: timeout)
        defer { close(fd) }
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw OpenSSL.error("SSL_CTX_new failed", code: .connect) }
        defer { SSL_CTX_free(ctx) }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        guard let ssl = SSL_new(ctx) else { throw OpenSSL.error("SSL_new failed", code: .connect) }
        defer { SSL_free(ssl) }
        let sni = serverName ?? host
        if case .dns(let name)? = try? HostName(validating: sni) {
            _ = pp_SSL_set_tlsext_host_name(ssl, name)
        }
        guard SSL_set_fd(ssl, fd) == 1 else { throw OpenSSL.error("SSL_set_fd failed", code: .connect) }
        errno = 0
        let rc = SSL_connect(ssl)
        guard rc == 1 else {
            let savedErrno = errno
            let code = SSL_get_error(ssl, rc)
            let reasonCode = ERR_peek_last_error() == 0 ? 0 : pp_ERR_GET_REASON(ERR_peek_last_error())
            let detail = OpenSSL.drainErrors()
            let reason: String
            switch code {
            // A receive timeout (SO_RCVTIMEO) surfaces as a retry request on the blocking socket.
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                reason = "timed out after \(seconds(timeout)) s waiting for the TLS handshake (the server accepted the connection but did not answer)"
            case SSL_ERROR_SYSCALL where savedErrno == EAGAIN || savedErrno == EWOULDBLOCK:
                reason = "timed out after \(seconds(timeout)) s waiting for the TLS handshake (the server accepted the connection but did not answer)"
            case SSL_ERROR_SYSCALL where savedErrno != 0:
                reason = "the connection failed during the TLS handshake (\(String(cString: strerror(savedErrno))))"
            case SSL_ERROR_SYSCALL, SSL_ERROR_ZERO_RETURN:
                reason = "the server closed the connection during the TLS handshake"
            case SSL_ERROR_SSL where reasonCode == SSL_R_WRONG_VERSION_NUMBER
                || reasonCode == SSL_R_PACKET_LENGTH_TOO_LONG || reasonCode == SSL_R_RECORD_LENGTH_MISMATCH:
                // Not TLS records: an HTTP server's "HTTP/1.1 400" or another protocol.
                throw PinproxyError(.connect, "\(endpoint): the server did not answer with TLS (wrong version number: is this a plain-HTTP port?)")
            case SSL_ERROR_SSL where reasonCode == SSL_R_UNEXPECTED_EOF_WHILE_READING:
                reason = "the server closed the connection during the TLS handshake"
            default:
                reason = "TLS handshake failed"
            }
            throw PinproxyError(.connect, "\(endpoint): \(reason)", openSSLErrors: detail)
        }
        var chain: [Certificate] = []
        if let stack = SSL_get_peer_cert_chain(ssl) {
            for i in 0..<pp_sk_X509_num(stack) {
                if let x = pp_sk_X509_value(stack, i) { chain.append(Certificate(borrowing: x)) }
            }
        }
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        guard !chain.isEmpty else { throw PinproxyError(.connect, "\(endpoint): the server presented no certificate") }
        return chain
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
        func refuse() -> PinproxyError { PinproxyError(.invalidArgument, "'\(endpoint)' is not HOST:PORT") }
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

    private static func connect(host: String, port: UInt16, timeout: TimeInterval) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw PinproxyError(.connect, "\(host): cannot resolve the name (\(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            if fd < 0 { lastError = String(cString: strerror(errno)); continue }
            var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
            // On Linux SO_SNDTIMEO also bounds connect().
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno == EINPROGRESS || errno == EAGAIN ? "timed out after \(seconds(timeout)) s" : String(cString: strerror(errno))
            close(fd)
        }
        throw PinproxyError(.connect, "\(display(host: host, port: port)): cannot connect (\(lastError))")
    }
}
