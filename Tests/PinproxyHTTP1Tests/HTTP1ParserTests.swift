import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1

@Suite("HTTP/1 request parsing")
struct HTTP1RequestParserTests {
    @Test func simpleGetKeepsHeaderOrderCaseAndDuplicates() throws {
        let input = "GET /a/b?c=d HTTP/1.1\r\nHost: example.test\r\nX-Dup: 1\r\nx-dup: 2\r\nACCEPT:  */* \r\n\r\n"
        let events = try #require(parseWhole(bytes(input)).value)
        #expect(events.count == 2)
        guard case .request(let head) = events[0] else { Issue.record("no head: \(events)"); return }
        #expect(head.method == "GET")
        #expect(head.target == .origin("/a/b?c=d"))
        #expect(head.version == .http1_1)
        #expect(head.framing == .none)
        #expect(head.headers.fields.map(\.name) == ["Host", "X-Dup", "x-dup", "ACCEPT"])
        #expect(head.headers["x-DUP"] == ["1", "2"])
        #expect(head.headers.first(name: "accept") == "*/*")
        #expect(events[1] == .end(HTTPHeaders()))
    }

    @Test func contentLengthBody() throws {
        let input = "POST /upload HTTP/1.1\r\nHost: h.test\r\nContent-Length: 11\r\n\r\nhello world"
        let events = try #require(parseWhole(bytes(input)).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.framing == .contentLength(11))
        #expect(Array(events.dropFirst()) == [.body(bytes("hello world")), .end(HTTPHeaders())])
    }

