import Foundation
@testable import PinproxyBench
import PinproxyTestSupport
import Testing

/// `pinproxy bench proxy --http2` and `bench idle --http2`: h2load's output
/// read right, h2load run for real against the benchmark's nginx origin, and
/// both commands end to end. Figures are printed, never compared with a speed.
@Suite("bench proxy --http2 and bench idle --http2", .serialized)
struct HTTP2BenchmarkTests {
    /// The standard output of `h2load -c 4 -m 25 -D 2` against nginx 1.22.1 on this machine.
    static let sample = """
        starting benchmark...
        spawning thread #0: 4 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
        Warm-up started for thread #0.
        progress: 25% of clients started
        progress: 100% of clients started
        Warm-up phase is over for thread #0.
        Main benchmark duration is started for thread #0.
        TLS Protocol: TLSv1.2
        Cipher: ECDHE-ECDSA-AES128-GCM-SHA256
        Server Temp Key: X25519 253 bits
        Application protocol: h2
        Main benchmark duration is over for thread #0. Stopping all clients.
        Stopped all clients for thread #0

        finished in 2.00s, 37129.50 req/s, 40.72MB/s
        requests: 74259 total, 74359 started, 74259 done, 74259 succeeded, 0 failed, 0 errored, 0 timeout
        status codes: 74259 2xx, 0 3xx, 0 4xx, 0 5xx
        traffic: 81.44MB (85398046) total, 7.65MB (8019972) headers (space savings 39.66%), 72.52MB (76041216) data
                             min         max         mean         sd        +/- sd
        time for request:       58us     56.10ms      2.45ms      3.01ms    95.07%
        time for connect:    36.91ms     41.31ms     39.76ms      2.07ms    75.00%
        time to 1st byte:    41.06ms     47.83ms     43.08ms      3.21ms    75.00%
        req/s           :    9171.58     9375.10     9278.14      108.02   100.00%
        """

    @Test("h2load's summary gives requests/s, the outcome counts, body bytes, the protocol and the mean")
    func parsesSummary() throws {
        let summary = try #require(H2Load.parse(Self.sample))
        #expect(summary.requestsPerSecond == 37129.50)
        #expect(summary.succeeded == 74259 && summary.failed == 0 && summary.errored == 0 && summary.timedOut == 0)
        #expect(summary.statusClasses == [2: 74259, 3: 0, 4: 0, 5: 0])
        #expect(summary.dataBytes == 76041216)
        #expect(summary.applicationProtocol == "h2")
        #expect(summary.meanMilliseconds == 2.45)
        let failing = Self.sample.replacingOccurrences(of: "74259 succeeded, 0 failed", with: "74000 succeeded, 259 failed")
            .replacingOccurrences(of: "74259 2xx, 0 3xx, 0 4xx", with: "74000 2xx, 0 3xx, 259 4xx")
        #expect(H2Load.parse(failing)?.failed == 259)
        #expect(H2Load.parse(failing)?.statusClasses[4] == 259)
        #expect(H2Load.parse("starting benchmark...\nconnect: Connection refused\n") == nil)
    }

    @Test("p50 and p99 come from h2load's request log (start µs, status, duration µs)")
    func percentilesFromLog() throws {
        let lines = (1...200).shuffled().map { "1795561143769054\t200\t\($0 * 10)" }
        let p = try #require(H2Load.percentiles(logFile: lines.joined(separator: "\n") + "\n"))
        #expect(p.p50 == 1.0)   // the 100th of 200 durations, 1,000 µs
        #expect(p.p99 == 1.98)  // the 198th, 1,980 µs
        #expect(H2Load.percentiles(logFile: "") == nil)
    }

