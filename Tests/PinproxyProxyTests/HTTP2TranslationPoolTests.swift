import Foundation
import PinproxyProxy
import Testing

/// When a translated stream's HTTP/1.1 connection may carry the next stream,
/// what becomes of a stream reset while it waits for one, and the Host the origin gets.
@Suite("HTTP/2 translated to HTTP/1.1: the pool's connections and the Host sent", .timeLimit(.minutes(10)))
struct HTTP2TranslationPoolTests {
    @Test("a response that came before the request body was sent leaves its connection unusable: the next stream gets a new one")
    func earlyResponseRetiresTheConnection() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        // The origin reads and drops the rest of the body after its early answer: a
        // request sent on that connection would never be answered (504 after 2 s).
        let proxy = try HTTP2TranslationTests.reverseProxy(f, to: origin.port, responseTimeout: 2)
        let r = try runProcess(python, [HTTP2TranslationTests.h2Client, "early", String(proxy.port)], timeout: 60)
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "refused hello", "\(r.stdout) \(r.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.contains { $0.request.url.hasSuffix("/early/413") && $0.response?.status == 413 })
        #expect(flows.contains { $0.request.url.hasSuffix("/hello") && $0.response?.status == 200 })
    }

    @Test("a stream reset while it waits for a connection never reaches the origin")
    func streamResetWhileWaitingIsNotSent() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try HTTP2TranslationTests.reverseProxy(f, to: origin.port, responseTimeout: 1)
        // Six /hang streams hold the six connections until their 504; the seventh
        // waits, is reset, and must not take a connection once one is free.
        let r = try runProcess(python, [HTTP2TranslationTests.h2Client, "waiting-cancel", String(proxy.port), String(origin.port)],
                               timeout: 60)
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "the hello 0", "\(r.stdout) \(r.stderr)")
    }

    @Test("reverse mode sends the origin's authority as Host on a translated stream, or the client's with keepHostHeader")
    func reverseModeHost() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let rewriting = try HTTP2TranslationTests.reverseProxy(f, to: origin.port)
        let r = try HTTP2TranslationTests.curlReverse(f, rewriting, ["-s", "https://localhost:\(rewriting.port)/headers"])
        #expect(r.stdout.contains("Host: localhost:\(origin.port)\n"), "\(r.stdout) \(r.stderr)")
        let keeping = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.mode = .reverse(scheme: "http", host: .dns("localhost"), port: origin.port)
            c.keepHostHeader = true
        })
        let k = try HTTP2TranslationTests.curlReverse(f, keeping, ["-s", "https://localhost:\(keeping.port)/headers"])
        #expect(k.stdout.contains("Host: localhost:\(keeping.port)\n"), "\(k.stdout) \(k.stderr)")
    }
}
