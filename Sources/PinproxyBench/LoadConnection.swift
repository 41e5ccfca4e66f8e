import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS

/// One client connection of ``LoadClient``: a blocking loopback socket, an
/// optional `CONNECT` through a forward proxy, a verified TLS handshake, then
/// HTTP/1.1 requests whose responses must be 2xx.
///
/// The engine is PinproxyTLS's (the proxy's own), driven straight over the
/// socket; reads reuse one buffer, so a keep-alive request costs one `send`,
/// one `recv` and no allocation beyond the engine's.
final class LoadConnection: BlockingSocketTransport {
    let fd: Int32
    private var stream: TLSBlockingStream?
    private var plain = [UInt8](repeating: 0, count: 16_384)
    /// Response bytes read and not yet consumed.
    private var pending: [UInt8] = []
    private var closed = false

    /// Connects to `port` on 127.0.0.1 with blocking I/O bounded by `timeout` seconds.
    init(port: Int, timeout: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PinproxyError(.io, "socket: \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let fd = self.fd
        let r = try Socket.withSockaddr(host: "127.0.0.1", port: port) { address, length, _ in connect(fd, address, length) }
        guard r == 0 else {
            let why = String(cString: strerror(errno))
            close()
            throw PinproxyError(.io, "cannot connect to 127.0.0.1:\(port): \(why)")
        }
        pending.reserveCapacity(32_768)
    }

    deinit { close() }

    /// Asks the proxy for a tunnel to `authority` (`host:port`) and checks its 200.
    func tunnel(to authority: String) throws {
        try sendPlain(Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8))
        while true {
            if let end = Self.headEnd(pending) {
                let status = Self.status(pending)
                pending.removeSubrange(0..<end)
                guard status == 200 else { throw PinproxyError(.io, "the proxy answered \(status) to CONNECT \(authority), not 200") }
                return
            }
            let n = plain.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw PinproxyError(.io, "the proxy closed or failed before answering CONNECT \(authority)") }
            pending += plain[0..<n]
        }
    }

    /// The TLS handshake with the context's trust, verifying the leaf for `serverName` (also the SNI).
    func handshake(context: TLSContext, serverName: HostName) throws {
        let connection = try TLSConnection(context: context)
        try connection.configureClient(serverName: serverName, alpn: ["http/1.1"])
        let stream = TLSBlockingStream(connection, over: self)
        do { try stream.handshake() } catch { throw PinproxyError(.io, "TLS handshake with \(serverName): \(error.reason)") }
        self.stream = stream
    }

    /// Sends one request (whole, already serialised).
    func send(_ request: [UInt8]) throws {
        guard let stream else { preconditionFailure("send before the handshake") }
        do { try stream.write(request) } catch { throw PinproxyError(.io, "sending a request: \(error.reason)") }
    }

    /// Reads one response to its end (`Content-Length` framing) and returns its status.
    func readResponse() throws -> Int {
        guard let stream else { preconditionFailure("read before the handshake") }
        while true {
            if let end = Self.headEnd(pending) {
                guard let length = Self.contentLength(pending[0..<end]) else {
                    throw PinproxyError(.io, "a response without Content-Length: \(String(decoding: pending[0..<min(end, 200)], as: UTF8.self))")
                }
                if pending.count >= end + length {
                    let status = Self.status(pending)
                    pending.removeSubrange(0..<(end + length))
                    return status
                }
            }
            try fill(stream.connection)
        }
    }

    /// Sends close_notify and closes the socket.
    func finish() {
        stream?.shutdown()
        close()
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Decrypts what the engine holds, reading the socket when it holds nothing.
    private func fill(_ connection: TLSConnection) throws {
        while true {
            switch plain.withUnsafeMutableBytes({ connection.read(into: $0) }) {
            case .bytes(let n):
                pending += plain[0..<n]
                return
            case .wantRead:
                try flush(connection)
                var got = BlockingRead.timedOut
                _ = connection.receive(maxBytes: 16 * 1024 + 512) { space in
                    got = receive(into: space)
                    if case .bytes(let n) = got { return n }
                    return 0
                }
                switch got {
                case .bytes: continue
                case .endOfStream: throw PinproxyError(.io, "the server closed the connection before the response ended")
                case .timedOut: throw PinproxyError(.io, "timed out waiting for a response")
                case .failed(let why): throw PinproxyError(.io, "reading a response: \(why)")
                }
            case .wantWrite:
                try flush(connection)
            case .closed:
                throw PinproxyError(.io, "the server closed the connection before the response ended")
            case .failed(let failure):
                throw PinproxyError(.io, "reading a response: \(failure.reason)")
            }
        }
    }

    /// Sends what the engine holds for the peer (a TLS 1.3 key update's answer, say).
    private func flush(_ connection: TLSConnection) throws {
        var failure: BlockingRead?
        while connection.pendingOutput > 0 && failure == nil {
            _ = connection.withPendingOutput { bytes in
                failure = sendAll(bytes)
                return failure == nil ? bytes.count : 0
            }
        }
        if let failure { throw PinproxyError(.io, "sending to the server: \(failure)") }
    }

    private func sendPlain(_ bytes: [UInt8]) throws {
        if let failure = bytes.withUnsafeBytes({ sendAll($0) }) { throw PinproxyError(.io, "sending to the proxy: \(failure)") }
    }

    // MARK: - The little of HTTP/1.1 a response needs here

    /// The index just past the blank line ending the head, if it has arrived.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count where bytes[i] == 0x0a && bytes[i - 1] == 0x0d && bytes[i - 2] == 0x0a && bytes[i - 3] == 0x0d {
            return i + 1
        }
        return nil
    }

    /// The status code of `HTTP/1.x NNN ...`, or 0 when the line is not that.
    static func status(_ bytes: [UInt8]) -> Int {
        guard bytes.count >= 12, bytes[0] == UInt8(ascii: "H"), bytes[8] == 0x20 else { return 0 }
        var code = 0
        for b in bytes[9..<12] {
            guard (0x30...0x39).contains(b) else { return 0 }
            code = code * 10 + Int(b - 0x30)
        }
        return code
    }

    /// The `Content-Length` of a head, nil when it has none (or a chunked body).
    static func contentLength(_ head: ArraySlice<UInt8>) -> Int? {
        let name = Array("\r\ncontent-length:".utf8)
        var i = head.startIndex
        let last = head.endIndex - name.count
        while i <= last {
            var matched = true
            for (k, expected) in name.enumerated() where head[i + k] | (expected >= 0x61 ? 0x20 : 0) != expected {
                matched = false
                break
            }
            if matched {
                var j = i + name.count, value = 0, digits = 0
                while j < head.endIndex, head[j] == 0x20 || head[j] == 0x09 { j += 1 }
                while j < head.endIndex, (0x30...0x39).contains(head[j]) { value = value * 10 + Int(head[j] - 0x30); j += 1; digits += 1 }
                return digits > 0 ? value : nil
            }
            i += 1
        }
        return nil
    }
}
