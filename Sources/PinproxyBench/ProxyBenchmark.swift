import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// `pinproxy bench proxy`: the same load through the proxy and directly
/// against a local HTTPS origin (nginx), in one run.
///
/// The proxy runs in this process in reverse mode in front of the origin, so
/// load tools that cannot speak CONNECT (wrk) drive the full interception
/// path: client TLS with a forged leaf, upstream TLS with verification, and
/// the HTTP/1.1 relay. Four loads:
/// - keep-alive: wrk, N connections, small responses;
/// - latency: wrk, one keep-alive connection, so the p50 difference is the
///   latency the proxy adds rather than queueing behind other requests;
/// - new TLS connection per request: wrk with `Connection: close`;
/// - bulk: curl downloading one large body, MB/s.
///
/// Fairness: the same origin, client and concurrency on both paths, TLS on
/// both legs; each load is warmed up on both paths, then direct and proxied
/// runs alternate (`rounds` times each) so that load from elsewhere on the
/// machine falls on both; every run is kept and the best of each path is
/// compared.
public struct ProxyBenchmark {
    public struct Options: Sendable {
        public var duration = 5
        public var connections = 32
        public var threads = 2
        public var bulkMegabytes = 256
        /// Alternating direct/proxied runs per load.
        public var rounds = 3
        /// The proxy's event loops; nil: the serve default.
        public var loops: Int?
        public init() {}
    }

    /// One load's figures.
    public struct Figures: Sendable {
        public var requestsPerSecond: Double
        public var p50Milliseconds: Double?
        public var p99Milliseconds: Double?
        public var megabytesPerSecond: Double?
        /// Requests completed (wrk runs), or 1 for a bulk download.
        public var units: Double = 0
        /// CPU time each party spent during the run, per request (or per bulk download), in microseconds.
        public var cpu: CPUShare?
    }

    /// CPU per unit of work, by party. On a shared, noisy machine these travel
    /// better than throughput: they say what each request costs, not how much
    /// of the machine the run happened to get.
    public struct CPUShare: Sendable {
        /// The proxy (this process, whose other threads idle during a run).
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
    }

    public struct Row: Sendable {
        public var name: String
        /// Every run, in order.
        public var directRuns: [Figures]
        public var proxiedRuns: [Figures]
        /// Each round's proxied result over its direct one, in order: on a
        /// noisy machine these show how far one run's luck moves the ratio.
        public var roundRatios: [Double] {
            zip(directRuns, proxiedRuns).compactMap { d, p in
                let direct = d.megabytesPerSecond ?? d.requestsPerSecond
                let proxied = p.megabytesPerSecond ?? p.requestsPerSecond
                return direct > 0 ? proxied / direct : nil
            }
        }
        /// The best run of each path (highest throughput).
        public var direct: Figures { Row.best(directRuns) }
        public var proxied: Figures { Row.best(proxiedRuns) }

        static func best(_ runs: [Figures]) -> Figures {
            runs.max { ($0.megabytesPerSecond ?? $0.requestsPerSecond) < ($1.megabytesPerSecond ?? $1.requestsPerSecond) }
                ?? Figures(requestsPerSecond: 0)
        }
    }

    public let options: Options
    private let logger: Logger

    public init(options: Options, logger: Logger = Logger(label: "pinproxy-bench")) {
        self.options = options
        self.logger = logger
    }

