import Foundation
import PinproxyTestSupport
@testable import PinproxyBench
import Testing

/// The parts of `pinproxy bench proxy` that need neither nginx nor wrk.
@Suite("bench proxy figures and options")
struct ProxyBenchmarkTests {
    @Test("the best run of each path is compared, and each round's pair gives its own ratio")
    func bestAndRoundRatios() {
        let row = ProxyBenchmark.Row(
            name: "keep-alive",
            directRuns: [.init(requestsPerSecond: 20_000), .init(requestsPerSecond: 30_000), .init(requestsPerSecond: 25_000)],
            proxiedRuns: [.init(requestsPerSecond: 11_000), .init(requestsPerSecond: 12_000), .init(requestsPerSecond: 10_000)])
        #expect(row.direct.requestsPerSecond == 30_000)
        #expect(row.proxied.requestsPerSecond == 12_000)
        #expect(row.roundRatios == [0.55, 0.4, 0.4])
        let bulk = ProxyBenchmark.Row(
            name: "bulk",
            directRuns: [.init(requestsPerSecond: 0, megabytesPerSecond: 600)],
            proxiedRuns: [.init(requestsPerSecond: 0, megabytesPerSecond: 450)])
        #expect(bulk.roundRatios == [0.75])
    }

    @Test("bench proxy refuses --loops out of range before starting anything", arguments: ["0", "257"])
    func loopsRange(value: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try runProcess(pinproxyBinary, ["bench", "proxy", "--loops", value], timeout: 20)
        #expect(r.status != 0)
        #expect(r.stderr.contains("--loops must be 1–256"), "\(r.stderr)")
    }
}
