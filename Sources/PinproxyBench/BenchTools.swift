import Foundation
import PinproxyCertificates
import PinproxyProxy

/// Subprocess helpers for the benchmark.
enum BenchTools {
    static func find(_ name: String, in extra: [String] = []) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + extra
        return path.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func freePort() throws -> Int {
        let listener = try Socket.listen(ListenAddress(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        return Socket.localPort(listener)
    }

    static func waitForPort(_ port: Int, seconds: Double = 10) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let r = try Socket.withSockaddr(host: "127.0.0.1", port: port) { address, length, _ in connect(fd, address, length) }
            close(fd)
            if r == 0 { return }
            usleep(50_000)
        }
        throw PinproxyError(.io, "nothing listens on port \(port) after \(Int(seconds)) s")
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
        try wrkFigures(try run(wrk, arguments))
    }

    /// wrk's report read: requests/s, requests done and the percentiles.
    /// A run in which any answer was not 2xx or 3xx throws: wrk counts such
    /// answers as requests, so a path answering errors fast would look fast.
    static func wrkFigures(_ text: String) throws -> ProxyBenchmark.Figures {
        var figures = ProxyBenchmark.Figures(requestsPerSecond: 0)
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if line.hasPrefix("Requests/sec:"), parts.count > 1 { figures.requestsPerSecond = Double(parts[1]) ?? 0 }
            if parts.count > 2, parts[1] == "requests", parts[2] == "in" { figures.units = Double(parts[0]) ?? 0 }
            if line.hasPrefix("50%"), parts.count > 1 { figures.p50Milliseconds = milliseconds(String(parts[1])) }
            if line.hasPrefix("99%"), parts.count > 1 { figures.p99Milliseconds = milliseconds(String(parts[1])) }
            if line.hasPrefix("Non-2xx or 3xx responses:") {
                throw PinproxyError(.io, "wrk saw answers other than 2xx or 3xx: \(line)")
            }
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

    /// Throws unless `url` answers 200 through curl verifying the server
    /// against `caFile`: a path is measured only once it does the work.
    static func expect200(_ curl: String, _ url: String, caFile: String, what: String) throws {
        let status = try run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", caFile, "--max-time", "10", url])
        guard status == "200" else {
            throw PinproxyError(.io, "\(what) answered \(status.isEmpty || status == "000" ? "nothing" : status) for \(url), not 200")
        }
    }

    /// Downloads `url` with a fresh curl (one connection each) until `seconds` have passed, at
    /// least once: one 10 MiB transfer takes tens of milliseconds, too short a sample on its own.
    /// MB/s is the bytes over the transfers' own times (curl's `time_total`, start-up excluded);
    /// the figures' units are the downloads, so CPU is reported per download.
    static func bulk(_ curl: String, _ url: String, megabytes: Int, seconds: Double) throws -> ProxyBenchmark.Figures {
        let started = DispatchTime.now().uptimeNanoseconds
        var downloads = 0, transferSeconds = 0.0
        repeat {
            let text = try run(curl, ["-sk", "-o", "/dev/null", "-w", "%{time_total} %{size_download}", url])
            let parts = text.split(separator: " ")
            guard parts.count == 2, let time = Double(parts[0]), time > 0, let size = Int(parts[1]), size == megabytes << 20 else {
                throw PinproxyError(.io, "bulk download of \(url) failed: \(text)")
            }
            downloads += 1
            transferSeconds += time
        } while Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 < seconds
        let megabytesPerSecond = Double(downloads * megabytes) / transferSeconds
        return ProxyBenchmark.Figures(requestsPerSecond: 0, megabytesPerSecond: megabytesPerSecond, units: Double(downloads))
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

    /// CPU time of this process so far.
    static func ownSeconds() -> Double? {
        var own = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) == 0 else { return nil }
        return Double(own.tv_sec) + Double(own.tv_nsec) / 1e9
    }

    /// CPU time of this process so far, less the calling thread's: the
    /// in-process proxy's share while the calling thread starts and waits
    /// for the clients (a curl per bulk download: about 1 ms of this
    /// process's CPU each, which the peers, measured as processes of their
    /// own, do not carry).
    static func ownSecondsBesideThisThread() -> Double? {
        var thread = timespec()
        guard let own = ownSeconds(), clock_gettime(CLOCK_THREAD_CPUTIME_ID, &thread) == 0 else { return nil }
        return own - (Double(thread.tv_sec) + Double(thread.tv_nsec) / 1e9)
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
