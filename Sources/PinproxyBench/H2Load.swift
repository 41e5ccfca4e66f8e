import Foundation
import PinproxyCertificates
import PinproxyProxy

/// h2load (nghttp2's HTTP/2 load generator) for the benchmark's HTTP/2
/// loads: runs it for a duration, reads its summary, and takes the latency
/// percentiles from its per-request log (`--log-file`), since its summary
/// gives only min, max, mean and standard deviation.
enum H2Load {
    /// What one h2load run reported.
    struct Summary: Equatable {
        /// Requests per second over the main duration.
        var requestsPerSecond: Double
        /// Requests that completed with a 2xx status.
        var succeeded: Int
        var failed: Int
        var errored: Int
        var timedOut: Int
        /// Responses by status class (1 for 1xx … 5 for 5xx); a response
        /// whose head arrived before the run ended counts here even when
        /// its body did not.
        var statusClasses: [Int: Int]
        /// Body bytes received, counted while they arrive (a response cut
        /// off by the end of the run counts what arrived of it).
        var dataBytes: Int
        /// The ALPN protocol h2load spoke (`h2`), when it printed one.
        var applicationProtocol: String?
        /// Mean time per request, in milliseconds.
        var meanMilliseconds: Double?
    }

    /// Reads h2load's standard output. Nil when it holds no `finished in` line.
    static func parse(_ text: String) -> Summary? {
        var summary = Summary(requestsPerSecond: 0, succeeded: 0, failed: 0, errored: 0, timedOut: 0,
                              statusClasses: [:], dataBytes: 0)
        var finished = false
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("finished in ") {
                // finished in 2.00s, 37129.50 req/s, 40.72MB/s
                let parts = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count > 1, let rate = Double(parts[1].split(separator: " ")[0]) else { return nil }
                summary.requestsPerSecond = rate
                finished = true
            } else if line.hasPrefix("requests:") {
                // requests: 74259 total, 74359 started, 74259 done, 74259 succeeded, 0 failed, 0 errored, 0 timeout
                let counts = labelledCounts(line.dropFirst("requests:".count))
                summary.succeeded = counts["succeeded"] ?? 0
                summary.failed = counts["failed"] ?? 0
                summary.errored = counts["errored"] ?? 0
                summary.timedOut = counts["timeout"] ?? 0
            } else if line.hasPrefix("status codes:") {
                // status codes: 74259 2xx, 0 3xx, 0 4xx, 0 5xx
                for (label, count) in labelledCounts(line.dropFirst("status codes:".count)) {
                    if label.count == 3, label.hasSuffix("xx"), let digit = Int(label.prefix(1)) { summary.statusClasses[digit] = count }
                }
            } else if line.hasPrefix("traffic:") {
                // traffic: 81.44MB (85398046) total, 7.65MB (8019972) headers (…), 72.52MB (76041216) data
                for part in line.split(separator: ",") where part.hasSuffix(" data") {
                    if let open = part.firstIndex(of: "("), let close = part.firstIndex(of: ")") {
                        summary.dataBytes = Int(part[part.index(after: open)..<close]) ?? 0
                    }
                }
            } else if line.hasPrefix("Application protocol:") {
                summary.applicationProtocol = line.dropFirst("Application protocol:".count).trimmingCharacters(in: .whitespaces)
            } else if line.hasPrefix("time for request:") {
                // time for request:       58us     56.10ms      2.45ms      3.01ms    95.07%
                let fields = line.dropFirst("time for request:".count).split(separator: " ")
                if fields.count > 2 { summary.meanMilliseconds = BenchTools.milliseconds(String(fields[2])) }
            }
        }
        return finished ? summary : nil
    }

    /// "74259 total, 0 failed" → ["total": 74259, "failed": 0].
    private static func labelledCounts(_ text: Substring) -> [String: Int] {
        var counts: [String: Int] = [:]
        for part in text.split(separator: ",") {
            let words = part.split(separator: " ")
            if words.count == 2, let count = Int(words[0]) { counts[String(words[1])] = count }
        }
        return counts
    }

    /// The 50th and 99th percentiles, in milliseconds, of the request
    /// durations in an h2load `--log-file` (lines of start time in µs,
    /// status, duration in µs, tab-separated). Nil when it holds none.
    static func percentiles(logFile text: String) -> (p50: Double, p99: Double)? {
        var durations: [Int] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count >= 3, let micros = Int(fields[2]) { durations.append(micros) }
        }
        guard !durations.isEmpty else { return nil }
        durations.sort()
        func at(_ fraction: Double) -> Double {
            let index = min(durations.count - 1, max(0, Int((fraction * Double(durations.count)).rounded(.up)) - 1))
            return Double(durations[index]) / 1000
        }
        return (at(0.50), at(0.99))
    }

    /// Runs h2load against `url` for `seconds` and returns its figures:
    /// requests/s with p50/p99 from its log, or, with `bulkBytes` (the size
    /// of the body asked for), MB/s of body received, in downloads of that size. Throws when h2load did not speak h2 or any request failed,
    /// errored or got a status other than 2xx: the run is then no
    /// measurement of a working relay.
    static func run(_ h2load: String, url: String, connections: Int, streams: Int, threads: Int, seconds: Int,
                    bulkBytes: Int? = nil, logFile: String) throws -> ProxyBenchmark.Figures {
        let arguments = ["-c", String(connections), "-m", String(streams), "-t", String(max(1, min(threads, connections))),
                         "-D", String(seconds), "--log-file=\(logFile)", url]
        let text = try BenchTools.run(h2load, arguments)
        defer { try? FileManager.default.removeItem(atPath: logFile) }
        guard let summary = parse(text) else {
            throw PinproxyError(.io, "h2load produced no figures for \(url): \(text.suffix(300))")
        }
        guard summary.applicationProtocol == "h2" else {
            throw PinproxyError(.io, "h2load did not speak HTTP/2 with \(url) (application protocol: \(summary.applicationProtocol ?? "none"))")
        }
        let unsuccessful = summary.statusClasses.filter { $0.key != 2 }.values.reduce(0, +)
        guard summary.succeeded > 0, summary.failed == 0, summary.errored == 0, summary.timedOut == 0, unsuccessful == 0 else {
            throw PinproxyError(.io, "h2load against \(url): \(summary.succeeded) succeeded, \(summary.failed) failed, "
                                + "\(summary.errored) errored, \(summary.timedOut) timed out, \(unsuccessful) answered other than 2xx")
        }
        var figures = ProxyBenchmark.Figures(requestsPerSecond: summary.requestsPerSecond, units: Double(summary.succeeded))
        if let bulkBytes {
            figures.megabytesPerSecond = Double(summary.dataBytes) / 1_048_576 / Double(seconds)
            figures.units = Double(summary.dataBytes) / Double(max(1, bulkBytes))
        } else if let log = try? String(contentsOfFile: logFile, encoding: .utf8), let p = percentiles(logFile: log) {
            figures.p50Milliseconds = p.p50
            figures.p99Milliseconds = p.p99
        }
        return figures
    }
}