    /// Runs every load and returns one row per load.
    public func run(progress: (String) -> Void = { _ in }) throws -> [Row] {
        guard let nginx = BenchTools.find("nginx", in: ["/usr/sbin", "/usr/bin", "/usr/local/sbin"]) else {
            throw PinproxyError(.io, "nginx is needed as the benchmark origin (apt-get install nginx)")
        }
        guard let wrk = BenchTools.find("wrk") else { throw PinproxyError(.io, "wrk is needed (apt-get install wrk)") }
        guard let curl = BenchTools.find("curl") else { throw PinproxyError(.io, "curl is needed") }

        let directory = NSTemporaryDirectory() + "pinproxy-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // Throwaway CAs: one for the origin, one for the proxy.
        var options = CertificateAuthority.Options()
        options.commonName = "pinproxy bench origin CA"
        let originCA = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: originCA).forge(hostNames: ["localhost", "127.0.0.1"])
        try FileIO.write(Array(leaf.chain.map { $0.pemEncoded }.joined().utf8), to: directory + "/origin.pem", mode: 0o644)
        try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: directory + "/origin-key.pem", mode: 0o600)
        try FileIO.write(Array(originCA.certificate.pemEncoded.utf8), to: directory + "/origin-ca.pem", mode: 0o644)
        try FileIO.write(Array(String(repeating: "x", count: 1024).utf8), to: directory + "/www/small", mode: 0o644)
        try BenchTools.writeZeros(directory + "/www/bulk", megabytes: self.options.bulkMegabytes)

        let originPort = try BenchTools.freePort()
        let config = """
            daemon off; master_process off; worker_processes 1; pid \(directory)/nginx.pid;
            error_log \(directory)/error.log error;
            events { worker_connections 4096; }
            http {
              access_log off; sendfile on; keepalive_requests 1000000; keepalive_timeout 60;
              server {
                listen 127.0.0.1:\(originPort) ssl;
                ssl_certificate \(directory)/origin.pem; ssl_certificate_key \(directory)/origin-key.pem;
                ssl_protocols TLSv1.2 TLSv1.3;
                root \(directory)/www;
              }
            }
            """
        try FileIO.write(Array(config.utf8), to: directory + "/nginx.conf", mode: 0o644)
        let origin = Process()
        origin.executableURL = URL(fileURLWithPath: nginx)
        origin.arguments = ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"]
        origin.standardError = FileHandle.nullDevice
        origin.standardOutput = FileHandle.nullDevice
        try origin.run()
        defer { origin.terminate(); origin.waitUntilExit() }
        try BenchTools.waitForPort(originPort)

        var configuration = ProxyConfiguration()
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.mode = .reverse(scheme: "https", host: .ipv4([127, 0, 0, 1]), port: originPort)
        configuration.upstreamTrust = .file(directory + "/origin-ca.pem")
        configuration.timeouts.drain = 1
        configuration.eventLoops = self.options.loops
        var quiet = logger
        quiet.logLevel = .error
        let proxy = try ProxyServer(configuration: configuration, authority: try CertificateAuthority.create(), logger: quiet)
        let proxyPort = try proxy.start().port
        defer { proxy.stop() }
        let originPID = origin.processIdentifier

        let direct = "https://127.0.0.1:\(originPort)"
        let proxied = "https://127.0.0.1:\(proxyPort)"
        var rows: [Row] = []
        let o = self.options

        let rounds = max(1, o.rounds)
        /// Alternates direct and proxied runs after one short warm-up of each.
        func measure(_ name: String, warmUp: ((String) throws -> Void)?, _ run: (String) throws -> Figures) throws -> Row {
            if let warmUp {
                try warmUp(direct)
                try warmUp(proxied)
            }
            var row = Row(name: name, directRuns: [], proxiedRuns: [])
            for _ in 0..<rounds {
                row.directRuns.append(try metered(direct, run))
                row.proxiedRuns.append(try metered(proxied, run))
            }
            return row
        }
        /// One run with the CPU time of each party around it.
        func metered(_ base: String, _ run: (String) throws -> Figures) throws -> Figures {
            let before = CPUClock.sample(originPID: originPID)
            var figures = try run(base)
            let after = CPUClock.sample(originPID: originPID)
            if figures.units > 0, let before, let after {
                let perUnit = 1e6 / figures.units
                figures.cpu = CPUShare(proxy: (after.process - before.process) * perUnit,
                                       origin: (after.origin - before.origin) * perUnit,
                                       client: (after.children - before.children) * perUnit)
            }
            return figures
        }
        func wrkWarmUp(_ arguments: [String]) -> (String) throws -> Void {
            { base in _ = try BenchTools.wrk(wrk, arguments + ["-d", "1s", "\(base)/small"]) }
        }

        progress("keep-alive: \(o.connections) connections, \(o.duration) s per run, \(rounds) round(s)")
        let keepAlive = ["-t", String(o.threads), "-c", String(o.connections), "--latency"]
        rows.append(try measure("keep-alive requests (\(o.connections) connections)", warmUp: wrkWarmUp(keepAlive)) {
            try BenchTools.wrk(wrk, keepAlive + ["-d", "\(o.duration)s", "\($0)/small"])
        })

        progress("latency: 1 keep-alive connection")
        let single = ["-t", "1", "-c", "1", "--latency"]
        rows.append(try measure("latency (1 keep-alive connection)", warmUp: wrkWarmUp(single)) {
            try BenchTools.wrk(wrk, single + ["-d", "\(o.duration)s", "\($0)/small"])
        })

        progress("new TLS connection per request")
        let perRequest = ["-t", String(o.threads), "-c", String(max(2, o.connections / 4)), "--latency", "-H", "Connection: close"]
        rows.append(try measure("new TLS connection per request", warmUp: wrkWarmUp(perRequest)) {
            try BenchTools.wrk(wrk, perRequest + ["-d", "\(o.duration)s", "\($0)/small"])
        })

        progress("bulk download: \(o.bulkMegabytes) MB")
        rows.append(try measure("bulk download (\(o.bulkMegabytes) MB, 1 connection)", warmUp: nil) {
            try BenchTools.bulk(curl, "\($0)/bulk", megabytes: o.bulkMegabytes)
        })
        return rows
    }
}

