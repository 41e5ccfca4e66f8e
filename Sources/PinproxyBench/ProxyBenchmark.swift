import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// `pinproxy bench proxy`: the same load directly against a local HTTPS
/// origin (nginx) and through each proxy under test, in one run.
///
/// The proxies run in reverse mode in front of the origin, so load tools
/// that cannot speak CONNECT (wrk) drive the full interception path: client
/// TLS with a forged leaf, upstream TLS with verification, and the HTTP/1.1
/// relay. The paths: direct; pinproxy (in this process); with `capture`,
/// pinproxy writing `--har` and `--events` files as `serve` does; with a
/// `mitmdump` path, mitmproxy as a peer. Four loads:
/// - keep-alive: wrk, N connections, small responses;
/// - latency: wrk, one keep-alive connection, so the p50 difference is the
///   latency the proxy adds rather than queueing behind other requests;
/// - new TLS connection per request: wrk with `Connection: close`;
/// - bulk: curl downloading one large body, again and again for the run's
///   duration (a fresh connection each), MB/s over the transfers' own times.
/// With the HTTP/2 loads (`--http2`), the origin offers `h2` and pinproxy
/// runs with `http2` on, so both legs speak HTTP/2:
/// - http2: h2load, a few connections with many concurrent streams each,
///   small responses; requests/s, with p50/p99 from h2load's request log;
/// - http2-bulk: h2load, one connection and one stream at a time
///   downloading the large body, MB/s.
/// With the forward loads (`--forward`), pinproxy runs in forward mode and
/// every path is driven by the benchmark's own CONNECT-capable client
/// (``ForwardLoads``, ``LoadClient``): keep-alive over 4 and N connections,
/// and a new TLS connection (CONNECT and handshake) per request.
///
/// Fairness: the same origin, client and concurrency on every path, TLS on
/// both legs; each load is warmed up on every path, then the paths take
/// turns (`rounds` times each, the direct path first and the others turned
/// by one place each round: ``turnOrder(round:paths:)``) so that load from
/// elsewhere on the machine falls on all of them; every run is kept and the best of each
/// path is compared.
public struct ProxyBenchmark {
    public struct Options: Sendable {
        public var duration = 5
        public var connections = 32
        public var threads = 2
        public var bulkMegabytes = 256
        /// Turns of every path per load.
        public var rounds = 3
        /// The proxy's event loops; nil: the serve default.
        public var loops: Int?
        /// pinproxy's `serve --idle-upstream-timeout` (0: no upstream connection
        /// is reused across client connections); nil: the serve default.
        public var idleUpstreamTimeout: TimeInterval?
        /// Adds pinproxy with `--har` and `--events` as a path.
        public var capture = false
        /// Adds mitmproxy (this `mitmdump`) as a path.
        public var mitmdump: String?
        /// Adds these peers (``PeerConfigs/names``) as paths, each in reverse
        /// mode doing pinproxy's work; with no loads asked, the peer loads run
        /// (keep-alive, HTTP/2, bulk). `pinproxy-serve` adds pinproxy as a
        /// `serve` process of its own, started as the peers are (not a peer).
        public var peers: [String] = []
        /// Adds pinproxy with `serve --upstream-http2 off` as a path: HTTP/1.1 to the
        /// origin whatever the client speaks, as `haproxy` and `nginx` do.
        public var h1Upstream = false
        /// Which loads to run, by ``Load`` name; empty: the HTTP/1 loads.
        public var loads: Set<Load> = []
        /// h2load's connections for the `http2` load.
        public var http2Connections = 4
        /// Concurrent streams per h2load connection (`h2load -m`).
        public var streams = 25
        public init() {}
    }

    /// The loads, in the order they run.
    public enum Load: String, CaseIterable, Sendable {
        case keepAlive = "keep-alive", latency, newConnection = "new-connection", bulk
        case http2, http2Bulk = "http2-bulk"
        case forwardKeepAlive = "forward-keep-alive", forwardNewConnection = "forward-new-connection"

