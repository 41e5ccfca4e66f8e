import Foundation
import PinproxyHarness
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// The built-in client, the origin and the proxy speak HTTP/2 when they all offer it, and
/// the protocol moves no verdict: every decision is taken before the first request.
@Suite struct HTTP2CheckTests {
    /// OkHttp pinning two public roots, one of which misissues: it accepts the misissued chain,
    /// refuses a chain it cannot verify inside the handshake and a trusted one without its pins
    /// right after it: the three behaviours in one matrix.
    static let policy = #"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:root", "world:misissuer"]}}"#

    /// The matrix run with `http2` on or off, and the proxy's flows of its accepted rows.
    static func matrix(http2: Bool) throws -> (report: CheckReport, flows: [String: Flow]) {
        let harness = try Harness.start(host: Matrix.host, http2: http2)
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        let path = try directory.write(policy, to: "okhttp.json")
        let report = try harness.check(try harness.loadPolicy(contentsOf: path), named: "okhttp.json")
        var flows: [String: Flow] = [:]
        for row in report.results where row.proxyObserved == "intercepted" {
            let port = try #require(row.clientPort)
            // The proxy records an HTTP/2 flow when the stream closes, a moment after the client read it.
            let deadline = Date().addingTimeInterval(3)
            while harness.proxy.flows(clientPort: port).isEmpty && Date() < deadline { usleep(5_000) }
            flows[key(row)] = harness.proxy.flows(clientPort: port).first
        }
        return (report, flows)
    }

    static func key(_ row: ScenarioResult) -> String { "\(row.scenario)/\(row.deviceTrustText)" }

    /// What a row's verdict is made of: everything but timings, ports, the protocol, and the
    /// pins and times in the reason (each world has keys and dates of its own).
    static func verdicts(_ report: CheckReport) -> [String] {
        report.results.map { row in
            let steps = row.verdict?.steps.map { "\($0.action): \($0.outcome.prefix(while: { $0 != "(" && $0 != ":" }))" } ?? []
            return [key(row), row.actual, row.status.rawValue, row.refusedAt?.rawValue ?? "-", row.proxyObserved ?? "-",
                    String(row.originReceivedRequest), row.weaknesses.joined(separator: ","), steps.joined(separator: "; ")]
                .joined(separator: " | ")
        }
    }

    @Test func theSameMatrixGivesTheSameVerdictsOverHTTP2AndHTTP1() throws {
        let (h2, h2Flows) = try Self.matrix(http2: true)
        let (h1, h1Flows) = try Self.matrix(http2: false)
        #expect(h2.errors == 0, "\(Matrix.dump(h2))")
        #expect(Self.verdicts(h2) == Self.verdicts(h1), "HTTP/2:\n\(Matrix.dump(h2))\nHTTP/1.1:\n\(Matrix.dump(h1))")
        #expect(h2.http2 && !h1.http2)

        // Over HTTP/2 the proxy's record of each connection names what the client did: its alert
        // in the handshake, its close before the connection preface, its request. (The runner
        // turns a disagreement into an ERROR row; this says which record each row got.)
        let observed = Set(h2.results.compactMap(\.proxyObserved).map { $0.split(separator: " ").first.map(String.init) ?? $0 })
        #expect(observed.isSuperset(of: ["intercepted", "client-alert", "closed-after-handshake-without-request", "passthrough"]), "\(observed)")
        for row in h2.results where !["direct", "passthrough"].contains(row.scenario) {
            switch row.refusedAt {
            case .handshake?: #expect(row.proxyObserved?.hasPrefix("client-alert (") == true, "\(Self.key(row)): \(row.proxyObserved ?? "-")")
            case .afterHandshake?: #expect(row.proxyObserved == "closed-after-handshake-without-request", "\(Self.key(row))")
            case nil: #expect(row.proxyObserved == "intercepted" && row.originReceivedRequest, "\(Self.key(row))")
            }
        }

        for (report, expected) in [(h2, "h2"), (h1, "http/1.1")] {
            // Direct and passthrough: the origin's choice; every other row: the proxy's, which in
            // TLS 1.3 comes before the certificate, so a client that refused in the handshake saw it too.
            for row in report.results {
                #expect(row.applicationProtocol == expected, "\(Self.key(row)): \(row.applicationProtocol ?? "none")")
            }
        }
        // Both legs of every intercepted row spoke the protocol, as the proxy's flows show.
        #expect(!h2Flows.isEmpty && Set(h2Flows.keys) == Set(h1Flows.keys))
        for (flows, version, alpn) in [(h2Flows, "HTTP/2.0", "h2"), (h1Flows, "HTTP/1.1", "http/1.1")] {
            for (row, flow) in flows {
                #expect(flow.request.httpVersion == version, "\(row)")
                #expect(flow.clientTLS?.alpn == alpn && flow.upstreamTLS?.alpn == alpn, "\(row): client \(flow.clientTLS?.alpn ?? "none"), upstream \(flow.upstreamTLS?.alpn ?? "none")")
                #expect(flow.response?.status == 200, "\(row)")
            }
        }
    }

    /// The origin speaks both protocols to a real client, and records each request with its
    /// scenario marker whichever it came by.
    @Test(arguments: [("--http2", "2"), ("--http1.1", "1.1")])
    func theOriginServesCurlOverEitherProtocol(_ flag: String, _ version: String) throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let port = harness.origin.port
        let marker = "curl-\(version)"
        let r = try run(["curl", "-sS", flag, "--resolve", "\(Matrix.host):\(port):127.0.0.1", "--cacert", harness.world.rootPath,
                         "-H", "X-Pinproxy-Scenario: \(marker)", "-w", "%{http_version}", "https://\(Matrix.host):\(port)/account"])
        #expect(r.status == 0, "\(r.output)")
        #expect(r.stdout == harness.origin.greeting + version, "\(r.stdout)")
        let request = try #require(harness.origin.requests.first { $0.scenario == marker })
        #expect(request.method == "GET" && request.target == "/account")
    }
}
