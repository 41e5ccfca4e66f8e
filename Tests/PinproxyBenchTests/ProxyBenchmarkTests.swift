import Foundation
import PinproxyTestSupport
@testable import PinproxyBench
import Testing

/// The parts of `pinproxy bench proxy` that need neither nginx nor wrk.
@Suite("bench proxy figures and options")
struct ProxyBenchmarkTests {
    @Test("the best run of each path is compared with the best direct run, and each round gives its own ratio")
    func bestAndRoundRatios() {
        let row = ProxyBenchmark.Row(name: "keep-alive", paths: [
            .init(path: "direct", runs: [.init(requestsPerSecond: 20_000), .init(requestsPerSecond: 30_000), .init(requestsPerSecond: 25_000)]),
            .init(path: "pinproxy", runs: [.init(requestsPerSecond: 11_000), .init(requestsPerSecond: 12_000), .init(requestsPerSecond: 10_000)]),
            .init(path: "pinproxy --har --events", runs: [.init(requestsPerSecond: 10_000), .init(requestsPerSecond: 9_000), .init(requestsPerSecond: 5_000)]),
        ])
        #expect(row.direct.best.requestsPerSecond == 30_000)
        #expect(row.paths[1].best.requestsPerSecond == 12_000)
        #expect(row.ratio(row.paths[1]) == 0.4)
        #expect(row.roundRatios(row.paths[1]) == [0.55, 0.4, 0.4])
        #expect(row.roundRatios(row.paths[2]) == [0.5, 0.3, 0.2])
        let bulk = ProxyBenchmark.Row(name: "bulk", paths: [
            .init(path: "direct", runs: [.init(requestsPerSecond: 0, megabytesPerSecond: 600)]),
            .init(path: "pinproxy", runs: [.init(requestsPerSecond: 0, megabytesPerSecond: 450)]),
        ])
        #expect(bulk.roundRatios(bulk.paths[1]) == [0.75])
    }

    @Test("the direct path runs first in each round and the others take turns right after it, one place further each round")
    func turnOrder() {
        #expect(ProxyBenchmark.turnOrder(round: 0, paths: 4) == [0, 1, 2, 3])
        #expect(ProxyBenchmark.turnOrder(round: 1, paths: 4) == [0, 2, 3, 1])
        #expect(ProxyBenchmark.turnOrder(round: 2, paths: 4) == [0, 3, 1, 2])
        #expect(ProxyBenchmark.turnOrder(round: 3, paths: 4) == [0, 1, 2, 3])
        #expect(ProxyBenchmark.turnOrder(round: 2, paths: 1) == [0])
        for paths in 2...7 {
            let rounds = (0..<(paths - 1)).map { ProxyBenchmark.turnOrder(round: $0, paths: paths) }
            for round in rounds {
                #expect(round.sorted() == Array(0..<paths), "each round runs each path once: \(round)")
                #expect(round.first == 0, "direct first: \(round)")
            }
            for place in 1..<paths {
                #expect(Set(rounds.map { $0[place] }) == Set(1..<paths), "every proxied path takes place \(place) once in \(paths - 1) rounds")
            }
        }
    }

    @Test("the report prints a line per path with its ratio, the CPU per request and the capture check")
    func reportLines() {
        let cpu = ProxyBenchmark.CPUShare(proxy: 0, origin: 20, client: 10)
        var row = ProxyBenchmark.Row(name: "keep-alive requests (4 connections)", paths: [
            .init(path: "direct", runs: [.init(requestsPerSecond: 20_000, p50Milliseconds: 0.2, units: 1, cpu: cpu)]),
            .init(path: "pinproxy --har --events", runs: [.init(requestsPerSecond: 10_000, p50Milliseconds: 0.45, units: 1,
                                                               cpu: .init(proxy: 30, origin: 20, client: 10))]),
        ])
        row.captureCheck = CaptureCheck(flowsCounted: 3, statistics: .init(groups: 2, flows: 3, events: 1, largestGroup: 2),
                                        harBytes: 4096, harEntries: 3, eventLines: 4)
        let text = ProxyBenchmarkReport.lines(for: row).joined(separator: "\n")
        #expect(text.contains("pinproxy --har --events       10000    0.450"), "\(text)")
        #expect(text.contains(" 0.50   0.50"), "\(text)")
        #expect(text.contains("p50 added, ms: pinproxy --har --events +0.250"), "\(text)")
        #expect(text.contains("CPU-bound ratio (direct CPU / path CPU): pinproxy --har --events 0.50"), "\(text)")
        #expect(text.contains("HAR valid, 3 entries") && text.contains("; complete"), "\(text)")
        row.captureCheck?.harEntries = nil
        #expect(ProxyBenchmarkReport.lines(for: row).joined().contains("HAR INVALID"))
    }

    @Test("bench proxy refuses --loops out of range before starting anything", arguments: ["0", "257"])
    func loopsRange(value: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--loops", value])
        #expect(r.status != 0)
        #expect(r.stderr.contains("--loops must be 1–256"), "\(r.stderr)")
    }

    @Test("bench proxy refuses an unknown --load, naming the loads it knows")
    func unknownLoad() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--load", "everything"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("unknown --load 'everything' (keep-alive, latency, new-connection, bulk, http2, http2-bulk, forward-keep-alive, forward-new-connection)"), "\(r.stderr)")
    }
}
