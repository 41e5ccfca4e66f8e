import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// `pinproxy bench idle`: many idle intercepted connections held open while
/// new requests are served, and what each idle connection costs in memory.
///
/// pinproxy runs in reverse mode in front of nginx (as in ``ProxyBenchmark``).
/// First wrk measures keep-alive requests with nothing else open; then
/// Python clients (``IdleClientScript``) open `connections` TLS connections
/// through the proxy, each sending one request so that its upstream
/// connection exists too, and keep them idle; wrk measures again while they
/// are held. Memory per idle connection is the growth of the proxy's
/// resident set (after a short warm-up with the same clients, and measured
/// after the second load run), divided by their number; and again once the
/// proxy has settled (``settleSeconds``).
public struct IdleBenchmark {
    public struct Options: Sendable {
        public var connections = 10_000
        /// wrk's keep-alive connections for the served load.
        public var activeConnections = 4
        public var duration = 5
        public var loops: Int?
        /// Also holds as many idle HTTP/2 connections, after the HTTP/1 ones
        /// are closed, through the same proxy (run with `http2` on).
        public var http2 = false
        /// With `http2`, holds the HTTP/2 connections first: what one kind
        /// leaves in the heap can flatter the kind measured after it, and
        /// running both orders shows by how much.
        public var http2First = false
        /// The proxy's upstream hold (`serve --upstream-hold`); nil: serve's
        /// default. A hold longer than the run keeps every idle client's
        /// upstream connection open, as before the hold existed.
        public var upstreamHold: Double?
        public init() {}
    }

    public struct Result: Sendable {
        public var idleOpened: Int
        public var idleFailed: Int
        public var requestsPerSecondBefore: Double
        public var requestsPerSecondWhileIdle: Double
        public var residentMegabytesBefore: Double
        public var residentMegabytesWhileIdle: Double
        public var residentMegabytesSettled: Double
        public var descriptorsWhileIdle: Int
        public var openConnectionsWhileIdle: Int
        /// The same held over HTTP/2, with `--http2`.
        public var http2: Hold?
        public var kilobytesPerIdleConnection: Double {
            Hold.kilobytes(residentMegabytesWhileIdle - residentMegabytesBefore, over: idleOpened)
        }
        public var kilobytesPerSettledConnection: Double {
            Hold.kilobytes(residentMegabytesSettled - residentMegabytesBefore, over: idleOpened)
        }
    }

    /// One kind of idle connection held: how many, and the proxy's resident
    /// set and keep-alive throughput around them.
    public struct Hold: Sendable {
        public var opened: Int
        public var failed: Int
        public var residentMegabytesBefore: Double
        public var residentMegabytesWhileIdle: Double
        /// Once the proxy settled: ``IdleBenchmark/settleSeconds(hold:)`` after the last client fell idle.
        public var residentMegabytesSettled: Double
        public var requestsPerSecondWhileIdle: Double
        public var descriptorsWhileIdle: Int
        public var openConnectionsWhileIdle: Int
        public var kilobytesPerIdleConnection: Double {
            Self.kilobytes(residentMegabytesWhileIdle - residentMegabytesBefore, over: opened)
        }
        public var kilobytesPerSettledConnection: Double {
            Self.kilobytes(residentMegabytesSettled - residentMegabytesBefore, over: opened)
        }

        static func kilobytes(_ megabytes: Double, over count: Int) -> Double {
            count > 0 ? megabytes * 1024 / Double(count) : 0
        }
    }

    public let options: Options

    /// How long after the last client fell idle the proxy has settled: its
    /// upstream hold has let every idle client's upstream go, a sweep
    /// interval (1 s) has given the TLS buffers back, and the event loops'
    /// free-page return (at most every 5 sweeps, and once a sweep passes
    /// quiet) has had its turn, with a second to spare. A proxy that runs for
    /// long holds its idle connections in this state; the figure right after
    /// the load run still counts some of them with their upstream.
    /// `hold`: the proxy's upstream hold, nil for serve's default.
    public static func settleSeconds(hold: Double?) -> Double {
        (hold ?? ProxyConfiguration().timeouts.upstreamHold) + 1 + 5 + 1
    }

    public init(options: Options) { self.options = options }

