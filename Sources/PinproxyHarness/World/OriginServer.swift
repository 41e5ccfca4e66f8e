import Foundation
import PinproxyCertificates
import PinproxyTLS
import Synchronization

/// The world's genuine HTTPS origin: a small blocking TLS server on a
/// loopback port, presenting the genuine chain and answering every request
/// with `200 OK` and a line naming itself, over HTTP/2 when the client
/// offers `h2` by ALPN and over HTTP/1.1 otherwise.
///
/// It remembers the requests it answered, so the harness can check, for every
/// scenario, that a request reached it exactly when the client accepted; and how
/// each connection's handshake ended, which tells a real client that refused the
/// genuine chain from one that never reached it.
public final class OriginServer: Sendable {
    /// One request the origin answered.
    public struct Request: Sendable {
        public var method: String
        public var target: String
        /// The harness's scenario marker (`X-Pinproxy-Scenario`), when the client sent one.
        public var scenario: String?
        /// When it arrived, in the order of ``OriginServer/requests``.
        public var sequence: Int
    }

    public let host: HostName
    /// The address it listens on.
    public static let address = "127.0.0.1"
    /// The loopback port it listens on.
    public let port: Int
    /// The text of every response body.
    public let greeting: String
    private let context: TLSContext
    private let listener: Int32
    private let state = Mutex<(requests: [Request], sequence: Int, stopped: Bool, handshakes: [Handshake])>(([], 0, false, []))

    /// How one connection's TLS handshake ended, as the origin saw it.
    enum Handshake: Sendable, Equatable {
        case pending, completed, failed
    }

    /// Binds 127.0.0.1 on an ephemeral port and starts serving `chain` with `key` for `host`.
    public init(host: HostName, chain: [Certificate], key: PrivateKey) throws {
        self.host = host
        self.greeting = "pinproxy world: the genuine origin for \(host)\n"
        self.context = try HarnessTLS.origin(chain: chain, key: key)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PinproxyError(.io, "cannot create the origin's socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7f00_0001).bigEndian)
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw PinproxyError(.io, "cannot listen for the origin on 127.0.0.1: \(why)")
        }
        listener = fd
        port = LoopbackSocket.port(of: fd, peer: false)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "pinproxy-origin"
        thread.start()
    }

    /// Requests answered so far, oldest first.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Whether a request carrying the scenario marker `marker` arrived.
    public func received(scenario marker: String) -> Bool {
        state.withLock { $0.requests.contains { $0.scenario == marker } }
    }

    /// The sequence number the next request will get (to count requests from a point on).
    public var nextSequence: Int { state.withLock { $0.sequence } }

    /// The number of connections accepted so far (to look at the ones from a point on).
    var connectionCount: Int { state.withLock { $0.handshakes.count } }

    /// How the handshakes of the connections accepted from `first` on ended; waits up to
    /// `timeout` for the ones still in progress (a refusal reaches the origin a moment
    /// after the client has gone).
    func handshakes(from first: Int, timeout: TimeInterval) -> [Handshake] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let found = state.withLock { Array($0.handshakes.dropFirst(first)) }
            if !found.contains(.pending) || Date() >= deadline { return found }
            usleep(2_000)
        }
    }

    /// Stops accepting (call it once done: the accepting thread keeps the origin alive
    /// until then); connections in progress finish on their own.
    public func stop() {
        let wasStopped = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return s.stopped
        }
        guard !wasStopped else { return }
        // shutdown wakes the blocked accept(); the loop closes the descriptor.
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            if state.withLock({ $0.stopped }) { Glibc.close(fd); break }
            let connection = LoopbackSocket.accepted(fd, timeout: 10)
            let index = state.withLock { s in
                s.handshakes.append(.pending)
                return s.handshakes.count - 1
            }
            DispatchQueue.global().async { [self] in serve(connection, index: index) }
        }
        Glibc.close(listener)
    }

    /// Keeps one request the origin is about to answer.
    func record(method: String, target: String, scenario: String?) {
        state.withLock { s in
            s.requests.append(Request(method: method, target: target, scenario: scenario, sequence: s.sequence))
            s.sequence += 1
        }
    }

    /// One connection: handshake, then request after request until the client closes.
    private func serve(_ socket: LoopbackSocket, index: Int) {
        let stream = try? HarnessTLS.server(over: socket, context: context)
        let accepted = (try? stream?.handshake()) != nil
        state.withLock { $0.handshakes[index] = accepted ? .completed : .failed }
        guard let stream, accepted else { return }
        if stream.alpn == "h2" {
            serveHTTP2(stream)
            return
        }
        var reader = HTTP1MessageReader(.request) { try stream.readChunk() }
        while let (head, _) = try? reader.nextRequest() {
            record(method: head.method, target: head.target.description, scenario: head.headers[ScenarioMarker.header].first)
            let body = Array(greeting.utf8)
            let response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\n"
                + (head.keepAlive ? "" : "Connection: close\r\n") + "\r\n"
            guard (try? stream.send(Array(response.utf8) + body)) != nil else { return }
            if !head.keepAlive {
                stream.shutdown()
                return
            }
        }
    }
}

/// The header by which the built-in client tells the origin which scenario a request belongs to.
enum ScenarioMarker {
    static let header = "X-Pinproxy-Scenario"
}
