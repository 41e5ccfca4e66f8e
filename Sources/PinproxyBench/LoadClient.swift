import Foundation
import PinproxyCertificates
import PinproxyTLS
import Synchronization

/// The benchmark's own HTTPS load generator, for what wrk and h2load cannot
/// do: `CONNECT` through a forward proxy before the TLS handshake.
///
/// Keep-alive: `connections` connections spread over `threads` threads; each
/// thread keeps one request outstanding on every connection it owns and
/// reads their responses in turn (blocking), sending the next request on a
/// connection as soon as its response is read — wrk's closed loop without an
/// event loop. New connection: one thread per connection slot, each opening
/// a connection (CONNECT, full handshake), sending one request with
/// `Connection: close` and closing, for the run's duration.
///
/// Every response must be 2xx: anything else, a failed handshake (a leaf
/// that does not verify against `caPath` for `serverName`) or a refused
/// CONNECT ends the run with an error, so a path answering errors fast can
/// never look fast.
struct LoadClient {
    struct Target: Sendable {
        /// The port on 127.0.0.1 to connect to: the origin's, or the forward proxy's.
        var port: Int
        /// With a forward proxy: `host:port` to ask for with CONNECT.
        var connectAuthority: String?
        /// The name the leaf must carry (and the SNI when it is a DNS name).
        var serverName: HostName
        /// The CA that must have issued the leaf.
        var caPath: String
        /// `host:port` for the requests' Host field.
        var authority: String
        var path = "/small"
    }

    enum Mode: Sendable { case keepAlive, newConnection }

    var target: Target
    var mode: Mode
    var connections: Int
    var threads: Int
    var seconds: Double

    /// Runs the load and returns its figures, the client's own CPU time included.
    func run() throws -> LoadFigures {
        let context = try TLSContext.client(trust: .file(target.caPath), alpn: ["http/1.1"], resumption: false)
        let close = mode == .newConnection
        let request = Array("GET \(target.path) HTTP/1.1\r\nHost: \(target.authority)\r\n\(close ? "Connection: close\r\n" : "")\r\n".utf8)
        let groups: [Int] = mode == .newConnection ? Array(repeating: 1, count: connections)
            : (0..<min(threads, connections)).map { t in connections / threads + (t < connections % threads ? 1 : 0) }
        let results = Mutex<[ThreadResult]>([])
        let failure = Mutex<(any Error)?>(nil)
        let stop = Atomic<Bool>(false)
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        let done = DispatchGroup()
        for count in groups {
            done.enter()
            let thread = Thread { [target] in
                defer { done.leave() }
                let cpuStart = Self.threadCPUSeconds()
                var result = ThreadResult()
                result.latencies.reserveCapacity(1 << 16)
                do {
                    if close {
                        try Self.newConnections(target, context, request, until: end, stop: stop, into: &result)
                    } else {
                        try Self.keepAlive(target, context, request, connections: count, until: end, stop: stop, into: &result)
                    }
                } catch {
                    stop.store(true, ordering: .relaxed)
                    failure.withLock { if $0 == nil { $0 = error } }
                }
                result.cpuSeconds = Self.threadCPUSeconds() - cpuStart
                results.withLock { $0.append(result) }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        if let error = failure.withLock({ $0 }) { throw error }
        return LoadFigures(results.withLock { $0 }, seconds: elapsed)
    }

    /// One thread's connections, each with one request in flight, answered in turn.
    private static func keepAlive(_ target: Target, _ context: TLSContext, _ request: [UInt8], connections: Int,
                                  until end: UInt64, stop: borrowing Atomic<Bool>, into result: inout ThreadResult) throws {
        var open: [LoadConnection] = []
        for _ in 0..<connections { open.append(try connect(target, context)) }
        var sentAt = [UInt64](repeating: 0, count: open.count)
        for (i, connection) in open.enumerated() {
            sentAt[i] = DispatchTime.now().uptimeNanoseconds
            try connection.send(request)
        }
        var live = open.count
        var running = true
        while live > 0 {
            for (i, connection) in open.enumerated() where sentAt[i] != 0 {
                let status = try connection.readResponse()
                let now = DispatchTime.now().uptimeNanoseconds
                try result.record(status: status, nanoseconds: now - sentAt[i])
                if running && (now >= end || stop.load(ordering: .relaxed)) { running = false }
                if running {
                    sentAt[i] = now
                    try connection.send(request)
                } else {
                    sentAt[i] = 0
                    live -= 1
                }
            }
        }
        open.forEach { $0.finish() }
    }

    /// One connection after another, each carrying one request.
    private static func newConnections(_ target: Target, _ context: TLSContext, _ request: [UInt8],
                                       until end: UInt64, stop: borrowing Atomic<Bool>, into result: inout ThreadResult) throws {
        while DispatchTime.now().uptimeNanoseconds < end && !stop.load(ordering: .relaxed) {
            let started = DispatchTime.now().uptimeNanoseconds
            let connection = try connect(target, context)
            try connection.send(request)
            let status = try connection.readResponse()
            connection.close()
            try result.record(status: status, nanoseconds: DispatchTime.now().uptimeNanoseconds - started)
        }
    }

    /// A connection ready for requests: connected, tunnelled when asked, handshaken.
    static func connect(_ target: Target, _ context: TLSContext) throws -> LoadConnection {
        let connection = try LoadConnection(port: target.port)
        if let authority = target.connectAuthority { try connection.tunnel(to: authority) }
        try connection.handshake(context: context, serverName: target.serverName)
        return connection
    }

    static func threadCPUSeconds() -> Double {
        var t = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 else { return 0 }
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    struct ThreadResult {
        var latencies: [UInt32] = []
        var cpuSeconds = 0.0

        /// Counts a 2xx response with its latency in microseconds; anything else ends the run.
        mutating func record(status: Int, nanoseconds: UInt64) throws {
            guard (200..<300).contains(status) else {
                throw PinproxyError(.io, "the load client got status \(status), not 2xx: the run is refused")
            }
            latencies.append(UInt32(clamping: nanoseconds / 1_000))
        }
    }
}

/// What a ``LoadClient`` run measured.
struct LoadFigures: Sendable {
    var requests: Int
    var seconds: Double
    /// CPU time of the client's threads.
    var clientCPUSeconds: Double
    /// Latency percentiles in milliseconds, over every request (not sampled).
    var p50Milliseconds: Double
    var p99Milliseconds: Double

    init(_ results: [LoadClient.ThreadResult], seconds: Double) {
        var all = results.flatMap(\.latencies)
        all.sort()
        func percentile(_ p: Double) -> Double {
            all.isEmpty ? 0 : Double(all[min(all.count - 1, Int(Double(all.count) * p))]) / 1_000
        }
        requests = all.count
        self.seconds = seconds
        clientCPUSeconds = results.map(\.cpuSeconds).reduce(0, +)
        p50Milliseconds = percentile(0.5)
        p99Milliseconds = percentile(0.99)
    }

    var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }
}
