import ArgumentParser
import Foundation
import PinproxyBench
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
    var rounds: Int = 3

    @Option(help: "The proxy's event loops (default: as serve, half the cores, at least one).")
    var loops: Int?

    func validate() throws {
        guard (1...600).contains(duration) else { throw ValidationError("--duration must be 1–600") }
        guard (1...10_000).contains(connections) else { throw ValidationError("--connections must be 1–10000") }
        guard (1...64).contains(threads), threads <= connections else { throw ValidationError("--threads must be 1–64 and at most --connections") }
        guard (1...8192).contains(bulkMegabytes) else { throw ValidationError("--bulk-mb must be 1–8192") }
        guard (1...20).contains(rounds) else { throw ValidationError("--rounds must be 1–20") }
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops must be 1–256") }
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
            options.loops = loops
            let rows = try ProxyBenchmark(options: options).run { printError("running: \($0)") }
            func ms(_ v: Double?) -> String { v.map { String(format: "%8.3f", $0) } ?? "       -" }
            func range(_ runs: [ProxyBenchmark.Figures], _ value: (ProxyBenchmark.Figures) -> Double?, _ format: String) -> String {
                let values = runs.compactMap(value)
                guard let low = values.min(), let high = values.max(), values.count > 1 else { return "" }
                return "   runs " + String(format: format, low) + "–" + String(format: format, high)
            }
            func roundRatios(_ row: ProxyBenchmark.Row) -> String {
                let ratios = row.roundRatios
                guard ratios.count > 1 else { return "" }
                return "; by round " + ratios.map { String(format: "%.2f", $0) }.joined(separator: " ")
            }
            /// Mean CPU share over a path's runs.
            func meanCPU(_ runs: [ProxyBenchmark.Figures]) -> ProxyBenchmark.CPUShare? {
                let shares = runs.compactMap(\.cpu)
                guard !shares.isEmpty else { return nil }
                let n = Double(shares.count)
                return ProxyBenchmark.CPUShare(proxy: shares.map(\.proxy).reduce(0, +) / n,
                                               origin: shares.map(\.origin).reduce(0, +) / n,
                                               client: shares.map(\.client).reduce(0, +) / n)
            }
            func cpuLines(_ row: ProxyBenchmark.Row, unit: String, scale: Double, format: String) {
                guard let d = meanCPU(row.directRuns), let p = meanCPU(row.proxiedRuns) else { return }
                func f(_ v: Double) -> String { String(format: format, v * scale) }
                print("  CPU \(unit): direct: origin \(f(d.origin)) + client \(f(d.client));"
                      + " proxied: proxy \(f(p.proxy)) + origin \(f(p.origin)) + client \(f(p.client))")
                let directCost = d.origin + d.client
                let proxiedCost = p.proxy + p.origin + p.client
                if proxiedCost > 0 {
                    print(String(format: "  CPU-bound ratio (direct CPU / proxied CPU per %@): %.2f", unit == "per request, µs" ? "request" : "download", directCost / proxiedCost))
                }
            }
            print("proxy benchmark: nginx origin over TLS, pinproxy in reverse mode in front of it (same process as the driver);")
            print("proxy: \(loops ?? ProxyConfiguration.defaultEventLoops) event loop(s) (--loops); nginx: 1 worker; wrk: \(threads) thread(s)")
            print("direct and proxied runs alternate, \(rounds) each after a warm-up; the best run of each path is compared")
            print("CPU lines: mean CPU time per request of each party over the runs; their ratio is what the throughput")
            print("ratio tends to when every core is busy, and varies less with other load on the machine")
            for row in rows {
                print("")
                print(row.name)
                if let d = row.direct.megabytesPerSecond, let p = row.proxied.megabytesPerSecond {
                    print(String(format: "  direct:  %10.1f MB/s", d) + range(row.directRuns, \.megabytesPerSecond, "%.0f"))
                    print(String(format: "  proxy:   %10.1f MB/s", p) + range(row.proxiedRuns, \.megabytesPerSecond, "%.0f"))
                    print(String(format: "  ratio proxy/direct: %.2f", p / d) + roundRatios(row))
                    cpuLines(row, unit: "per download, s", scale: 1e-6, format: "%.2f")
                } else {
                    print("            requests/s   p50 ms   p99 ms")
                    print(String(format: "  direct:  %10.0f  ", row.direct.requestsPerSecond) + ms(row.direct.p50Milliseconds) + " " + ms(row.direct.p99Milliseconds)
                          + range(row.directRuns, { $0.requestsPerSecond }, "%.0f"))
                    print(String(format: "  proxy:   %10.0f  ", row.proxied.requestsPerSecond) + ms(row.proxied.p50Milliseconds) + " " + ms(row.proxied.p99Milliseconds)
                          + range(row.proxiedRuns, { $0.requestsPerSecond }, "%.0f"))
                    print(String(format: "  ratio proxy/direct: %.2f requests/s", row.proxied.requestsPerSecond / row.direct.requestsPerSecond)
                          + (row.direct.p50Milliseconds.flatMap { d in row.proxied.p50Milliseconds.map { String(format: "; p50 added %.3f ms", $0 - d) } } ?? "")
                          + roundRatios(row))
                    cpuLines(row, unit: "per request, µs", scale: 1, format: "%.1f")
                }
            }
        }
    }
}
