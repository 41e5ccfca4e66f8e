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
                      "http://example.test:0/", "http://example.test:99999/", "http://under_score.test/", "http:///x"])
    func badAbsoluteTargets(_ target: String) throws {
        let error = try #require(parseError("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(error.status == 400)
    }

    @Test func connectAuthorityForm() throws {
        for (target, host, port) in [("example.test:443", "example.test", 443), ("[2001:db8::1]:8443", "2001:db8::1", 8443),
                                     ("10.0.0.1:1", "10.0.0.1", 1), ("API.Example.test:65535", "api.example.test", 65535)] {
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
        "/path:443", "http://example.test:443", "bad_host.test:443",
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

@Suite("HTTP/1 framing and request smuggling")
struct HTTP1FramingTests {
    static let smuggling: [(String, HTTP1Error.Code, Int)] = [
        ("Content-Length: 5\r\nTransfer-Encoding: chunked", .ambiguousFraming, 400),
        ("Transfer-Encoding: chunked\r\nContent-Length: 5", .ambiguousFraming, 400),
        ("Content-Length: 5\r\nContent-Length: 6", .ambiguousFraming, 400),
        ("Content-Length: 5, 6", .ambiguousFraming, 400),
        ("Content-Length: +5", .malformed, 400),
        ("Content-Length: -1", .malformed, 400),
        ("Content-Length: 0x10", .malformed, 400),
        ("Content-Length: 5 5", .malformed, 400),
        ("Content-Length: ", .malformed, 400),
        ("Content-Length: 99999999999999999999999", .malformed, 400),
        ("Transfer-Encoding: gzip, chunked", .unsupportedTransferCoding, 501),
        ("Transfer-Encoding: identity", .unsupportedTransferCoding, 501),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", .malformed, 400),
        ("Transfer-Encoding: chunked, chunked", .malformed, 400),
        ("Transfer-Encoding: ,", .malformed, 400),
        ("Transfer-Encoding: xchunked", .unsupportedTransferCoding, 501),
    ]

    @Test(arguments: smuggling)
    func ambiguousFramingIsRefused(_ fields: String, _ code: HTTP1Error.Code, _ status: Int) throws {
        let input = "POST / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n\r\n0\r\n\r\n"
        let error = try #require(parseError(input), "accepted: \(fields)")
        #expect(error.code == code)
        #expect(error.status == status)
    }

    @Test func transferEncodingInHTTP10IsRefused() throws {
        let error = try #require(parseError("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
        #expect(error.code == .ambiguousFraming)
    }

    @Test func identicalDuplicateContentLengthsAreOneLength() throws {
        for fields in ["Content-Length: 3\r\nContent-Length: 3", "Content-Length: 3, 3", "content-length: 3"] {
            let events = try #require(parseWhole(bytes("POST / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n\r\nabc")).value)
            guard case .request(let head) = events.first else { Issue.record("no head"); continue }
            #expect(head.framing == .contentLength(3))
            #expect(events[1] == .body(bytes("abc")))
        }
    }

    @Test func transferCodingIsCaseInsensitive() throws {
        let events = try #require(parseWhole(bytes("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n")).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.framing == .chunked)
    }

    static let badChunks: [String] = [
        "zz\r\n", "\r\n", "-1\r\n", " 5\r\nhello\r\n", "0x5\r\nhello\r\n", "FFFFFFFFFFFFFFFFF\r\n",
        "5\r\nhello world\r\n", "5\r\nhelloXY", "5 x\r\nhello\r\n", "5;\u{1}\r\nhello\r\n",
    ]

    @Test(arguments: badChunks)
    func badChunkSizesAreRefused(_ chunk: String) throws {
        let input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n"
        let error = try #require(parseError(input), "accepted \(chunk.debugDescription)")
        #expect(error.code == .badChunk)
        #expect(error.status == 400)
    }

    @Test func chunkSizeLineLimit() throws {
        var limits = HTTP1Limits()
        limits.maxChunkLineLength = 64
        let input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "e", count: 100) + "\r\n"
        #expect(parseError(input, limits: limits)?.code == .badChunk)
    }

    @Test func truncatedMessagesAreReportedAtEOF() throws {
        for input in ["GET / HT", "GET / HTTP/1.1\r\nHost: h\r\n", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc",
                      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"] {
            let error = try #require(parseError(input, finish: true), "\(input.debugDescription)")
            #expect(error.code == .truncated)
        }
        #expect(parseWhole(bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), finish: true).value?.count == 2)
        var idle = HTTP1Parser(mode: .request)
        #expect(idle.isIdle)
        #expect(try idle.finish().isEmpty)
        let afterEOF = #expect(throws: HTTP1Error.self) { try idle.feed(bytes("GET / HTTP/1.1\r\n")) }
        #expect(afterEOF?.code == .stopped)
    }
}

@Suite("HTTP/1 limits and garbage")
struct HTTP1LimitTests {
    @Test func requestLineLimitGives414() throws {
        let input = "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        let error = try #require(parseError(input))
        #expect(error.code == .uriTooLong)
        #expect(error.status == 414)
        // Refused as soon as the line is too long, without waiting for its end.
        var parser = HTTP1Parser(mode: .request)
        #expect(throws: HTTP1Error.self) { try parser.feed(bytes("GET /" + String(repeating: "a", count: 8200))) }
    }

    @Test func requestLineJustUnderTheLimitIsAccepted() throws {
        var limits = HTTP1Limits()
        limits.maxStartLineLength = 100
        let line = "GET /" + String(repeating: "a", count: 100 - 14) + " HTTP/1.1"
        #expect(line.utf8.count == 100)
        #expect(parseWhole(bytes(line + "\r\nHost: h\r\n\r\n"), limits: limits).value?.count == 2)
        let longer = "GET /" + String(repeating: "a", count: 101 - 14) + " HTTP/1.1"
        #expect(parseError(longer + "\r\nHost: h\r\n\r\n", limits: limits)?.status == 414)
    }

    @Test func headerLimitsGive431() throws {
        let longLine = "GET / HTTP/1.1\r\nHost: h\r\nX-Long: " + String(repeating: "v", count: 8200) + "\r\n\r\n"
        #expect(parseError(longLine)?.status == 431)
        #expect(parseError(longLine)?.reason.contains("X-Long") == true)

        let many = "GET / HTTP/1.1\r\nHost: h\r\n" + (1...100).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        let tooMany = try #require(parseError(many))
        #expect(tooMany.code == .headerTooLarge)
        #expect(tooMany.status == 431)
        let exactly100 = "GET / HTTP/1.1\r\nHost: h\r\n" + (1...99).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        #expect(parseError(exactly100) == nil)

        var limits = HTTP1Limits()
        limits.maxHeaderCount = 1000
        let block = "GET / HTTP/1.1\r\nHost: h\r\n" + (1...20).map { "X-\($0): " + String(repeating: "b", count: 4000) + "\r\n" }.joined() + "\r\n"
        let blockError = try #require(parseError(block, limits: limits))
        #expect(blockError.status == 431)
        #expect(blockError.reason.contains("header section"))
    }

    @Test func trailerLimitsApplyToo() throws {
        var limits = HTTP1Limits()
        limits.maxHeaderCount = 3
        let input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + (1...4).map { "T\($0): v\r\n" }.joined() + "\r\n"
        #expect(parseError(input, limits: limits)?.status == 431)
    }

    @Test func tlsClientHelloOnThePlainPort() throws {
        let hello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + Array(repeating: 0xaa, count: 32)
        let error = try #require(parseWhole(hello).error)
        #expect(error.code == .tlsOnPlainPort)
        #expect(error.status == 400)
        #expect(error.reason.contains("TLS"))
        let bytewise = try #require(parseBytewise(hello).error)
        #expect(bytewise.code == .tlsOnPlainPort)
    }

    @Test func binaryGarbageFailsFastAndNeverCrashes() throws {
        var generator = SeededGenerator(state: 42)
        for round in 0..<300 {
            let length = Int.random(in: 1...600, using: &generator)
            let garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for mode in [HTTP1Parser.Mode.request, .response] {
                var parser = HTTP1Parser(mode: mode)
                var failed = false
                var offset = 0
                while offset < garbage.count {
                    let size = Int.random(in: 1...64, using: &generator)
                    let piece = Array(garbage[offset..<min(garbage.count, offset + size)])
                    offset += size
                    do { _ = try parser.feed(piece) } catch {
                        failed = true
                        #expect(error.status >= 400, "round \(round)")
                        #expect(throws: HTTP1Error.self) { try parser.feed([0x41]) }
                        break
                    }
                }
                if !failed { _ = try? parser.finish() }
            }
        }
    }

    @Test func mutatedValidRequestsNeverCrash() throws {
        let valid = bytes("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n")
        var generator = SeededGenerator(state: 7)
        for _ in 0..<2000 {
            var input = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                input[Int.random(in: 0..<input.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            let whole = parseWhole(input, finish: true)
            let bytewise = parseBytewise(input, finish: true)
            switch (whole, bytewise) {
            case (.success(let a), .success(let b)): #expect(a == b)
            case (.failure(let a), .failure(let b)): #expect(a.code == b.code)
            default: Issue.record("whole and bytewise disagree on \(input)")
            }
        }
    }
}

@Suite("HTTP/1 semantics: keep-alive, 100-continue, upgrade")
struct HTTP1SemanticsTests {
    static let keepAliveCases: [(String, String?, Bool)] = [
        ("HTTP/1.1", nil, true),
        ("HTTP/1.1", "close", false),
        ("HTTP/1.1", "Keep-Alive, Close", false),
        ("HTTP/1.1", "keep-alive", true),
        ("HTTP/1.0", nil, false),
        ("HTTP/1.0", "keep-alive", true),
        ("HTTP/1.0", "Keep-Alive", true),
        ("HTTP/1.0", "close", false),
    ]

    @Test(arguments: keepAliveCases)
    func keepAlive(_ version: String, _ connection: String?, _ expected: Bool) throws {
        let field = connection.map { "Connection: \($0)\r\n" } ?? ""
        let events = try #require(parseWhole(bytes("GET / \(version)\r\nHost: h\r\n\(field)\r\n")).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.keepAlive == expected)
    }

    @Test func expectContinue() throws {
        let events = try #require(parseWhole(bytes("PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n")).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.expectsContinue)
        #expect(events.count == 1) // the body has not arrived yet
        let old = try #require(parseWhole(bytes("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n")).value)
        guard case .request(let oldHead) = old.first else { Issue.record("no head"); return }
        #expect(!oldHead.expectsContinue)
    }

    @Test func upgradeRequestPausesUntilTheServerAnswers() throws {
        let request = "GET /chat HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n"
        var parser = HTTP1Parser(mode: .request)
        let events = try parser.parse([bytes(request + "early frame")])
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.requestsUpgrade)
        #expect(head.upgradeProtocols == ["websocket"])
        #expect(parser.isAwaitingUpgradeDecision)
        #expect(try parser.feed(bytes(" more")).isEmpty)
        #expect(parser.acceptUpgrade() == bytes("early frame more"))
        #expect(parser.isUpgraded)

        var declined = HTTP1Parser(mode: .request)
        _ = try declined.feed(bytes(request + "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"))
        let resumed = Parsed.merge(try declined.declineUpgrade())
        guard case .request(let next) = resumed.first else { Issue.record("no resumed head: \(resumed)"); return }
        #expect(next.target == .origin("/next"))

        var stripping = HTTP1Parser(mode: .request, pausesAfterUpgradeRequest: false)
        #expect(try stripping.parse([bytes(request + "GET / HTTP/1.1\r\nHost: h\r\n\r\n")]).count == 4)
    }

    @Test func upgradeNeedsConnectionUpgrade() throws {
        let events = try #require(parseWhole(bytes("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n")).value)
        guard case .request(let head) = events.first else { Issue.record("no head"); return }
        #expect(!head.requestsUpgrade)
    }
}

@Suite("HTTP/1 response parsing")
struct HTTP1ResponseParserTests {
    @Test func contentLengthAndChunkedResponses() throws {
        let input = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
            + "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nnope\r\n0\r\n\r\n"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["GET", "GET"]).value)
        #expect(events.count == 6)
        guard case .response(let first) = events[0], case .response(let second) = events[3] else {
            Issue.record("\(events)")
            return
        }
        #expect(first.status == 200 && first.reason == "OK" && first.framing == .contentLength(2))
        #expect(second.status == 404 && second.reason == "Not Found" && second.framing == .chunked)
        #expect(events[1] == .body(bytes("hi")) && events[4] == .body(bytes("nope")))
    }

    @Test func headResponseHasNoBodyDespiteContentLength() throws {
        let input = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["HEAD", "GET"]).value)
        #expect(events.count == 5)
        guard case .response(let head) = events[0] else { Issue.record("no head"); return }
        #expect(head.framing == .none)
        #expect(head.headers.first(name: "Content-Length") == "1000")
        #expect(events[1] == .end(HTTPHeaders()))
        #expect(events[3] == .body(bytes("abc")))
    }

    @Test(arguments: [204, 304, 100, 103])
    func statusesWithoutBody(_ status: Int) throws {
        let input = "HTTP/1.1 \(status) X\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["GET", "GET"]).value)
        #expect(events.count == 5)
        #expect(events[1] == .end(HTTPHeaders()))
        #expect(events[3] == .body(bytes("z")))
    }

    @Test func interimResponsesDoNotConsumeTheRequest() throws {
        // 100 Continue, then the final answer to HEAD must still be bodiless.
        let input = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["HEAD", "GET"]).value)
        let statuses = events.compactMap { if case .response(let h) = $0 { return h.status } else { return nil } }
        #expect(statuses == [100, 200, 200])
        #expect(events.last == .end(HTTPHeaders()))
        #expect(events.contains(.body(bytes("x"))))
        let first = try #require(events.first)
        guard case .response(let interim) = first else {
            Issue.record("the first event is not a response head: \(first)")
            return
        }
        #expect(interim.isInformational)
    }

    @Test func switchingProtocolsStopsParsingAndReturnsTheRawTail() throws {
        let input = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\u{81}\u{05}hello"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["GET"]).value)
        #expect(events.count == 3)
        #expect(events[1] == .end(HTTPHeaders()))
        #expect(events[2] == .upgraded(bytes("\u{81}\u{05}hello")))
        #expect(parseBytewise(bytes(input), mode: .response, methods: ["GET"]).value == events)
    }

    @Test func connectSuccessStartsATunnel() throws {
        let input = "HTTP/1.1 200 Connection established\r\n\r\nraw"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["CONNECT"]).value)
        #expect(Array(events.suffix(2)) == [.end(HTTPHeaders()), .upgraded(bytes("raw"))])
        let refused = try #require(parseWhole(bytes("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno"), mode: .response, methods: ["CONNECT"]).value)
        #expect(refused.contains(.body(bytes("no"))))
    }

    @Test func bodyUntilClose() throws {
        var parser = HTTP1Parser(mode: .response)
        parser.expectResponse(toMethod: "GET")
        var events = try parser.parse([bytes("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, "), bytes("part two")])
        guard case .response(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.framing == .untilClose)
        #expect(!head.keepAlive)
        #expect(!events.contains(.end(HTTPHeaders())))
        events += Parsed.merge(try parser.finish())
        #expect(Array(events.suffix(2)) == [.body(bytes("part one, part two")), .end(HTTPHeaders())])
    }

    @Test func truncatedResponseBody() throws {
        let error = try #require(parseError("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", mode: .response, finish: true))
        #expect(error.code == .truncated)
        #expect(error.status == 502)
    }

    @Test(arguments: ["HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1200 OK\r\n\r\n",
                      "ICY 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "\u{16}\u{03}\u{03}\u{00}"])
    func malformedResponsesGive502(_ input: String) throws {
        let error = try #require(parseError(input, mode: .response), "accepted \(input.debugDescription)")
        #expect(error.status == 502)
    }

    @Test func statusLineWithoutReason() throws {
        let events = try #require(parseWhole(bytes("HTTP/1.1 204\r\n\r\n"), mode: .response).value)
        guard case .response(let head) = events.first else { Issue.record("no head"); return }
        #expect(head.status == 204)
        #expect(head.reason == "")
    }
}

@Suite("HTTP/1 parser: slices, reused event arrays, repeated heads")
struct HTTP1ParserFastPathTests {
    static let requestStreams: [String] = HTTP1RequestParserTests.streams + [
        "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcPOST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz",
        "GET / HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nX: 1\r\nY: 2\r\n\r\n",
    ]

    static let responseStream = "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 4\r\nConnection: keep-alive\r\n\r\nbody"
        + "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 4\r\nConnection: keep-alive\r\n\r\nBODY"
        + "HTTP/1.1 404 Not Found\r\nServer: s\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n"

    /// Events of `pieces` fed as slices of one larger array (so their indices do not start at 0).
    private func feedSlices(_ input: [UInt8], splits: [Int], mode: HTTP1Parser.Mode = .request,
                            methods: [String] = []) throws -> [Parsed] {
        let padded = [0xee, 0xee, 0xee] + input + [0xee]
        var parser = HTTP1Parser(mode: mode)
        for method in methods { parser.expectResponse(toMethod: method) }
        var events: [HTTP1Event] = []
        var start = 0
        for end in splits + [input.count] {
            events += try parser.feed(padded[(3 + start)..<(3 + end)])
            start = end
        }
        return Parsed.merge(events)
    }

    @Test(arguments: requestStreams)
    func sliceFedAtEverySplitGivesTheEventsOfOneFeed(_ stream: String) throws {
        let input = bytes(stream)
        let whole = try #require(parseWhole(input).value)
        for split in 0...input.count {
            #expect(try feedSlices(input, splits: [split]) == whole, "split at \(split)")
        }
        #expect(try feedSlices(input, splits: Array(0..<input.count)) == whole, "byte by byte")
    }

    @Test func responseSlicesAtEverySplit() throws {
        let input = bytes(Self.responseStream)
        let methods = ["GET", "GET", "GET"]
        let whole = try #require(parseWhole(input, mode: .response, methods: methods).value)
        #expect(whole.count == 9)
        for split in 0...input.count {
            #expect(try feedSlices(input, splits: [split], mode: .response, methods: methods) == whole, "split at \(split)")
        }
    }

    @Test func bodySlicesOfASliceShareItsStorage() throws {
        let padded = bytes("junk") + bytes("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nabcd")
        var parser = HTTP1Parser(mode: .request)
        let events = try parser.feed(padded[4...])
        guard case .body(let body) = events[1] else { Issue.record("no body: \(events)"); return }
        #expect(Array(body) == bytes("abcd"))
        #expect(body.endIndex == padded.endIndex)
        padded.withUnsafeBufferPointer { whole in
            body.withUnsafeBufferPointer { part in #expect(part.baseAddress == whole.baseAddress! + body.startIndex) }
        }
    }

    @Test func feedIntoAppendsToTheCallersArray() throws {
        var parser = HTTP1Parser(mode: .request)
        var events: [HTTP1Event] = [.raw([1])]
        try parser.feed(bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\n")[...], into: &events)
        #expect(events.count == 3)
        #expect(events[0] == .raw([1]))
        events.removeAll(keepingCapacity: true)
        try parser.feed(bytes("Host: h\r\n\r\n")[...], into: &events)
        guard case .requestHead(let head) = events.first else { Issue.record("\(events)"); return }
        #expect(head.target == .origin("/2"))
    }

    @Test func feedIntoDropsOnlyItsOwnEventsOnError() throws {
        var parser = HTTP1Parser(mode: .request)
        var events: [HTTP1Event] = [.raw([1]), .raw([2])]
        let error = #expect(throws: HTTP1Error.self) {
            try parser.feed(bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")[...], into: &events)
        }
        #expect(error?.code == .malformed)
        #expect(events == [.raw([1]), .raw([2])])
        // The parser stays failed, whichever entry point is used.
        #expect(throws: HTTP1Error.self) { try parser.feed(bytes("GET / HTTP/1.1\r\n")) }
        var more: [HTTP1Event] = []
        #expect(throws: HTTP1Error.self) { try parser.feed(bytes("x")[...], into: &more) }
        #expect(more.isEmpty)
    }

    @Test func responseErrorsThroughFeedIntoCarry502() throws {
        var parser = HTTP1Parser(mode: .response)
        var events: [HTTP1Event] = []
        let error = #expect(throws: HTTP1Error.self) { try parser.feed(bytes("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")[...], into: &events) }
        #expect(error?.status == 502)
    }

    /// `bytes` with each 0x01 turned into 0xe9, Latin-1 `é`, which is not UTF-8.
    private func latin1(_ bytes: [UInt8]) -> [UInt8] { bytes.map { $0 == 0x01 ? 0xe9 : $0 } }

    /// Field sections (their empty line included) made of lines from a small
    /// pool, so that consecutive heads repeat, extend, shorten and differ from
    /// each other at every position, with CRLF or bare LF line endings.
    static func headStream(seed: UInt64, count: Int) -> [String] {
        var generator = SeededGenerator(state: seed)
        let pool = ["Host: h", "Host:h", "Host: h ", "host: h", "Accept: */*", "Accept: x/y", "Accept: text/plain", "X-Latin: a\u{1}b",
                    "X-Latin: a\u{e9}b", "X-Empty:", "Connection: keep-alive", "Connection: Upgrade", "Upgrade: websocket",
                    "Content-Length: 3", "Cookie: a=1; b=2", "User-Agent: a-rather-long-user-agent-string/1.0 (with spaces)"]
        func line() -> String { pool.randomElement(using: &generator)! + (Int.random(in: 0..<6, using: &generator) == 0 ? "\n" : "\r\n") }
        var heads: [String] = []
        var previous: [String] = ["Host: h\r\n", "Accept: */*\r\n"]
        var empty = "\r\n"
        for _ in 0..<count {
            var lines = previous
            switch Int.random(in: 0..<6, using: &generator) {
            case 0, 1: break  // the same head again
            case 2: if !lines.isEmpty { lines[Int.random(in: 0..<lines.count, using: &generator)] = line() }
            case 3: lines.append(line())
            case 4: if lines.count > 1 { lines.removeLast() } else { empty = empty == "\n" ? "\r\n" : "\n" }
            default: lines = (0..<Int.random(in: 0...5, using: &generator)).map { _ in line() }
            }
            previous = lines
            heads.append(lines.joined() + empty)
        }
        return heads
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func repeatedRequestHeadsParseAsIfEachWereFirst(_ seed: UInt64) throws {
        var parser = HTTP1Parser(mode: .request)
        for (number, fields) in Self.headStream(seed: seed, count: 300).enumerated() {
            let hasBody = fields.contains("Content-Length: 3")
            let message = latin1(bytes("GET /\(number % 3) HTTP/1.1\r\n" + fields + (hasBody ? "abc" : "")))
            let fresh = parseWhole(message)
            do {
                var events = try parser.parse([message])
                if parser.isAwaitingUpgradeDecision { events += Parsed.merge(try parser.declineUpgrade()) }
                #expect(fresh.value == events, "head \(number): \(fields.debugDescription)")
            } catch {
                #expect(fresh.error?.code == error.code, "head \(number): \(fields.debugDescription)")
                parser = HTTP1Parser(mode: .request)
            }
        }
    }

    @Test(arguments: [4, 5] as [UInt64])
    func repeatedResponseHeadsParseAsIfEachWereFirst(_ seed: UInt64) throws {
        var parser = HTTP1Parser(mode: .response, limits: HTTP1Limits())
        for (number, fields) in Self.headStream(seed: seed, count: 300).enumerated() {
            let message = latin1(bytes("HTTP/1.1 \(number % 2 == 0 ? "200 OK" : "404 Gone")\r\nContent-Length: 2\r\n" + fields + "ok"))
            let fresh = parseWhole(message, mode: .response, methods: ["GET"])
            parser.expectResponse(toMethod: "GET")
            do {
                #expect(fresh.value == (try parser.parse([message])), "head \(number): \(fields.debugDescription)")
            } catch {
                #expect(fresh.error?.code == error.code, "head \(number): \(fields.debugDescription)")
                parser = HTTP1Parser(mode: .response)
            }
        }
    }

    @Test func aRepeatedHeadSharesTheFieldsOfThePreviousOne() throws {
        var parser = HTTP1Parser(mode: .request)
        let request = bytes("GET / HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nUser-Agent: a-user-agent-longer-than-fifteen\r\n\r\n")
        let first = try parser.feed(request + request)
        guard case .requestHead(let a) = first[0], case .requestHead(let b) = first[2] else { Issue.record("\(first)"); return }
        #expect(a == b)
        a.headers.fields.withUnsafeBufferPointer { x in
            b.headers.fields.withUnsafeBufferPointer { y in #expect(x.baseAddress == y.baseAddress) }
        }
    }

    @Test func aRepeatedSectionIsCheckedAgainstTheLimitsInForceNow() throws {
        let message = bytes("GET / HTTP/1.1\r\nHost: h\r\nX-Long: " + String(repeating: "v", count: 50) + "\r\nX-B: 1\r\n\r\n")
        func secondTimeWith(_ change: (inout HTTP1Limits) -> Void) -> HTTP1Error? {
            var parser = HTTP1Parser(mode: .request)
            do {
                _ = try parser.feed(message)
                change(&parser.limits)
                _ = try parser.feed(message)
                return nil
            } catch {
                return error
            }
        }
        #expect(secondTimeWith { _ in } == nil)
        let lineLimit = secondTimeWith { $0.maxHeaderLineLength = 50 }
        #expect(lineLimit?.status == 431)
        #expect(lineLimit?.reason.contains("X-Long") == true)
        #expect(secondTimeWith { $0.maxHeaderLineLength = 58 } == nil)
        #expect(secondTimeWith { $0.maxHeaderCount = 2 }?.reason == "more than 2 header fields")
        #expect(secondTimeWith { $0.maxHeaderCount = 3 } == nil)
        let sectionSize = message.count
        #expect(secondTimeWith { $0.maxHeaderBlockSize = sectionSize - 1 }?.reason.contains("header section") == true)
        #expect(secondTimeWith { $0.maxHeaderBlockSize = sectionSize } == nil)
        // A longer start line before the same fields counts toward the section too.
        var parser = HTTP1Parser(mode: .request, limits: { var l = HTTP1Limits(); l.maxHeaderBlockSize = sectionSize; return l }())
        _ = try parser.feed(message)
        #expect(throws: HTTP1Error.self) { try parser.feed(bytes("GET /longer HTTP/1.1\r\n") + message.dropFirst(16)) }
    }

    @Test func headsTooLargeToRememberStillParse() throws {
        var limits = HTTP1Limits()
        limits.maxHeaderCount = 200
        var parser = HTTP1Parser(mode: .request, limits: limits)
        let big = (0..<100).map { "X-Field-\($0): " + String(repeating: "v", count: 60) }.joined(separator: "\r\n")
        let message = bytes("GET / HTTP/1.1\r\nHost: h\r\n" + big + "\r\n\r\n")
        for _ in 0..<3 {
            let events = try parser.parse([message])
            guard case .request(let head) = events.first else { Issue.record("\(events)"); return }
            #expect(head.headers.count == 101)
        }
    }
}
