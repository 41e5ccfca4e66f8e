import Foundation
import PinproxyBase
import PinproxyHTTP2
import PinproxyProxy
import Testing

/// Streams that do not simply run to their end, through a real listening
/// proxy with `--http2 on` and CONNECT: a reset mid-body, a stalled reader
/// beside fast ones, and an origin that sends GOAWAY with streams in flight.
@Suite("HTTP/2 streams end to end", .timeLimit(.minutes(10)))
struct HTTP2StreamEndToEndTests {
    static func proxy(_ f: Fixtures) throws -> RunningProxy {
        try RunningProxy(f, configure: { $0.http2 = true })
    }

    static func lines(_ r: ProcessResult) -> [[String]] {
        r.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    }

    @Test("a client resets one stream mid-body: the others complete, the origin's stream is reset, the flow says so")
    func resetMidBody() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        let proxy = try Self.proxy(f)
        let r = try H2Peers.client("reset-mid-body", proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let lines = Self.lines(r)
        #expect(lines.filter { $0.first == "COMPLETE" }.map { $0.last } == Array(repeating: "1048576", count: 5), "\(r.stdout)")
        let resetAt = try #require(lines.first { $0.first == "RESET-SENT" }.flatMap { Int($0[2]) })

        // The origin saw its stream reset with the client's code (CANCEL) and never finished it.
        let log = origin.log
        let large = try #require(log.first { $0.first == "REQUEST" && $0[3] == "/bytes/8388608" })
        let stream = Array(large[1...2])
        #expect(log.contains { $0.first == "RESET" && Array($0[1...2]) == stream && $0[3] == "8" }, "\(log.filter { $0.first != "SENT" })")
        #expect(!log.contains { $0.first == "DONE" && Array($0[1...2]) == stream })

        let flows = waitForFlows(proxy, count: 6)
        let reset = try #require(flows.first { $0.request.url.hasSuffix("/bytes/8388608") })
        #expect(reset.error?.contains("reset") == true && reset.error?.contains("CANCEL") == true, "\(reset.error ?? "no error")")
        #expect(reset.response?.status == 200)
        #expect((reset.response?.bodySize ?? 0) >= resetAt && (reset.response?.bodySize ?? 0) < 8 << 20)
        let others = flows.filter { $0.request.url.hasSuffix("/bytes/1048576") }
        #expect(others.count == 5 && others.allSatisfy { $0.error == nil && $0.response?.bodySize == 1 << 20 })
    }