        /// What `--peers` runs when no load is asked for.
        public static let peerLoads: Set<Load> = [.keepAlive, .http2, .bulk]
        /// The loads that speak HTTP/2 on both legs.
        public static let http2Loads: Set<Load> = [.http2, .http2Bulk]
        public var isHTTP2: Bool { Self.http2Loads.contains(self) }
        /// The loads through pinproxy in forward mode (CONNECT), with the benchmark's own client (``ForwardLoads``).
        public static let forwardLoads: Set<Load> = [.forwardKeepAlive, .forwardNewConnection]
        public var isForward: Bool { Self.forwardLoads.contains(self) }
    }

    /// One run's figures.
    public struct Figures: Sendable {
        public var requestsPerSecond: Double
        public var p50Milliseconds: Double?
        public var p99Milliseconds: Double?
        public var megabytesPerSecond: Double?
        /// Requests completed (wrk runs), or 1 for a bulk download.
        public var units: Double = 0
        /// CPU time each party spent during the run, per request (or per bulk download), in microseconds.
        public var cpu: CPUShare?

        public init(requestsPerSecond: Double, p50Milliseconds: Double? = nil, p99Milliseconds: Double? = nil,
                    megabytesPerSecond: Double? = nil, units: Double = 0, cpu: CPUShare? = nil) {
            self.requestsPerSecond = requestsPerSecond
            self.p50Milliseconds = p50Milliseconds
            self.p99Milliseconds = p99Milliseconds
            self.megabytesPerSecond = megabytesPerSecond
            self.units = units
            self.cpu = cpu
        }

        /// What runs are compared by: MB/s for bulk, requests/s otherwise.
        public var throughput: Double { megabytesPerSecond ?? requestsPerSecond }
    }

    /// CPU per unit of work, by party. On a shared, noisy machine these travel
    /// better than throughput: they say what each request costs, not how much
    /// of the machine the run happened to get.
    public struct CPUShare: Sendable {
        /// The proxy (0 on the direct path).
        public var proxy: Double
        /// The nginx origin.
        public var origin: Double
        /// The load generator (wrk or curl).
        public var client: Double

        public init(proxy: Double, origin: Double, client: Double) {
            self.proxy = proxy
            self.origin = origin
            self.client = client
        }

        public var total: Double { proxy + origin + client }
    }

    /// Every run of one path under one load.
    public struct PathRuns: Sendable {
        /// `direct`, `pinproxy`, `pinproxy --har --events`, `mitmproxy`.
        public var path: String
        public var runs: [Figures]

        public init(path: String, runs: [Figures] = []) {
            self.path = path
            self.runs = runs
        }

        /// The median run's throughput (the mean of the middle two for an even count).
        public var median: Double {
            let sorted = runs.map(\.throughput).sorted()
            guard !sorted.isEmpty else { return 0 }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }

        /// The best run (highest throughput).
        public var best: Figures { runs.max { $0.throughput < $1.throughput } ?? Figures(requestsPerSecond: 0) }

        /// Mean CPU share over the runs.
        public var meanCPU: CPUShare? {
            let shares = runs.compactMap(\.cpu)
            guard !shares.isEmpty else { return nil }
            let n = Double(shares.count)
            return CPUShare(proxy: shares.map(\.proxy).reduce(0, +) / n, origin: shares.map(\.origin).reduce(0, +) / n,
                            client: shares.map(\.client).reduce(0, +) / n)
        }
    }

    /// One load: the direct path first, then every proxy path.
    public struct Row: Sendable {
        public var name: String
        public var paths: [PathRuns]
        /// What the capture files held after this load, when pinproxy recorded.
        public var captureCheck: CaptureCheck?
        /// The paths that are HAProxy or nginx, compared by median with the best of them.
        public var peerPaths: Set<String> = []

        public init(name: String, paths: [PathRuns]) {
            self.name = name
            self.paths = paths
        }

        public var direct: PathRuns { paths[0] }

        /// The best run of `path` over the best direct run.
        public func ratio(_ path: PathRuns) -> Double {
            let direct = self.direct.best.throughput
            return direct > 0 ? path.best.throughput / direct : 0
        }

