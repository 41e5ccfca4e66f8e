import Foundation
import PinproxyProxy
import Testing

/// A client that breaks HTTP/2, through a real listening proxy with
/// `--http2 on`: each misbehaviour of docs/http2.md's "Limits" table gets
/// its GOAWAY or RST_STREAM code, the connection ends (or goes on, for a
/// stream error), nothing bad reaches the origin, and the proxy serves the
/// next client at once.
@Suite("HTTP/2 hostile clients end to end", .timeLimit(.minutes(10)))
struct HTTP2HostileClientTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let kind: String
        /// The line h2_raw_client.py must print.
        let answer: String
        /// A connection error: the proxy closes the connection after its GOAWAY.
        let closes: Bool
        /// The bad request may reach the origin (the misbehaviour is in what follows it).
        let forwarded: Bool
        /// Through CONNECT (forward mode), else in reverse mode.
        let connect: Bool
        var testDescription: String { kind }
    }

    static let cases: [Case] = [
        Case(kind: "bad-preface", answer: "GOAWAY code=1 last=0", closes: true, forwarded: false, connect: true),
        Case(kind: "big-frame", answer: "GOAWAY code=6 last=0", closes: true, forwarded: false, connect: false),
        Case(kind: "upper-case", answer: "RST stream=1 code=1", closes: false, forwarded: false, connect: true),
        Case(kind: "connection-header", answer: "RST stream=1 code=1", closes: false, forwarded: false, connect: false),
        Case(kind: "hpack-bomb", answer: "GOAWAY code=11", closes: true, forwarded: false, connect: true),
        Case(kind: "continuation-flood", answer: "GOAWAY code=11", closes: true, forwarded: false, connect: false),
        Case(kind: "too-many-streams", answer: "GOAWAY code=1", closes: true, forwarded: true, connect: true),
        Case(kind: "too-many-streams-early", answer: "RST stream=201 code=7", closes: false, forwarded: true, connect: false),
        Case(kind: "rapid-reset", answer: "GOAWAY code=11", closes: true, forwarded: true, connect: false),
    ]

    @Test("each misbehaviour gets its code; nothing bad goes upstream; the next client is served", arguments: cases)
    func hostileClient(_ c: Case) throws {
        let f = try Fixtures()
        let origin = try H2Origin(f)
        let proxy = try RunningProxy(f, configure: { config in
            config.http2 = true
            if !c.connect { config.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port) }
        })
        let r = try H2Peers.rawClient(c.kind, proxyPort: proxy.port, connect: c.connect ? "localhost:\(origin.port)" : nil)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(lines.contains { $0.hasPrefix(c.answer) }, "\(c.kind): \(lines.filter { !$0.hasPrefix("RST stream") || c.kind == "upper-case" || c.kind == "connection-header" })")
        // The socket timeouts in the client bound the wait; a proxy that hung would show as TIMEOUT.
        #expect(!lines.contains("TIMEOUT"), "\(c.kind): the proxy neither answered nor closed")
        if c.closes {
            #expect(lines.last == "EOF", "\(c.kind): the connection should end after GOAWAY: \(lines.suffix(3))")
            // The GOAWAY that ended it is the one for this misbehaviour, not one before it.
            #expect(lines.last { $0.hasPrefix("GOAWAY") }?.hasPrefix(c.answer) == true, "\(lines.filter { $0.hasPrefix("GOAWAY") })")
        } else if c.kind == "too-many-streams-early" {
            // The hundred streams within the limit are served on the same connection.
            #expect(lines.filter { $0.hasPrefix("RESPONSE") && $0.hasSuffix("status=200") }.count == 100, "\(lines)")
            #expect(lines.filter { $0.hasPrefix("RST") } == [c.answer], "\(lines)")
            #expect(origin.requestPaths.count == 100 && !origin.requestPaths.contains("/hostile-\(c.kind)/100"))
        } else {
            // A stream error: the connection goes on and serves the next request.
            #expect(lines.contains("RESPONSE stream=3 status=200"), "\(lines)")
            #expect(origin.requestPaths.contains("/after-\(c.kind)"), "\(origin.requestPaths)")
        }
        if !c.forwarded {
            #expect(!origin.requestPaths.contains { $0.hasPrefix("/hostile-") }, "\(origin.requestPaths)")
        }
        // The upstream leg stayed valid HTTP/2 (no GOAWAY from the origin for the proxy's frames).
        #expect(!origin.log.contains { $0.first == "ERROR" }, "\(origin.log.filter { $0.first == "ERROR" })")

        let target = c.connect ? ["--proxy", proxy.url, "https://localhost:\(origin.port)/next"]
            : ["--resolve", "localhost:\(proxy.port):127.0.0.1", "https://localhost:\(proxy.port)/next"]
        let after = try curl(["--cacert", f.proxyCAPath, "--http2", "-s", "-o", "/dev/null",
                              "-w", "%{http_version} %{http_code}"] + target)
        #expect(after.stdout == "2 200", "\(after.stdout) \(after.stderr)")
    }
}
