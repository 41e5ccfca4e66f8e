import Foundation
import PinproxyBase
import PinproxyProxy
import Testing

/// A daemon without the control API keeps no recent flows (`serve` without
/// `--admin`): it builds a flow only for a capture file or the log line, and
/// otherwise only counts the exchange. Five HTTP/1.1 requests on one
/// connection and five HTTP/2 streams on another, through the proxy in
/// forward mode, each time.
@Suite("Flows nobody reads", .timeLimit(.minutes(5)))
struct UnreadFlowTests {
    static func drive(_ proxy: RunningProxy, _ f: Fixtures, origin: NginxOrigin) throws {
        for version in ["--http1.1", "--http2"] {
            var args = ["--proxy", proxy.url, "--cacert", f.proxyCAPath, version, "-s", "-w", "%{http_version} %{http_code}\\n"]
            for i in 0..<5 { args += ["-o", "/dev/null", "https://localhost:\(origin.port)/small?n=\(i)"] }
            let r = try curl(args, timeout: 30)
            #expect(r.status == 0, "\(r.stderr)")
            let expected = version == "--http2" ? "2 200" : "1.1 200"
            #expect(r.stdout.split(separator: "\n").map(String.init) == Array(repeating: expected, count: 5), "\(r.stdout)")
        }
    }

    /// The proxy's flow counter once it reaches `count` (or after 10 s).
    static func counted(_ proxy: RunningProxy, _ count: Int) -> Int {
        let deadline = Date().addingTimeInterval(10)
        while proxy.server.counters.counts.flows < count && Date() < deadline { usleep(20_000) }
        usleep(100_000)  // and nothing more after it
        return proxy.server.counters.counts.flows
    }

    @Test("no recent flows, no file, no log line: each exchange is counted once and no flow is kept")
    func countedOnly() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let proxy = try RunningProxy(f, configure: { $0.http2 = true }, keepsRecentFlows: false)
        #expect(!proxy.server.recorder.wantsFlows)
        try Self.drive(proxy, f, origin: origin)
        #expect(Self.counted(proxy, 10) == 10)
        #expect(proxy.server.recorder.recent.flows.isEmpty)
    }

    @Test("no recent flows but a HAR file: every exchange is in the file, none in the ring")
    func writtenToTheFile() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let har = f.directory.file("flows.har")
        let proxy = try RunningProxy(f, configure: { $0.http2 = true }, harPath: har, keepsRecentFlows: false)
        try Self.drive(proxy, f, origin: origin)
        #expect(Self.counted(proxy, 10) == 10)
        proxy.server.recorder.flush()
        let entries = try validateHAR(try readJSON(URL(fileURLWithPath: har)))
        let versions = entries.compactMap { ($0["request"] as? [String: Any])?["httpVersion"] as? String }
        #expect(versions.sorted() == Array(repeating: "HTTP/1.1", count: 5) + Array(repeating: "HTTP/2.0", count: 5), "\(versions)")
        #expect(proxy.server.recorder.recent.flows.isEmpty)
    }

    @Test("no recent flows but flows logged at info: one line per exchange")
    func logged() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let lines = Locked<[String]>([])
        let proxy = try RunningProxy(f, configure: { $0.http2 = true }, logLines: lines, keepsRecentFlows: false)
        try Self.drive(proxy, f, origin: origin)
        #expect(Self.counted(proxy, 10) == 10)
        let flowLines = lines.withLock { $0 }.filter { $0.contains("GET https://localhost:\(origin.port)/small?n=") && $0.contains("-> 200") }
        #expect(flowLines.count == 10, "\(lines.withLock { $0 })")
    }

    @Test("by default (and with the control API) the ring keeps every flow")
    func keptByDefault() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        for admin in [false, true] {
            let proxy = try RunningProxy(f, configure: { $0.http2 = true }, admin: admin, keepsRecentFlows: admin ? false : true)
            try Self.drive(proxy, f, origin: origin)
            #expect(Self.counted(proxy, 10) == 10)
            #expect(waitForFlows(proxy, count: 10).count == 10)
        }
    }
}