        /// Each round's run of `path` over that round's direct run, in order: on
        /// a noisy machine these show how far one run's luck moves the ratio.
        public func roundRatios(_ path: PathRuns) -> [Double] {
            zip(direct.runs, path.runs).compactMap { d, p in d.throughput > 0 ? p.throughput / d.throughput : nil }
        }
    }

    /// The path of pinproxy with `--upstream-http2 off` (``Options/h1Upstream``).
    public static let h1UpstreamPath = "pinproxy, h1 upstream"

    /// pinproxy in reverse mode in front of the benchmark origin, as every path of the
    /// benchmark runs it (loopback, an ephemeral port, the origin verified against its CA).
    public static func reverseConfiguration(originPort: Int, originCA: String, http2: Bool) -> ProxyConfiguration {
        var configuration = ProxyConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.mode = .reverse(scheme: "https", host: .ipv4([127, 0, 0, 1]), port: originPort)
        configuration.upstreamTrust = .file(originCA)
        configuration.http2 = http2
        return configuration
    }

    /// The order the paths take their turns in, round by round: the direct
    /// path (index 0) first, then the others turned by one place each round,
    /// so that the run right after the direct one is a different path's each
    /// round. In two keep-alive runs the path in that place was the slower
    /// one, whichever it was (a tenth behind the same build later in the
    /// round), though a third run with the order turned showed no such
    /// pattern; with the listed order that place fell on pinproxy, listed
    /// second, in every round, so the order is turned rather than trusted.
    static func turnOrder(round: Int, paths: Int) -> [Int] {
        guard paths > 1 else { return Array(0..<paths) }
        let others = paths - 1
        return [0] + (0..<others).map { 1 + ($0 + round) % others }
    }

    /// The peers `Options.peers` may name.
    public static var peerNames: [String] { PeerConfigs.names + [PeerProxy.pinproxyServeKind] }

    public let options: Options
    private let logger: Logger

    public init(options: Options, logger: Logger = Logger(label: "pinproxy-bench")) {
        self.options = options
        self.logger = logger
    }

    /// Runs every load and returns one row per load.
    public func run(progress: (String) -> Void = { _ in }) throws -> [Row] {
        let o = options
        let loads = !o.loads.isEmpty ? o.loads : o.peers.isEmpty ? Set(Load.allCases.filter { !$0.isHTTP2 && !$0.isForward }) : Load.peerLoads
        let http2 = loads.contains { $0.isHTTP2 }
        func tool(_ name: String, _ hint: String) throws -> String {
            guard let path = BenchTools.find(name) else { throw PinproxyError(.io, "\(name) is needed (apt-get install \(hint))") }
            return path
        }
        let wrk = try loads.contains { !$0.isHTTP2 && !$0.isForward && $0 != .bulk } ? tool("wrk", "wrk") : ""
        let curl = try loads.contains(.bulk) || !o.peers.isEmpty ? tool("curl", "curl") : ""
        let h2load = try http2 ? tool("h2load", "nghttp2-client") : ""
        let origin = try BenchOrigin(bulkMegabytes: o.bulkMegabytes, hostNames: [ForwardLoads.originName], http2: http2)
        defer { origin.stop() }

        var configuration = Self.reverseConfiguration(originPort: origin.port, originCA: origin.caPath, http2: http2)
        configuration.timeouts.drain = 1
        configuration.eventLoops = o.loops
        if let idle = o.idleUpstreamTimeout { configuration.timeouts.idleUpstream = idle }
        var quiet = logger
        quiet.logLevel = .error
        let authority = try CertificateAuthority.create()
        // As `serve --log-level error` without `--admin` runs: no flow is built, as the
        // peers (no log, `access_log off`) keep no record of a request either.
        let proxy = try ProxyServer(configuration: configuration, authority: authority,
                                    recorder: CaptureRecorder(keepsRecentFlows: false), logger: quiet)
        let proxyPort = try proxy.start().port
        defer { proxy.stop() }
        var h1Configuration = configuration
        h1Configuration.upstreamHTTP2 = false
        let h1Proxy = o.h1Upstream ? try ProxyServer(configuration: h1Configuration, authority: authority,
                                                     recorder: CaptureRecorder(keepsRecentFlows: false), logger: quiet) : nil
        let h1ProxyPort = try h1Proxy?.start().port
        defer { h1Proxy?.stop() }
        let peer = try o.mitmdump.map { try PeerProxy.mitmdump($0, originPort: origin.port, directory: origin.directory) }
        defer { peer?.stop() }
        var servers: [PeerProxy] = []
        defer { servers.forEach { $0.stop() } }
        if !o.peers.isEmpty {
            let files = try PeerConfigs.Files.write(authority: authority, originCA: origin.caPath, directory: origin.directory)
            let clientCA = origin.directory + "/peer-ca.pem"
            try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: clientCA, mode: 0o644)
            // The same check the peers pass: each path answers 200 before it is measured.
            try BenchTools.expect200(curl, "https://127.0.0.1:\(origin.port)/small", caFile: origin.caPath, what: "the origin")
            try BenchTools.expect200(curl, "https://127.0.0.1:\(proxyPort)/small", caFile: clientCA, what: "pinproxy in front of the origin")
            if let h1ProxyPort {
                try BenchTools.expect200(curl, "https://127.0.0.1:\(h1ProxyPort)/small", caFile: clientCA, what: "pinproxy --upstream-http2 off")
            }
            for kind in o.peers {
                if kind == PeerProxy.pinproxyServeKind {
                    servers.append(try PeerProxy.pinproxyServe(originPort: origin.port, originCA: origin.caPath, authority: authority,
                                                               clientCA: clientCA, directory: origin.directory, curl: curl))
                } else {
                    servers.append(try PeerProxy.server(kind, originPort: origin.port, files: files, clientCA: clientCA,
                                                        directory: origin.directory, curl: curl))
                }
            }
        }

