import Foundation
import PinproxyCertificates
import PinproxyTLS

/// A blocking TCP socket with send and receive timeouts: the harness's clients
/// and its origin run one connection per thread, so plain blocking I/O keeps
/// each of them a straight line to read.
final class LoopbackSocket: BlockingSocketTransport, @unchecked Sendable {
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
        switch bytes.withUnsafeBytes({ sendAll($0) }) {
        case nil: return
        case .timedOut?: throw PinproxyError(.connect, "send failed: timed out")
        case .failed(let why)?: throw PinproxyError(.connect, "send failed: \(why)")
        default: throw PinproxyError(.connect, "send failed")
        }
    }

    /// Up to `max` bytes; empty at end of stream; throws on error or timeout.
    func receive(max: Int = 16_384) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        switch buffer.withUnsafeMutableBytes({ receive(into: $0) }) {
        case .bytes(let n): return Array(buffer.prefix(n))
        case .endOfStream: return []
        case .timedOut: throw PinproxyError(.connect, "timed out waiting for data")
        case .failed(let why): throw PinproxyError(.connect, "receive failed: \(why)")
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}