    @Test("a stream whose reader never opens its window: four fast ones finish, the proxy holds about a window of the slow body")
    func slowReaderBesideFastOnes() throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        let proxy = try Self.proxy(f)
        let r = try H2Peers.client("slow-reader", proxyPort: proxy.port, connect: "localhost:\(origin.port)",
                                   originLog: origin.logPath)
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        let lines = Self.lines(r)
        func value(_ key: String) -> Int? { lines.first { $0.first == key }.flatMap { Int($0[1]) } }
        // The four fast streams finished while the slow one was stalled (they print first).
        let completes = lines.filter { $0.first == "COMPLETE" }
        #expect(completes.prefix(4).allSatisfy { $0[2] == "4194304" } && completes.count == 5, "\(r.stdout)")
        let received = try #require(value("SLOW-RECEIVED"))
        #expect(received > 0 && received <= 65_535, "the client's window bounds what reached it")
        // What the origin could write of 16 MiB: the proxy's stream window upstream (4 MiB) plus
        // what the client took (64 KiB), not the body the proxy would hold if it buffered; and
        // all of that window, which is the upstream leg's and not the client leg's (256 KiB).
        let sent = try #require(value("ORIGIN-SLOW-SENT"))
        let upstreamWindow = HTTP2Limits.upstream.initialStreamWindow
        #expect(sent >= upstreamWindow && sent <= upstreamWindow + 65_535, "the origin wrote \(sent) bytes of the stalled body")
        // Opened at last, the slow stream completes intact.
        #expect(completes.last == ["COMPLETE", "1", "16777216"], "\(r.stdout)")
        let flows = waitForFlows(proxy, count: 5)
        #expect(flows.allSatisfy { $0.error == nil }, "\(flows.map { $0.error ?? "-" })")
    }

    /// h2_raw_client.py's `kind` (`many`: twenty GETs at once) through the
    /// proxy to an origin that sends GOAWAY, with `code`, when request `after`
    /// of a connection arrives: what the client read (its lines, as text too,
    /// and the streams it saw answered, each checked to be a 200), the origin
    /// and the proxy.
    static func acrossGoAway(_ kind: String = "many", after: Int = 10, code: Int = 0) throws
        -> (lines: [[String]], text: String, answered: Set<String>, origin: H2Origin, proxy: RunningProxy) {
        let f = try Fixtures()
        let origin = try H2Origin(f, goAwayAfter: after, goAwayCode: code)
        let proxy = try Self.proxy(f)
        let r = try H2Peers.rawClient(kind, proxyPort: proxy.port, connect: "localhost:\(origin.port)")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = Self.lines(r)
        let completed = lines.filter { $0.first == "RESPONSE" }
        #expect(completed.allSatisfy { $0[2] == "status=200" }, "\(r.stdout)")
        return (lines, r.stdout, Set(completed.map { $0[1] }), origin, proxy)
    }

    /// The streams `first..<end` of the client's, as h2_raw_client.py names them.
    static func streams(_ range: Range<Int>) -> Set<String> { Set(range.map { "stream=\(2 * $0 + 1)" }) }

    @Test("an origin sends GOAWAY with streams in flight: what it processed completes, the rest go again on another connection, the client sees no GOAWAY")
    func upstreamGoAway() throws {
        let (lines, r, answered, origin, proxy) = try Self.acrossGoAway()
        // All twenty answered 200 on the client's one connection, which stays open.
        #expect(answered == Self.streams(0..<20), "\(r)")
        #expect(!lines.contains { $0.first == "RST" || $0.first == "GOAWAY" }, "\(r)")
        #expect(lines.last == ["DONE"], "\(r)")
        // The first connection processed ten (its GOAWAY came with the tenth); the ten it left
        // went again, in order, on a second connection, which took them all.
        let requests = origin.log.filter { $0.first == "REQUEST" }
        let connections = requests.map { $0[1] }
        #expect(requests.count == 20 && Set(connections).count == 2, "\(origin.log)")
        let second = requests.filter { $0[1] == connections.last }.map { $0[3] }
        #expect(second == (10..<20).map { "/small?n=\($0)" }, "\(origin.log)")
        #expect(origin.log.filter { $0.first == "GOAWAY" }.count == 2, "\(origin.log)")

        let flows = waitForFlows(proxy, count: 20)
        #expect(flows.count == 20 && flows.allSatisfy { $0.error == nil && $0.response?.status == 200 },
                "\(flows.map { $0.error ?? "-" })")
        // Each flow names the connection that answered it, the one let go too.
        #expect(flows.allSatisfy { $0.upstreamTLS != nil }, "\(flows.map { "\($0.request.url) \($0.upstreamTLS == nil)" })")
    }

    @Test("an origin sends GOAWAY with an error code: the client is told the same, naming the last stream processed, before the refusals")
    func upstreamGoAwayWithError() throws {
        // ENHANCE_YOUR_CALM (11) with the tenth of twenty streams.
        let (lines, r, answered, origin, _) = try Self.acrossGoAway(code: 11)
        // Client streams 1…19 went to the origin as its streams 1…19, the ten it processed.
        #expect(answered == Self.streams(0..<10), "\(r)")
        let refused = lines.filter { $0.first == "RST" }
        #expect(Set(refused.map { $0[1] }) == Self.streams(10..<20), "\(r)")
        #expect(refused.allSatisfy { $0[2] == "code=7" }, "REFUSED_STREAM: \(r)")
        // One last stream for the client, below every refused one, with the origin's code.
        let goAways = lines.filter { $0.first == "GOAWAY" }
        #expect(!goAways.isEmpty && goAways.allSatisfy { $0 == ["GOAWAY", "code=11", "last=19"] }, "\(goAways)")
        // The GOAWAY before the refusals: a client that retries a refused request at once must
        // already know this connection takes no new stream (curl reused it, and its retry was lost).
        let firstGoAway = try #require(lines.firstIndex { $0.first == "GOAWAY" })
        #expect(lines.firstIndex { $0.first == "RST" }.map { $0 > firstGoAway } == true, "\(r)")
        #expect(origin.log.filter { $0.first == "REQUEST" }.count == 10, "\(origin.log)")
    }

    @Test("an origin sends GOAWAY with uploads in flight: the requests whose bodies it did not take are refused, not sent twice")
    func upstreamGoAwayWithBodies() throws {
        let (lines, r, answered, origin, proxy) = try Self.acrossGoAway("many-posts")
        #expect(answered == Self.streams(0..<10), "\(r)")
        // A body went upstream with each of the other ten: the client may retry them (REFUSED_STREAM).
        let refused = lines.filter { $0.first == "RST" }
        #expect(Set(refused.map { $0[1] }) == Self.streams(10..<20), "\(r)")
        #expect(refused.allSatisfy { $0[2] == "code=7" }, "REFUSED_STREAM: \(r)")
        #expect(!lines.contains { $0.first == "GOAWAY" }, "\(r)")
        #expect(origin.log.filter { $0.first == "REQUEST" }.count == 10, "\(origin.log)")
        let flows = waitForFlows(proxy, count: 20)
        #expect(flows.filter { $0.error?.contains("refused") == true && $0.response == nil }.count == 10,
                "\(flows.map { $0.error ?? "-" })")
    }

    @Test("an origin sends GOAWAY, then drops the connection under a response: that stream is reset, the client's connection goes on")
    func upstreamDropsAfterGoAway() throws {
        // GOAWAY with the second request, /abort: ten bytes of its thousand, then the origin's side
        // of the connection ends (the first request's answer left before the GOAWAY).
        let (lines, r, answered, origin, _) = try Self.acrossGoAway("abort-then-more", after: 2)
        // Stream 1 answered before the GOAWAY; stream 5, the next request on the same client
        // connection, over a new upstream connection.
        #expect(answered == ["stream=1", "stream=5"], "\(r)")
        #expect(lines.contains(["RST", "stream=3", "code=2"]), "INTERNAL_ERROR for the cut response: \(r)")
        #expect(!lines.contains { $0.first == "GOAWAY" } && lines.last == ["DONE"], "\(r)")
        let requests = origin.log.filter { $0.first == "REQUEST" }
        #expect(requests.map { $0[3] } == ["/small", "/abort", "/small"], "\(origin.log)")
        #expect(Set(requests.map { $0[1] }).count == 2, "\(origin.log)")
    }

    @Test("h2load through the proxy to nginx closing its connections every ten requests: every request succeeds")
    func h2loadAcrossUpstreamGoAways() throws {
        let h2load = try #require(findExecutable("/usr/bin/h2load", "h2load"), "h2load (nghttp2-client) is required")
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 1 << 10, keepaliveRequests: 10)
        let proxy = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
        })
        // Two connections of ten streams each, 400 requests: forty upstream connections said GOAWAY.
        let r = try runProcess(h2load, ["-n", "400", "-c", "2", "-m", "10", "https://127.0.0.1:\(proxy.port)/bulk"], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("400 succeeded, 0 failed, 0 errored"), "\(r.stdout)")
        #expect(r.stdout.contains("status codes: 400 2xx"), "\(r.stdout)")
    }

    @Test("curl --http2 --parallel against nginx that sends GOAWAY every ten requests: all thirty succeed, as they do directly")
    func curlAcrossUpstreamGoAways() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 1 << 16, keepaliveRequests: 10)
        let log = Locked<[String]>([])
        let proxy = try RunningProxy(f, configure: { $0.http2 = true }, logLines: log)
        var urls: [String] = []
        for i in 0..<30 { urls += ["-o", "/dev/null", "https://localhost:\(origin.port)/bulk?n=\(i)"] }
        // One line per transfer; a failed one says what it got, whether it made a connection of
        // its own, and curl's error (-S also puts it on stderr).
        let written = "%{http_version} %{http_code} %{url} connect %{http_connect} connects %{num_connects}"
            + " header bytes %{size_header} body bytes %{size_download}: %{errormsg}\\n"
        let format = ["--http2", "--parallel", "--parallel-max", "30", "-sS", "-w", written]
        let direct = try curl(["--cacert", f.originCAPath] + format + urls, timeout: 60)
        #expect(direct.status == 0 && direct.stdout.split(separator: "\n").filter { $0.hasPrefix("2 200 ") }.count == 30,
                "direct: \(direct.stdout) \(direct.stderr)")
        // Several rounds: the failures seen before were races between the GOAWAY, the last responses and the close.
        // Each round's flows are read after it (the recent-flows ring keeps only the latest), so a
        // failure names the round, the transfer curl gave up on and what the proxy recorded for it.
        var seen = Set(proxy.server.recorder.recent.flows.map(\.id))
        for round in 0..<5 {
            let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath] + format + urls, timeout: 60)
            let flows = proxy.server.recorder.recent.flows.filter { !seen.contains($0.id) }
            seen.formUnion(flows.map(\.id))
            let lines = log.withLock { lines in defer { lines = [] }; return lines }
            let failed = r.stdout.split(separator: "\n").filter { !$0.hasPrefix("2 200 ") }
            let errors = flows.compactMap { flow in flow.error.map { "\(flow.request.url): \($0)" } }
            // What the proxy recorded for each transfer curl gave up on (none: it never saw that attempt).
            let failedFlows = failed.map { line in
                let url = line.split(separator: " ").dropFirst(2).first.map(String.init) ?? ""
                let seenByProxy = flows.filter { $0.request.url == url }
                    .map { "status \($0.response.map { String($0.status) } ?? "none") body \($0.response?.bodySize ?? 0) error \($0.error ?? "none")" }
                return "\(url): \(seenByProxy.count) flows \(seenByProxy)"
            }
            #expect(r.status == 0, "round \(round): curl exit \(r.status): \(r.stderr) failed: \(failed) their flows: \(failedFlows) proxy flow errors: \(errors), \(flows.count) flows; the proxy said: \(lines)")
            #expect(failed.isEmpty, "round \(round): \(failed) proxy flow errors: \(errors)")
            #expect(!errors.contains { !$0.contains("refused") }, "round \(round): \(errors)")
        }
    }

    @Test("an origin that finished a response and closed its connection: the response still reaches a client that reads it late")
    func finishedResponseOutlivesTheUpstream() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        // GOAWAY with the first request, its 200,000 bytes, then the connection closes.
        let origin = try H2Origin(f, goAwayAfter: 1)
        let proxy = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
        })
        // The client holds its window closed until the origin has closed the connection.
        let r = try runProcess(python, [HTTP2TranslationTests.h2Client, "late-reader", String(proxy.port), "/bytes/200000", origin.logPath],
                               timeout: 60)
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "200000 ended", "\(r.stdout) \(r.stderr)")
        #expect(origin.log.contains { $0.first == "DONE" && $0.last == "200000" }, "\(origin.log)")
    }
}