/// Subprocess helpers for the benchmark.
enum BenchTools {
    static func find(_ name: String, in extra: [String] = []) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + extra
        return path.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func freePort() throws -> Int {
        let fd = try Socket.listen(ListenAddress(host: "127.0.0.1", port: 0))
        defer { close(fd) }
        return Socket.localPort(fd)
    }

    static func waitForPort(_ port: Int) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let r = try Socket.withSockaddr(host: "127.0.0.1", port: port) { address, length, _ in connect(fd, address, length) }
            close(fd)
            if r == 0 { return }
            usleep(50_000)
        }
        throw PinproxyError(.io, "the benchmark origin did not start on port \(port)")
    }

    static func writeZeros(_ path: String, megabytes: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw PinproxyError(.io, "cannot write \(path)")
        }
        defer { try? handle.close() }
        let block = Data(count: 1 << 20)
        for _ in 0..<megabytes { handle.write(block) }
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs wrk and reads requests/s and the 50th and 99th latency percentiles.
    static func wrk(_ wrk: String, _ arguments: [String]) throws -> ProxyBenchmark.Figures {
        let text = try run(wrk, arguments)
        var figures = ProxyBenchmark.Figures(requestsPerSecond: 0)
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), parts.count > 1 { figures.requestsPerSecond = Double(parts[1]) ?? 0 }
            if parts.count > 2, parts[1] == "requests", parts[2] == "in" { figures.units = Double(parts[0]) ?? 0 }
            if line.hasPrefix("50%"), parts.count > 1 { figures.p50Milliseconds = milliseconds(String(parts[1])) }
            if line.hasPrefix("99%"), parts.count > 1 { figures.p99Milliseconds = milliseconds(String(parts[1])) }
        }
        if figures.requestsPerSecond == 0 {
            throw PinproxyError(.io, "wrk produced no figures: \(text.suffix(300))")
        }
        return figures
    }

    static func milliseconds(_ text: String) -> Double? {
        for (suffix, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * factor }
        }
        return nil
    }

    static func bulk(_ curl: String, _ url: String, megabytes: Int) throws -> ProxyBenchmark.Figures {
        let text = try run(curl, ["-sk", "-o", "/dev/null", "-w", "%{speed_download} %{size_download}", url])
        let parts = text.split(separator: " ")
        guard parts.count == 2, let speed = Double(parts[0]), let size = Int(parts[1]), size == megabytes << 20 else {
            throw PinproxyError(.io, "bulk download of \(url) failed: \(text)")
        }
        return ProxyBenchmark.Figures(requestsPerSecond: 0, megabytesPerSecond: speed / 1_048_576, units: 1)
    }
}

/// CPU time, in seconds, of this process, of its waited-for children, and of the origin.
enum CPUClock {
    struct Sample {
        var process: Double
        var children: Double
        var origin: Double
    }

    static func sample(originPID: Int32) -> Sample? {
        var own = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) == 0, let origin = processSeconds(originPID) else { return nil }
        var children = rusage()
        guard getrusage(RUSAGE_CHILDREN.rawValue, &children) == 0 else { return nil }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return Sample(process: Double(own.tv_sec) + Double(own.tv_nsec) / 1e9,
                      children: seconds(children.ru_utime) + seconds(children.ru_stime), origin: origin)
    }

    /// User plus system time of a running process, from /proc/PID/stat.
    static func processSeconds(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) / ticks
    }
}
