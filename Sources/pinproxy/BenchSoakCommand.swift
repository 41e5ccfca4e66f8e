import ArgumentParser
import Foundation
import PinproxyBench

struct BenchSoakCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Many clients for minutes through pinproxy with --har and --events: errors, memory and descriptors over time.",
        discussion: """
            The clients mix keep-alive connections, a new connection per request, uploads, abandoned downloads \
            and handshakes refused under every attack profile, against a local nginx origin (python3 runs them). \
            At the end every request a client completed must be in the HAR. Exits 1 on an unexpected error or a \
            request missing from the HAR.
            """
    )

    @Option(help: "How long the clients run.")
    var minutes: Double = 10

    @Option(help: "Concurrent clients.")
    var clients: Int = 1000

    @Option(help: "Seconds between samples.")
    var interval: Double = 10

    @Option(help: "The proxy's event loops (default: as serve).")
    var loops: Int?

    func validate() throws {
        guard minutes > 0, minutes <= 24 * 60 else { throw ValidationError("--minutes must be more than 0 and at most 1440") }
        guard (1...20_000).contains(clients) else { throw ValidationError("--clients must be 1–20000") }
        guard interval >= 1 else { throw ValidationError("--interval must be at least 1 second") }
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops must be 1–256") }
    }

    /// Writes a line unbuffered, so that samples show as they come when the output is piped.
    private func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func run() throws {
        var failed = false
        try reportingErrors {
            #if DEBUG
            printError("note: this is a debug build; figures are far below a release build's (swift build -c release)")
            #endif
            var options = SoakBenchmark.Options()
            options.minutes = minutes
            options.clients = clients
            options.interval = interval
            options.loops = loops
            emit("soak: \(clients) clients for \(minutes) min through pinproxy (forward, --har, --events), nginx origin")
            emit("     s   requests  connections  uploads  aborted  refused  errors   RSS MB    fds  open")
            let result = try SoakBenchmark(options: options).run { s in
                emit(String(format: "%6.0f %10d %12d %8d %8d %8d %7d %8.1f %6d %5d", s.seconds, s.requests, s.connections,
                             s.uploads, s.aborted, s.refused, s.errors, s.residentMegabytes, s.descriptors, s.openConnections))
            }
            for (kind, count) in result.errorKinds.sorted(by: { $0.value > $1.value }) { emit("  error: \(count) × \(kind)") }
            let c = result.capture
            emit("HAR: \(result.harEntries) entries; \(result.completed) requests completed by the clients, \(result.missingFromHAR) of them missing from the HAR")
            emit("capture writer: \(c.groups) groups, largest \(c.largestGroup) records, \(c.flows) flows, \(c.events) events, lost \(c.lost)")
            if let first = result.samples.dropFirst(result.samples.count / 3).first, let last = result.samples.last {
                emit(String(format: "after warm-up (from %.0f s): RSS %.1f → %.1f MB, descriptors %d → %d",
                             first.seconds, first.residentMegabytes, last.residentMegabytes, first.descriptors, last.descriptors))
            }
            if let trend = ResidentTrend(samples: result.samples.map { ($0.seconds, $0.residentMegabytes) }) {
                emit(String(format: "RSS trend after warm-up: thirds' means %.1f, %.1f, %.1f MB; least squares %+.2f MB/min; range %.1f–%.1f MB",
                             trend.thirdMeans[0], trend.thirdMeans[1], trend.thirdMeans[2], trend.slopePerMinute,
                             trend.lowest, trend.highest))
            }
            failed = !result.errorKinds.isEmpty || result.missingFromHAR > 0 || c.lost > 0
        }
        if failed { throw ExitCode(1) }
    }
}