        let originPID = origin.pid
        let rounds = max(1, o.rounds)
        var rows: [Row] = []

        /// Every path's turn in each round, after one short warm-up of each.
        /// Captured pinproxy gets fresh files per load, checked after it.
        func measure(_ name: String, warmUp: ((String) throws -> Void)?, _ run: (String) throws -> Figures) throws -> Row {
            let captured = o.capture ? try CapturedProxy(configuration: configuration, authority: authority,
                                                         directory: origin.directory, logger: quiet) : nil
            defer { captured?.stop() }
            var targets: [(name: String, base: String, cpu: () -> Double?)] = [
                ("direct", "https://127.0.0.1:\(origin.port)", { 0 }),
                ("pinproxy", "https://127.0.0.1:\(proxyPort)", { CPUClock.ownSecondsBesideThisThread() }),
            ]
            if let captured { targets.append(("pinproxy --har --events", "https://127.0.0.1:\(captured.port)", { CPUClock.ownSecondsBesideThisThread() })) }
            if let h1ProxyPort { targets.append((Self.h1UpstreamPath, "https://127.0.0.1:\(h1ProxyPort)", { CPUClock.ownSecondsBesideThisThread() })) }
            if let peer { targets.append((peer.name, "https://127.0.0.1:\(peer.port)", { CPUClock.processSeconds(peer.pid) })) }
            for server in servers {
                targets.append((server.name, "https://127.0.0.1:\(server.port)", { CPUClock.processSeconds(server.pid) }))
            }
            if let warmUp { for target in targets { try warmUp(target.base) } }
            var row = Row(name: name, paths: targets.map { PathRuns(path: $0.name) })
            row.peerPaths = Set(servers.filter { $0.isPeer }.map(\.name))
            for round in 0..<rounds {
                for index in Self.turnOrder(round: round, paths: targets.count) {
                    row.paths[index].runs.append(try metered(targets[index].base, proxyCPU: targets[index].cpu, run))
                }
            }
            row.captureCheck = try captured?.check()
            return row
        }
        /// One run with the CPU time of each party around it.
        func metered(_ base: String, proxyCPU: () -> Double?, _ run: (String) throws -> Figures) throws -> Figures {
            let before = CPUClock.sample(originPID: originPID), proxyBefore = proxyCPU()
            var figures = try run(base)
            let after = CPUClock.sample(originPID: originPID), proxyAfter = proxyCPU()
            if figures.units > 0, let before, let after, let proxyBefore, let proxyAfter {
                let perUnit = 1e6 / figures.units
                figures.cpu = CPUShare(proxy: (proxyAfter - proxyBefore) * perUnit,
                                       origin: (after.origin - before.origin) * perUnit,
                                       client: (after.children - before.children) * perUnit)
            }
            return figures
        }
        func wrkWarmUp(_ arguments: [String]) -> (String) throws -> Void {
            { base in _ = try BenchTools.wrk(wrk, arguments + ["-d", "1s", "\(base)/small"]) }
        }
        func wanted(_ load: Load) -> Bool { loads.contains(load) }