    public func run(progress: (String) -> Void = { _ in }) throws -> Result {
        guard let python = BenchTools.find("python3") else { throw PinproxyError(.io, "python3 is needed for the idle clients") }
        guard let wrk = BenchTools.find("wrk") else { throw PinproxyError(.io, "wrk is needed (apt-get install wrk)") }
        // Two descriptors per intercepted connection here, one in nginx and one in the clients.
        ProcessFigures.raiseDescriptorLimit(to: 4 * options.connections + 4096)
        // The origin keeps idle connections as long as the proxy does: an
        // HTTP/2 upstream that goes away takes its client connection with it (GOAWAY).
        let origin = try BenchOrigin(bulkMegabytes: 1, connections: options.connections + 1024, http2: options.http2,
                                     keepAliveSeconds: 3600)
        defer { origin.stop() }

        var configuration = ProxyConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.mode = .reverse(scheme: "https", host: .ipv4([127, 0, 0, 1]), port: origin.port)
        configuration.upstreamTrust = .file(origin.caPath)
        configuration.eventLoops = options.loops
        configuration.timeouts.drain = 1
        configuration.timeouts.idle = 3600
        configuration.http2 = options.http2
        if let hold = options.upstreamHold { configuration.timeouts.upstreamHold = hold }
        var logger = Logger(label: "pinproxy-bench-idle")
        logger.logLevel = .critical
        let proxy = try ProxyServer(configuration: configuration, authority: try CertificateAuthority.create(), logger: logger)
        let port = try proxy.start().port
        defer { proxy.stop() }
        let url = "https://127.0.0.1:\(port)/small"
        let load = ["-t", "2", "-c", String(options.activeConnections), "-d", "\(options.duration)s", url]

        let script = origin.directory + "/idle_clients.py"
        try FileIO.write(Array(IdleClientScript.source.utf8), to: script, mode: 0o644)
        func hold(_ count: Int, http2: Bool = false) throws -> (Process, Pipe, opened: Int, failed: Int) {
            let clients = Process()
            clients.executableURL = URL(fileURLWithPath: python)
            clients.arguments = [script, String(port), String(count), "200", http2 ? "h2" : "http1"]
            let output = Pipe(), input = Pipe()
            clients.standardOutput = output
            clients.standardInput = input
            clients.standardError = FileHandle.nullDevice
            try clients.run()
            var line = Data()
            while !line.contains(0x0a) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            let parts = String(decoding: line, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard parts.count >= 3, parts[0] == "READY", let opened = Int(parts[1]), let failed = Int(parts[2]) else {
                clients.terminate()
                throw PinproxyError(.io, "the idle clients did not start")
            }
            return (clients, input, opened, failed)
        }
        func release(_ held: (Process, Pipe, opened: Int, failed: Int)) {
            try? held.1.fileHandleForWriting.close()
            held.0.waitUntilExit()
            while proxy.openConnections > 0 { usleep(50_000) }
        }

        progress("warm-up: wrk, and 200 idle connections opened and closed" + (options.http2 ? ", over HTTP/1 and over HTTP/2" : ""))
        _ = try BenchTools.wrk(wrk, ["-t", "2", "-c", String(options.activeConnections), "-d", "1s", url])
        release(try hold(200))
        if options.http2 { release(try hold(200, http2: true)) }
        progress("keep-alive requests, nothing idle")
        let before = try BenchTools.wrk(wrk, load)

        /// Holds `count` idle connections of one kind, measures the load and
        /// the resident set while they are held, and closes them.
        func measureHold(http2: Bool) throws -> Hold {
            let kind = http2 ? "HTTP/2" : "HTTP/1.1"
            // What the allocator kept from earlier connections goes back
            // first, so that each kind's growth is its own.
            ProcessFigures.returnFreeMemory()
            let residentBefore = ProcessFigures.residentMegabytes()
            progress("opening \(options.connections) idle \(kind) connections")
            let held = try hold(options.connections, http2: http2)
            let allIdle = Date()
            let descriptors = ProcessFigures.openDescriptors(), open = proxy.openConnections
            progress("keep-alive requests while \(held.opened) \(kind) connections are idle")
            let during = try BenchTools.wrk(wrk, load)
            // Measured after the load run: by then the idle connections' TLS
            // buffers have been swept, as they are on a proxy that runs for long.
            let residentIdle = ProcessFigures.residentMegabytes()
            let settle = Self.settleSeconds(hold: configuration.timeouts.upstreamHold) - Date().timeIntervalSince(allIdle)
            if settle > 0 { usleep(UInt32(settle * 1_000_000)) }
            let residentSettled = ProcessFigures.residentMegabytes()
            release(held)
            return Hold(opened: held.opened, failed: held.failed, residentMegabytesBefore: residentBefore,
                        residentMegabytesWhileIdle: residentIdle, residentMegabytesSettled: residentSettled,
                        requestsPerSecondWhileIdle: during.requestsPerSecond,
                        descriptorsWhileIdle: descriptors, openConnectionsWhileIdle: open)
        }
        let http2First = options.http2 && options.http2First
        let early = http2First ? try measureHold(http2: true) : nil
        let http1 = try measureHold(http2: false)
        let http2 = http2First ? early : options.http2 ? try measureHold(http2: true) : nil
        return Result(idleOpened: http1.opened, idleFailed: http1.failed, requestsPerSecondBefore: before.requestsPerSecond,
                      requestsPerSecondWhileIdle: http1.requestsPerSecondWhileIdle,
                      residentMegabytesBefore: http1.residentMegabytesBefore, residentMegabytesWhileIdle: http1.residentMegabytesWhileIdle,
                      residentMegabytesSettled: http1.residentMegabytesSettled,
                      descriptorsWhileIdle: http1.descriptorsWhileIdle, openConnectionsWhileIdle: http1.openConnectionsWhileIdle,
                      http2: http2)
    }
}