    @Test("h2load against the benchmark's nginx origin: requests/s and percentiles over h2, MB/s for bulk, and refusals")
    func liveH2Load() throws {
        let h2load = try #require(BenchTools.find("h2load"), "h2load is needed (apt-get install nghttp2-client)")
        let origin = try BenchOrigin(bulkMegabytes: 2, http2: true)
        defer { origin.stop() }
        let base = "https://127.0.0.1:\(origin.port)"
        let log = origin.directory + "/h2load.log"
        let small = try H2Load.run(h2load, url: "\(base)/small", connections: 2, streams: 4, threads: 1, seconds: 1, logFile: log)
        #expect(small.requestsPerSecond > 0 && small.units > 0)
        let p50 = try #require(small.p50Milliseconds), p99 = try #require(small.p99Milliseconds)
        #expect(p50 > 0 && p50 <= p99)
        let bulk = try H2Load.run(h2load, url: "\(base)/bulk", connections: 1, streams: 1, threads: 1, seconds: 1,
                                  bulkBytes: 2 << 20, logFile: log)
        #expect((bulk.megabytesPerSecond ?? 0) > 0 && bulk.units > 0)
        do {
            _ = try H2Load.run(h2load, url: "\(base)/missing", connections: 1, streams: 1, threads: 1, seconds: 1, logFile: log)
            Issue.record("404s were measured as a working relay")
        } catch {
            #expect("\(error)".contains("answered other than 2xx"), "\(error)")
        }
        let http1Only = try BenchOrigin(bulkMegabytes: 1)
        defer { http1Only.stop() }
        do {
            _ = try H2Load.run(h2load, url: "https://127.0.0.1:\(http1Only.port)/small", connections: 1, streams: 1,
                               threads: 1, seconds: 1, logFile: log)
            Issue.record("an origin without h2 was measured as HTTP/2")
        } catch {
            #expect("\(error)".contains("did not speak HTTP/2"), "\(error)")
        }
    }

    @Test("bench proxy --http2 runs h2load directly and through pinproxy in one run and prints both with the ratio")
    func benchProxyHTTP2EndToEnd() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--http2", "--rounds", "1", "--duration", "1", "--bulk-mb", "4",
                              "--http2-connections", "2", "--streams", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let requests = try #require(lines.firstIndex(of: "HTTP/2 requests (2 connections × 10 streams)"), "\(r.stdout)")
        // A header line, then direct and pinproxy: requests/s, p50, p99, and for pinproxy the ratio and the round's ratio.
        let direct = lines[requests + 2].split(separator: " ")
        let proxied = lines[requests + 3].split(separator: " ")
        #expect(direct.first == "direct" && direct.count == 4, "\(r.stdout)")
        #expect(proxied.first == "pinproxy" && proxied.count == 6, "\(r.stdout)")
        #expect((Double(direct[1]) ?? 0) > 0 && (Double(proxied[1]) ?? 0) > 0, "\(r.stdout)")
        #expect(Double(proxied[4]) == Double(proxied[5]), "one round: the best ratio is the round's own")
        let bulk = try #require(lines.firstIndex(of: "HTTP/2 bulk download (4 MiB, 1 connection, 1 stream)"), "\(r.stdout)")
        #expect(lines[bulk + 3].hasPrefix("  pinproxy"), "\(r.stdout)")
        #expect(!r.stdout.contains("keep-alive requests"), "--http2 alone runs the HTTP/2 loads only")
    }

    @Test("bench proxy and bench idle refuse HTTP/2 options out of range or out of place", arguments: [
        (["proxy", "--http2", "--streams", "0"], "--streams must be 1–1000"),
        (["proxy", "--http2", "--http2-connections", "1001"], "--http2-connections must be 1–1000"),
        (["idle", "--http2-first"], "--http2-first needs --http2"),
    ])
    func http2OptionRanges(arguments: [String], message: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench"] + arguments)
        #expect(r.status != 0)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test("bench idle --http2 holds idle HTTP/1.1 and then HTTP/2 connections through the proxy and compares their memory")
    func benchIdleHTTP2EndToEnd() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "idle", "--http2", "--connections", "30", "--active", "2", "--duration", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("idle intercepted connections held: 30 (0 failed to open)"), "\(r.stdout)")
        // The clients count a connection that did not agree to h2, or whose request failed, as failed.
        #expect(r.stdout.contains("idle HTTP/2 connections held (after the HTTP/1.1 ones closed): 30 (0 failed to open)"), "\(r.stdout)")
        #expect(r.stdout.contains("KiB per idle HTTP/2 connection"), "\(r.stdout)")
        #expect(r.stdout.contains("memory per idle connection, HTTP/2 over HTTP/1.1: "), "\(r.stdout)")
        // Each kind is measured again once the proxy settled (upstream hold, sweep, free-page return).
        #expect(r.stdout.contains("settled (10 s after they fell idle): "), "\(r.stdout)")
        #expect(r.stdout.components(separatedBy: "settled (").count == 3, "\(r.stdout)")
    }
}