        if wanted(.keepAlive) {
            progress("keep-alive: \(o.connections) connections, \(o.duration) s per run, \(rounds) round(s)")
            let keepAlive = ["-t", String(o.threads), "-c", String(o.connections), "--latency"]
            rows.append(try measure("keep-alive requests (\(o.connections) connections)", warmUp: wrkWarmUp(keepAlive)) {
                try BenchTools.wrk(wrk, keepAlive + ["-d", "\(o.duration)s", "\($0)/small"])
            })
        }
        if wanted(.latency) {
            progress("latency: 1 keep-alive connection")
            let single = ["-t", "1", "-c", "1", "--latency"]
            rows.append(try measure("latency (1 keep-alive connection)", warmUp: wrkWarmUp(single)) {
                try BenchTools.wrk(wrk, single + ["-d", "\(o.duration)s", "\($0)/small"])
            })
        }
        if wanted(.newConnection) {
            progress("new TLS connection per request")
            let perRequest = ["-t", String(o.threads), "-c", String(max(2, o.connections / 4)), "--latency", "-H", "Connection: close"]
            rows.append(try measure("new TLS connection per request", warmUp: wrkWarmUp(perRequest)) {
                try BenchTools.wrk(wrk, perRequest + ["-d", "\(o.duration)s", "\($0)/small"])
            })
        }
        if wanted(.bulk) {
            progress("bulk download: \(o.bulkMegabytes) MB")
            let bulkWarmUp: (String) throws -> Void = { _ = try BenchTools.bulk(curl, "\($0)/bulk", megabytes: o.bulkMegabytes, seconds: 0) }
            rows.append(try measure("bulk download (\(o.bulkMegabytes) MiB, 1 connection)", warmUp: bulkWarmUp) {
                try BenchTools.bulk(curl, "\($0)/bulk", megabytes: o.bulkMegabytes, seconds: Double(o.duration))
            })
        }
        let h2log = origin.directory + "/h2load.log"
        if wanted(.http2) {
            let c = o.http2Connections, m = o.streams
            progress("HTTP/2: \(c) connections × \(m) streams, \(o.duration) s per run, \(rounds) round(s)")
            func h2(_ seconds: Int) -> (String) throws -> Figures {
                { try H2Load.run(h2load, url: "\($0)/small", connections: c, streams: m, threads: o.threads, seconds: seconds, logFile: h2log) }
            }
            let warmUp = h2(1)
            rows.append(try measure("HTTP/2 requests (\(c) connections × \(m) streams)", warmUp: { _ = try warmUp($0) }, h2(o.duration)))
        }
        if wanted(.http2Bulk) {
            progress("HTTP/2 bulk download: \(o.bulkMegabytes) MB")
            rows.append(try measure("HTTP/2 bulk download (\(o.bulkMegabytes) MiB, 1 connection, 1 stream)", warmUp: nil) {
                try H2Load.run(h2load, url: "\($0)/bulk", connections: 1, streams: 1, threads: 1, seconds: o.duration,
                               bulkBytes: o.bulkMegabytes << 20, logFile: h2log)
            })
        }
        if loads.contains(where: \.isForward) {
            let forward = ForwardLoads(options: o, origin: origin, authority: authority,
                                       configuration: try ForwardLoads.configuration(from: configuration), logger: quiet,
                                       wrk: BenchTools.find("wrk"))
            rows += try forward.rows(loads, progress: progress)
        }
        return rows
    }
}
