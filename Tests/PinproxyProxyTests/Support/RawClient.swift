import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy
import Testing

// A raw socket client for hostile input, descriptor counts, and a hand-made ClientHello.

/// A blocking loopback TCP client with receive timeouts, for raw protocol tests.
final class RawClient {
    let fd: Int32
    private var closed = false

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); throw HarnessError("connect to \(port) failed: \(String(cString: strerror(errno)))") }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until `predicate` holds for what was read, EOF, or the timeout.
    func receive(timeout: TimeInterval = 10, until predicate: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
        var all: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            all += buffer[0..<n]
            if predicate(all) { break }
        }
        return all
    }

    /// Reads until the peer closes (or the timeout); returns the text read.
    func receiveText(timeout: TimeInterval = 10, until marker: String? = nil) -> String {
        let bytes = receive(timeout: timeout) { bytes in
            guard let marker else { return false }
            return String(decoding: bytes, as: UTF8.self).contains(marker)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether the peer closed the connection within `timeout` (reads and discards).
    func closedByPeer(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
        return false
    }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN, as a client that crashed or lost its network.
    func resetClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RD))
        close(fd)
        closed = true
    }

    deinit { if !closed { close(fd) } }
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Open descriptors of this process that are TCP sockets, other than
/// listening ones, with a local or remote port in `ports`: the connections
/// of one proxy and its origins, unaffected by other tests running
/// alongside in the same process.
func openSocketCount(ports: Set<Int>) throws -> Int {
    // inode -> (local port, remote port, listening) from the kernel's tables.
    var sockets: [String: (local: Int, remote: Int, listening: Bool)] = [:]
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        // Read to the end: the kernel serves these tables a page at a time.
        guard let handle = FileHandle(forReadingAtPath: table) else { continue }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9 else { continue }
            func port(_ address: Substring) -> Int { address.split(separator: ":").last.flatMap { Int($0, radix: 16) } ?? -1 }
            sockets[String(fields[9])] = (port(fields[1]), port(fields[2]), fields[3] == "0A")
        }
    }
    #expect(!sockets.isEmpty, "no TCP sockets listed in /proc/self/net")
    var count = 0
    for fd in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
              target.hasPrefix("socket:["), let inode = target.dropFirst(8).split(separator: "]").first,
              let socket = sockets[String(inode)], !socket.listening else { continue }
        if ports.contains(socket.local) || ports.contains(socket.remote) { count += 1 }
    }
    return count
}

/// A minimal TLS 1.2/1.3 ClientHello carrying `serverName` bytes as SNI, verbatim.
func clientHello(serverName: [UInt8]) -> [UInt8] {
    func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
    var sni: [UInt8] = [0x00] + u16(serverName.count) + serverName
    sni = u16(sni.count) + sni
    var extensions: [UInt8] = u16(0x0000) + u16(sni.count) + sni
    // supported_groups: x25519, secp256r1
    extensions += u16(0x000a) + u16(6) + u16(4) + u16(0x001d) + u16(0x0017)
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256
    extensions += u16(0x000d) + u16(8) + u16(6) + u16(0x0403) + u16(0x0804) + u16(0x0401)
    var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 7, count: 32) + [0x00]
    body += u16(4) + u16(0xc02b) + u16(0xc02f)  // ECDHE-ECDSA/RSA-AES128-GCM-SHA256
    body += [0x01, 0x00]
    body += u16(extensions.count) + extensions
    let handshake: [UInt8] = [0x01, 0x00] + u16(body.count) + body
    return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
