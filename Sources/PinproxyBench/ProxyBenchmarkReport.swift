import Foundation

/// The text `pinproxy bench proxy` prints for one load: a line per path with
/// its best run, the ratio to direct and each round's ratio, then the CPU
/// per request of each party and, when pinproxy recorded, what the capture
/// files held.
public enum ProxyBenchmarkReport {
    public static func lines(for row: ProxyBenchmark.Row) -> [String] {
        var lines = [row.name]
        let bulk = row.direct.best.megabytesPerSecond != nil
        let width = max(8, row.paths.map(\.path.count).max() ?? 0)
        func pad(_ text: String) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        func ms(_ value: Double?) -> String { value.map { String(format: "%8.3f", $0) } ?? "       -" }
        lines.append("  " + pad("") + (bulk ? "       MB/s" : "  requests/s   p50 ms   p99 ms") + "   ratio   by round")
        for path in row.paths {
            let best = path.best
            var line = "  " + pad(path.path)
            line += bulk ? String(format: " %10.1f", best.throughput)
                : String(format: " %11.0f ", best.requestsPerSecond) + ms(best.p50Milliseconds) + " " + ms(best.p99Milliseconds)
            if path.path != row.direct.path {
                line += String(format: "   %5.2f   ", row.ratio(path)) + row.roundRatios(path).map { String(format: "%.2f", $0) }.joined(separator: " ")
            }
            lines.append(line)
        }
        if !bulk, let direct = row.direct.best.p50Milliseconds {
            let added = row.paths.dropFirst().compactMap { path in
                path.best.p50Milliseconds.map { String(format: "%@ %+.3f", path.path, $0 - direct) }
            }
            if !added.isEmpty { lines.append("  p50 added, ms: " + added.joined(separator: "; ")) }
        }
        let unit = bulk ? "ms per download" : "µs per request"
        let scale = bulk ? 1e-3 : 1
        var cpu: [String] = []
        for path in row.paths {
            guard let share = path.meanCPU else { continue }
            func f(_ v: Double) -> String { String(format: "%.1f", v * scale) }
            let parts = path.path == row.direct.path
                ? "origin \(f(share.origin)) + client \(f(share.client))"
                : "proxy \(f(share.proxy)) + origin \(f(share.origin)) + client \(f(share.client))"
            cpu.append("    \(pad(path.path)) \(parts) = \(f(share.total))")
        }
        if !cpu.isEmpty {
            lines.append("  CPU, \(unit):")
            lines += cpu
            if let direct = row.direct.meanCPU?.total, direct > 0 {
                let ratios = row.paths.dropFirst().compactMap { path in
                    path.meanCPU.map { String(format: "%@ %.2f", path.path, $0.total > 0 ? direct / $0.total : 0) }
                }
                lines.append("  CPU-bound ratio (direct CPU / path CPU): " + ratios.joined(separator: "; "))
            }
        }
        lines += peerLines(for: row, pad: pad)
        if let check = row.captureCheck {
            let s = check.statistics
            lines.append("  capture files: \(check.flowsCounted) flows counted; HAR " + (check.harEntries.map { "valid, \($0) entries" } ?? "INVALID")
                         + String(format: " (%.1f MB)", Double(check.harBytes) / 1_048_576)
                         + "; \(check.eventLines) JSON lines; \(s.groups) groups, largest \(s.largestGroup) records; lost \(s.lost)"
                         + (check.complete ? "; complete" : "; INCOMPLETE"))
        }
        return lines
    }

    /// With HAProxy or nginx among the paths: each path's median run, its
    /// ratio to the direct median and to the best peer's median. Medians,
    /// not best runs: a peer and pinproxy are close, and one lucky run should
    /// not decide which is ahead.
    static func peerLines(for row: ProxyBenchmark.Row, pad: (String) -> String) -> [String] {
        let peers = row.paths.filter { row.peerPaths.contains($0.path) }
        guard let best = peers.max(by: { $0.median < $1.median }) else { return [] }
        let bulk = row.direct.best.megabytesPerSecond != nil
        let direct = row.direct.median
        var lines = ["  " + pad("medians") + "   " + (bulk ? "      MB/s" : "requests/s") + "   to direct   to best peer (\(best.path))"]
        for path in row.paths {
            let median = path.median
            var line = "    " + pad(path.path) + String(format: bulk ? " %10.1f" : " %10.0f", median)
            if path.path != row.direct.path {
                line += String(format: "   %9.2f   %12.2f", direct > 0 ? median / direct : 0, best.median > 0 ? median / best.median : 0)
            }
            lines.append(line)
        }
        return lines
    }
}
