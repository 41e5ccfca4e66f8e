import Foundation
import PinproxyCertificates

/// A blocking TCP socket with send and receive timeouts: the harness's clients
/// and its origin run one connection per thread, so plain blocking I/O keeps
/// each of them a straight line to read.
final class LoopbackSocket: @unchecked Sendable {
    // Sendable: used by one thread at a time (the connection's own).
    let fd: Int32
    private var closed = false

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// Connects to a numeric `host` (or a name the system resolves) and `port`.
    static func connect(host: String, port: Int, timeout: TimeInterval) throws -> LoopbackSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
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
            let socket = LoopbackSocket(fd: fd)
            socket.setTimeout(timeout)  // on Linux SO_SNDTIMEO also bounds connect()
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                socket.setNoDelay()
                return socket
            }
            lastError = errno == EINPROGRESS || errno == EAGAIN
                ? "timed out after \(ChainFetcher.seconds(timeout)) s" : String(cString: strerror(errno))
        }
        throw PinproxyError(.connect, "\(ChainFetcher.display(host: host, port: UInt16(clamping: port))): cannot connect (\(lastError))")
    }

    /// Wraps an accepted descriptor.
    static func accepted(_ fd: Int32, timeout: TimeInterval) -> LoopbackSocket {
        let socket = LoopbackSocket(fd: fd)
        socket.setTimeout(timeout)
        socket.setNoDelay()
        return socket
    }

    /// Small writes go out at once: a TLS record held back by Nagle's algorithm
    /// waits for a delayed ACK (40 ms on Linux) on every exchange.
    func setNoDelay() {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func setTimeout(_ timeout: TimeInterval) {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The local port, by which the proxy names this client in its events.
    var localPort: Int { Self.port(of: fd, peer: false) }
    /// The peer's port.
    var peerPort: Int { Self.port(of: fd, peer: true) }

    static func port(of fd: Int32, peer: Bool) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return 0 }
        switch Int32(storage.ss_family) {
        case AF_INET: return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
        case AF_INET6: return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        default: return 0
        }
    }

    /// Sends every byte or throws.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw PinproxyError(.connect, "send failed: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// Up to `max` bytes; empty at end of stream; throws on error or timeout.
    func receive(max: Int = 16_384) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
            if n >= 0 { return Array(buffer.prefix(n)) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw PinproxyError(.connect, "timed out waiting for data") }
            throw PinproxyError(.connect, "receive failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads up to the end of an HTTP head (`\r\n\r\n`); returns the head and any bytes after it.
    func receiveHead(limit: Int = 16_384) throws -> (head: String, rest: [UInt8]) {
        var bytes: [UInt8] = []
        while true {
            if let end = HTTPText.headEnd(in: bytes) {
                return (String(decoding: bytes[..<end], as: UTF8.self), Array(bytes[(end + 4)...]))
            }
            guard bytes.count < limit else { throw PinproxyError(.connect, "the HTTP head is longer than \(limit) bytes") }
            let chunk = try receive(max: 4096)
            if chunk.isEmpty { throw PinproxyError(.connect, "the connection closed before the end of the HTTP head") }
            bytes += chunk
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}

/// Small pieces of HTTP/1.1 text handling shared by the client and the origin.
enum HTTPText {
    /// The offset of the `\r\n\r\n` that ends a head.
    static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// The status code of a response head (`HTTP/1.1 200 OK` → 200).
    static func status(of head: String) -> Int? {
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/") else { return nil }
        return Int(parts[1])
    }

    /// The value of header `name` in a head (case-insensitive), if present.
    static func header(_ name: String, in head: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}
