import ArgumentParser
import Foundation
import PinproxyProxy

struct BenchProxyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "The same load through the proxy and directly against a local HTTPS origin (nginx), with ratios.",
        discussion: "Uses nginx as the origin, wrk for request loads and curl for bulk. Build with -c release for meaningful figures."
    )

    @Option(help: "Seconds per wrk run.")
    var duration: Int = 5

    @Option(help: "Concurrent keep-alive connections.")
    var connections: Int = 32

    @Option(help: "wrk threads.")
    var threads: Int = 2

    @Option(name: .customLong("bulk-mb"), help: "Size of the bulk download in MiB.")
    var bulkMegabytes: Int = 256

    @Option(help: "Alternating direct/proxied runs per load; the best of each is compared.")
    var rounds: Int = 2

    func validate() throws {
        guard (1...600).contains(duration) else { throw ValidationError("--duration must be 1–600") }
        guard (1...10_000).contains(connections) else { throw ValidationError("--connections must be 1–10000") }
        guard (1...64).contains(threads), threads <= connections else { throw ValidationError("--threads must be 1–64 and at most --connections") }
        guard (1...8192).contains(bulkMegabytes) else { throw ValidationError("--bulk-mb must be 1–8192") }
        guard (1...20).contains(rounds) else { throw ValidationError("--rounds must be 1–20") }
    }

    func run() throws {
        try reportingErrors {
            #if DEBUG
            printError("note: this is a debug build; figures are far below a release build's (swift build -c release)")
            #endif
            var options = ProxyBenchmark.Options()
            options.duration = duration
            options.connections = connections
            options.threads = threads
            options.bulkMegabytes = bulkMegabytes
            options.rounds = rounds
            let rows = try ProxyBenchmark(options: options).run { printError("running: \($0)") }
            func ms(_ v: Double?) -> String { v.map { String(format: "%8.3f", $0) } ?? "       -" }
            func range(_ runs: [ProxyBenchmark.Figures], _ value: (ProxyBenchmark.Figures) -> Double?, _ format: String) -> String {
                let values = runs.compactMap(value)
                guard let low = values.min(), let high = values.max(), values.count > 1 else { return "" }
                return "   runs " + String(format: format, low) + "–" + String(format: format, high)
            }
            print("proxy benchmark: nginx origin over TLS, pinproxy in reverse mode in front of it (same process as the driver);")
            print("direct and proxied runs alternate, \(rounds) each after a warm-up; the best run of each path is compared")
            for row in rows {
                print("")
                print(row.name)
                if let d = row.direct.megabytesPerSecond, let p = row.proxied.megabytesPerSecond {
                    print(String(format: "  direct:  %10.1f MB/s", d) + range(row.directRuns, \.megabytesPerSecond, "%.0f"))
                    print(String(format: "  proxy:   %10.1f MB/s", p) + range(row.proxiedRuns, \.megabytesPerSecond, "%.0f"))
                    print(String(format: "  ratio proxy/direct: %.2f", p / d))
                } else {
                    print("            requests/s   p50 ms   p99 ms")
                    print(String(format: "  direct:  %10.0f  ", row.direct.requestsPerSecond) + ms(row.direct.p50Milliseconds) + " " + ms(row.direct.p99Milliseconds)
                          + range(row.directRuns, { $0.requestsPerSecond }, "%.0f"))
                    print(String(format: "  proxy:   %10.0f  ", row.proxied.requestsPerSecond) + ms(row.proxied.p50Milliseconds) + " " + ms(row.proxied.p99Milliseconds)
                          + range(row.proxiedRuns, { $0.requestsPerSecond }, "%.0f"))
                    print(String(format: "  ratio proxy/direct: %.2f requests/s", row.proxied.requestsPerSecond / row.direct.requestsPerSecond)
                          + (row.direct.p50Milliseconds.flatMap { d in row.proxied.p50Milliseconds.map { String(format: "; p50 added %.3f ms", $0 - d) } } ?? ""))
                }
            }
        }
    }
}
