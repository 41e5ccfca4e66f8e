import Foundation
@testable import PinproxyBench
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// The parts of `pinproxy bench soak` and `bench idle` that need neither nginx nor clients.
@Suite("bench soak and idle")
struct SoakBenchmarkTests {
    @Test("the soak's HAR check finds the id of every recorded request, and counts the entries")
    func requestIDsInHAR() throws {
        let path = NSTemporaryDirectory() + "soak-ids-\(UUID().uuidString).har"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try HARWriter(path: path)
        let urls = ["https://forge.soak.test:4443/small?id=1", "https://stuff.soak.test:4443/upload?id=23",
                    "https://forge.soak.test:4443/bulk?id=456", "https://forge.soak.test:4443/small",
                    "https://forge.soak.test:4443/small?x=1&id=7890"]
        for url in urls {
            try writer.record(Flow(clientAddress: "127.0.0.1:1", scheme: "https", host: "forge.soak.test", port: 4443,
                                   request: FlowRequest(method: "GET", url: url)))
        }
        writer.close()
        let found = try SoakBenchmark.requestIDs(inHAR: path)
        #expect(found.ids == [1, 23, 456, 7890])
        #expect(found.entries == urls.count)
    }

    @Test("the soak's clients accept forge, stuff and passthrough and refuse every other profile")
    func profilesSplit() {
        let all = Set(AttackCatalog.standard.profiles.map(\.name))
        let split = SoakBenchmark.acceptedProfiles.map(\.name) + SoakBenchmark.refusedProfiles.map(\.name)
        #expect(Set(split) == all)
        #expect(split.count == all.count)
        #expect(SoakBenchmark.host(.expired) == "expired.soak.test")
    }

    @Test("bench soak and bench idle refuse out-of-range options before starting anything",
          arguments: [(["soak", "--clients", "0"], "--clients must be 1–20000"),
                      (["soak", "--minutes", "0"], "--minutes must be more than 0"),
                      (["idle", "--connections", "0"], "--connections must be 1–200000")])
    func optionRanges(arguments: [String], message: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench"] + arguments)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test("the soak's resident-set trend: a swing around a level is flat, a rise shows in the slope and the thirds, the warm-up is left out")
    func residentTrend() throws {
        // Warm-up from 100 to 300 MB, then a ±30 MB swing around 200 MB (up, down, down, up): flat.
        var samples: [(seconds: Double, megabytes: Double)] = []
        for i in 0..<10 { samples.append((Double(i) * 10, 100 + Double(i) * 20)) }
        for i in 10..<30 {
            let offset: Double = [30, -30, -30, 30][(i - 10) % 4]
            samples.append((Double(i) * 10, 200 + offset))
        }
        let flat = try #require(ResidentTrend(samples: samples))
        #expect(flat.from == 100)
        #expect(abs(flat.slopePerMinute) < 1.0, "\(String(describing: flat.slopePerMinute))")
        #expect(flat.lowest == 170)
        #expect(flat.highest == 230)
        let levelled = flat.thirdMeans.allSatisfy { (mean: Double) in abs(mean - 200) < 5 }
        #expect(levelled, "\(String(describing: flat.thirdMeans))")

        // 1 MB every 10 s: 6 MB a minute, and the thirds climb.
        let rising: [(seconds: Double, megabytes: Double)] = (0..<30).map { i in (Double(i) * 10, 100 + Double(i)) }
        let trend = try #require(ResidentTrend(samples: rising))
        #expect(abs(trend.slopePerMinute - 6) < 1e-9)
        #expect(trend.thirdMeans[0] < trend.thirdMeans[1] && trend.thirdMeans[1] < trend.thirdMeans[2])
        #expect(trend.from == 100)

        #expect(ResidentTrend(samples: [(0, 1), (10, 2), (20, 3)]) == nil)
    }
}
