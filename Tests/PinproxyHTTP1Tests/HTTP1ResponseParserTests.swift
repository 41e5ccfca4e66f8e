import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1

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

@Suite("HTTP/1 parser: complete messages before an error")
struct HTTP1CompleteBeforeErrorTests {
    static let response = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n"

    @Test func aCompleteResponseBeforeBytesThatAreNoHTTPStays() throws {
        var parser = HTTP1Parser(mode: .response)
        parser.expectResponse(toMethod: "GET")
        var events: [HTTP1Event] = []
        #expect(throws: HTTP1Error.self) {
            try parser.feedKeepingCompleteMessages(ArraySlice(bytes(Self.response + "garbage\r\n")), into: &events)
        }
        #expect(events.count == 3, "\(events)")
        guard case .responseHead(let head) = events.first else { Issue.record("no head: \(events)"); return }
        #expect(head.status == 200)
        #expect(events.last?.isEnd == true)
        if case .body(let body) = events[1] { #expect(Array(body) == bytes("first\n")) } else { Issue.record("no body: \(events)") }
        // The parser is failed all the same.
        #expect(throws: HTTP1Error.self) { try parser.feedKeepingCompleteMessages(ArraySlice(bytes("x")), into: &events) }
    }

    @Test func anIncompleteMessageBeforeTheErrorGoesAsFeedDropsIt() throws {
        // Part of a response, then a bad chunk size: nothing of this call stays, as with feed.
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"
        for keeping in [true, false] {
            var parser = HTTP1Parser(mode: .response)
            parser.expectResponse(toMethod: "GET")
            var events: [HTTP1Event] = [.body([1])]  // what was there before stays
            #expect(throws: HTTP1Error.self) {
                if keeping { try parser.feedKeepingCompleteMessages(ArraySlice(bytes(text)), into: &events) }
                else { try parser.feed(ArraySlice(bytes(text)), into: &events) }
            }
            #expect(events == [.body([1])], "\(keeping): \(events)")
        }
        // And feed drops a complete message before an error too.
        var parser = HTTP1Parser(mode: .response)
        parser.expectResponse(toMethod: "GET")
        var events: [HTTP1Event] = []
        #expect(throws: HTTP1Error.self) { try parser.feed(ArraySlice(bytes(Self.response + "garbage\r\n")), into: &events) }
        #expect(events.isEmpty)
    }
}
