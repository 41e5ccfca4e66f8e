import Foundation
@testable import PinproxyProxy
import PinproxyTestSupport
import Testing

/// The flags a connection's socket has from the moment the proxy accepts it.
@Suite("Accepted sockets", .timeLimit(.minutes(10)))
struct AcceptedSocketTests {
    /// A socket's port on one side: `getsockname` (local) or `getpeername` (peer); nil when `fd`
    /// is not an IPv4 socket.
    static func port(of fd: Int32, peer: Bool) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let r = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        guard r == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The descriptor of this process whose local port is `local` and whose peer's is `peer`:
    /// the proxy's side of a client's connection.
    static func descriptor(local: Int, peer: Int) -> Int32? {
        let numbers = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return numbers.compactMap { Int32($0) }.first { fd in
            port(of: fd, peer: false) == local && port(of: fd, peer: true) == peer
        }
    }

    @Test("the proxy's side of a client connection is non-blocking and close-on-exec (a child process never inherits it)")
    func acceptedSocketFlags() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f)
        let client = try RawClient(port: proxy.port)
        let clientPort = try #require(Self.port(of: client.fd, peer: false))
        var accepted: Int32?
        let deadline = Date().addingTimeInterval(10)
        while accepted == nil && Date() < deadline {
            accepted = Self.descriptor(local: proxy.port, peer: clientPort)
            if accepted == nil { usleep(10_000) }
        }
        let fd = try #require(accepted, "the proxy's side of the connection from port \(clientPort) was not found")
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "accepted socket without FD_CLOEXEC")
        #expect(fcntl(fd, F_GETFL) & O_NONBLOCK != 0, "accepted socket is blocking")
        // And it serves: a request the proxy refuses (no Host) is answered.
        client.send("GET / HTTP/1.1\r\n\r\n")
        #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 400"))
    }
}