    @Test func bodySlicesShareTheInputAndNeverExceedIt() throws {
        var parser = HTTP1Parser(mode: .request)
        let head = bytes("PUT /x HTTP/1.1\r\nHost: h.test\r\nContent-Length: 10\r\n\r\n")
        let first = try parser.feed(head + bytes("abcd"))
        guard case .body(let slice)? = first.last else { Issue.record("expected a body slice: \(first)"); return }
        #expect(Array(slice) == bytes("abcd"))
        #expect(slice.startIndex == head.count)
        let second = try parser.feed(bytes("efghij") + bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(Parsed.merge(second).count == 4)
    }

    @Test func chunkedBodyWithExtensionsAndTrailers() throws {
        let input = "POST /c HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value;quoted=\"a b\"\r\nhello\r\n"
            + "6 ; ext\r\n world\r\n"
            + "A\r\n0123456789\r\n"
            + "0;last\r\nChecksum: abc\r\nX-Trailer: 1\r\n\r\n"
        let events = try #require(parseWhole(bytes(input)).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.framing == .chunked)
        #expect(events[1] == .body(bytes("hello world0123456789")))
        #expect(events[2] == .end(["Checksum": "abc", "X-Trailer": "1"]))
        #expect(events.count == 3)
    }

    @Test func pipelinedRequestsInOneBuffer() throws {
        let input = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
            + "GET /4 HTTP/1.0\r\n\r\n"
        let events = try #require(parseWhole(bytes(input)).value)
        let targets = events.compactMap { event -> String? in
            if case .request(let head) = event { return head.target.description } else { return nil }
        }
        #expect(targets == ["/1", "/2", "/3", "/4"])
        #expect(events.filter { if case .end = $0 { return true } else { return false } }.count == 4)
        #expect(events.contains(.body(bytes("abc"))))
        #expect(events.contains(.body(bytes("z"))))
    }

    static let streams: [String] = [
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n12345GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n",
        "\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n\u{16}\u{03}\u{01}tunnel bytes",
        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        "GET http://example.test:8080/p?q HTTP/1.1\nHost: example.test:8080\n\n",
    ]

    @Test(arguments: streams)
    func byteByByteFeedingGivesIdenticalEvents(_ stream: String) throws {
        let whole = try #require(parseWhole(bytes(stream)).value)
        let bytewise = try #require(parseBytewise(bytes(stream)).value)
        #expect(!whole.isEmpty)
        #expect(whole == bytewise)
    }

    @Test(arguments: streams)
    func everyTwoWaySplitGivesIdenticalEvents(_ stream: String) throws {
        let input = bytes(stream)
        let whole = try #require(parseWhole(input).value)
        for split in 0...input.count {
            var parser = HTTP1Parser(mode: .request)
            let events = try parser.parse([Array(input[..<split]), Array(input[split...])])
            #expect(events == whole, "split at \(split)")
        }
    }

    @Test func byteByByteFeedingIsLinear() throws {
        // One 400 KB header line fed a byte at a time: a parser that rescans its
        // buffer on every feed would need ~10^11 steps and never finish here.
        var limits = HTTP1Limits()
        limits.maxHeaderLineLength = 1 << 20
        limits.maxHeaderBlockSize = 1 << 21
        var parser = HTTP1Parser(mode: .request, limits: limits)
        let input = bytes("GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "a", count: 400_000) + "\r\n\r\n")
        let clock = ContinuousClock()
        var count = 0
        let elapsed = try clock.measure {
            for byte in input { count += try parser.feed([byte]).count }
        }
        #expect(count == 2)
        #expect(elapsed < .seconds(20))
    }

    @Test func absoluteFormIsSplitIntoSchemeHostPortPath() throws {
        let cases: [(String, String, String, Int, String)] = [
            ("http://example.test:8080/a/b?c=1", "http", "example.test", 8080, "/a/b?c=1"),
            ("http://Example.TEST", "http", "example.test", 80, "/"),
            ("HTTP://example.test?x=1", "http", "example.test", 80, "/?x=1"),
            ("https://[::1]:8443/x", "https", "::1", 8443, "/x"),
            ("https://127.0.0.1/", "https", "127.0.0.1", 443, "/"),
            ("http://web_1.app_net:8000/health", "http", "web_1.app_net", 8000, "/health"),
        ]
        for (target, scheme, host, port, path) in cases {
            let events = try #require(parseWhole(bytes("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")).value, "\(target)")
            guard case .request(let head) = events.first, case .absolute(let url) = head.target else {
                Issue.record("\(target) was not absolute-form: \(events)")
                continue
            }
            #expect(url.scheme == scheme)
            #expect(url.host.description == host)
            #expect(url.port == port)
            #expect(url.path == path)
        }
    }

    @Test(arguments: ["http://user:pw@example.test/", "ftp://example.test/", "example.test/x", "http://exa mple/",
                      "http://example.test:0/", "http://example.test:99999/", "http://under!score.test/", "http:///x"])
    func badAbsoluteTargets(_ target: String) throws {
        let error = try #require(parseError("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(error.status == 400)
    }

    @Test func connectAuthorityForm() throws {
        for (target, host, port) in [("example.test:443", "example.test", 443), ("[2001:db8::1]:8443", "2001:db8::1", 8443),
                                     ("10.0.0.1:1", "10.0.0.1", 1), ("API.Example.test:65535", "api.example.test", 65535),
                                     ("My_API:8443", "my_api", 8443), ("_svc.web_1.test:443", "_svc.web_1.test", 443)] {
            let events = try #require(parseWhole(bytes("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")).value)
            guard case .request(let head) = events.first, case .authority(let h, let p) = head.target else {
                Issue.record("not authority-form: \(events)")
                continue
            }
            #expect(h.description == host)
            #expect(p == port)
            #expect(head.isConnect)
        }
    }

    @Test(arguments: [
        "example.test", "example.test:", "example.test:0", "example.test:65536", "example.test:-1", "example.test:44a",
        "example.test:123456", "exa,mple.test:443", "exa mple.test:443", ":443", "[::1:443", "*.example.test:443",
        String(repeating: "a", count: 300) + ".test:443", String(repeating: "abcdefghi.", count: 30) + "test:443",
        "/path:443", "http://example.test:443", "bad!host.test:443",
    ])
    func invalidConnectTargets(_ target: String) throws {
        let error = try #require(parseError("CONNECT \(target) HTTP/1.1\r\nHost: x\r\n\r\n"), "\(target) was accepted")
        #expect(error.status == 400)
        #expect(error.code == .badTarget || error.code == .malformed)
        #expect(!error.reason.isEmpty)
    }

    @Test func connectTargetWithNulIsRefused() throws {
        let input = bytes("CONNECT evil.test") + [0] + bytes(".example.test:443 HTTP/1.1\r\n\r\n")
        let error = try #require(parseWhole(input).error)
        #expect(error.status == 400)
        #expect(error.reason.contains("0x00"))
    }

    @Test func connectRequestEndsParsingAndReturnsTheTunnelBytes() throws {
        let events = try #require(parseWhole(bytes("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\nGET / HTTP/1.1\r\n")).value)
        #expect(events.count == 3)
        #expect(events[1] == .end(HTTPHeaders()))
        #expect(events[2] == .upgraded(bytes("GET / HTTP/1.1\r\n")))
        var parser = HTTP1Parser(mode: .request)
        let first = try parser.feed(bytes("CONNECT a.test:443 HTTP/1.0\r\n\r\n"))
        #expect(first.last == .upgrade(tail: []))
        #expect(parser.isUpgraded)
        #expect(try parser.feed([0x16, 0x03]) == [.raw([0x16, 0x03])])
    }

    @Test func asteriskFormOnlyForOptions() throws {
        let events = try #require(parseWhole(bytes("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.target == .asterisk)
        #expect(parseError("GET * HTTP/1.1\r\nHost: h\r\n\r\n")?.code == .badTarget)
    }

    static let malformedRequestLines: [(String, Int)] = [
        ("GET /\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400),
        ("G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / FOO/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1x\r\nHost: h\r\n\r\n", 400),
        ("GET / http/1.1\r\nHost: h\r\n\r\n", 400),
        (" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        ("GET / HTTP/0.9\r\n\r\n", 505),
        ("GET / HTTP/3\r\n\r\n", 505),
        ("GET /\u{7f} HTTP/1.1\r\n\r\n", 400),
        ("GET /caf\u{e9} HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\rHost: h\r\n\r\n", 400),
        ("GET relative HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    ]

    @Test(arguments: malformedRequestLines)
    func malformedRequestLinesAreRefused(_ input: String, _ status: Int) throws {
        let error = try #require(parseError(input), "accepted: \(input.debugDescription)")
        #expect(error.status == status, "\(error)")
        let bytewise = try #require(parseBytewise(bytes(input)).error)
        #expect(bytewise.code == error.code)
    }

    static let malformedHeaders: [String] = [
        "GET / HTTP/1.1\r\n\r\n",                                   // HTTP/1.1 without Host
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",             // two Hosts
        "GET / HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n  b\r\n\r\n",  // obsolete line folding
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",                       // space before colon
        "GET / HTTP/1.1\r\nHost: a\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n: empty name\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-Nul: a\u{0}b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-Cr: a\rb\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n",
    ]

    @Test(arguments: malformedHeaders)
    func malformedHeadersAreRefusedWith400(_ input: String) throws {
        let error = try #require(parseError(input), "accepted: \(input.debugDescription)")
        #expect(error.status == 400)
        #expect(error.code == .malformed)
    }

    @Test func headerValuesMayCarryUTF8AndObsText() throws {
        var input = bytes("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\u{e9}\r\nX-Latin: ")
        input += [0x61, 0xe9, 0x62] + bytes("\r\n\r\n")
        let events = try #require(parseWhole(input).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.headers.first(name: "X-Name") == "café")
        #expect(head.headers.first(name: "X-Latin") == "a\u{e9}b")
    }
}
