import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1

/// Forwarding and framing rules that only a head of one particular shape reaches:
/// a client that closes, a request body delimited by close, a CONNECT with a body,
/// and a refused CONNECT followed by another response.
@Suite("HTTP/1 forwarding and framing edge rules")
struct HTTP1ForwardingRulesTests {
    @Test func aClientThatDoesNotKeepTheConnectionGetsConnectionClose() throws {
        let sized = HTTP1ResponseHead(status: 200, headers: ["Content-Length": "5"], framing: .contentLength(5))
        let closing = HTTP1RequestHead(method: "GET", target: .origin("/"), headers: ["Host": "h", "Connection": "close"])
        let toClosing = HTTP1Forwarding.responseForClient(sized, to: closing)
        #expect(toClosing.headers["Connection"] == ["close"])
        #expect(!toClosing.keepAlive)
        // HTTP/1.0 without keep-alive closes too.
        let old = HTTP1RequestHead(method: "GET", target: .origin("/"), version: .http1_0)
        let toOld = HTTP1Forwarding.responseForClient(sized, to: old)
        #expect(toOld.headers["Connection"] == ["close"])
        #expect(!toOld.keepAlive)
        // The serialized form says the same.
        let wire = String(decoding: HTTP1Forwarding.serializedResponseForClient(sized, to: closing).bytes, as: UTF8.self)
        #expect(wire.contains("\r\nConnection: close\r\n"), "\(wire)")
    }

    @Test func aRequestBodyDelimitedByCloseGoesUpstreamChunked() {
        let head = HTTP1RequestHead(method: "POST", target: .origin("/up"), headers: ["Host": "h"], framing: .untilClose)
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        #expect(forwarded.framing == .chunked)
        #expect(forwarded.headers["Transfer-Encoding"] == ["chunked"])
    }

    @Test func aConnectRequestWithTransferEncodingIsRefused() throws {
        let error = try #require(parseError("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(error.code == .ambiguousFraming)
        #expect(error.status == 400)
        #expect(parseError("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n") == nil)
    }

    @Test func aRefusedConnectLeavesTheResponseParserReadingResponses() throws {
        // A 407 to CONNECT is an ordinary response: the next one is parsed, not taken as tunnel bytes.
        let input = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 4\r\n\r\nauthHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["CONNECT", "GET"]).value)
        let statuses = events.compactMap { event -> Int? in
            if case .response(let head) = event { return head.status } else { return nil }
        }
        #expect(statuses == [407, 200], "\(events)")
    }

    @Test("chunk data ends with CRLF or LF, nothing else: a doubled CR or a stray byte is refused", arguments: [
        "5\r\nhello\r\r\n0\r\n\r\n", "5\r\nhello 0\r\n\r\n", "5\r\nhelloX\r\n0\r\n\r\n",
    ])
    func chunkDataEnd(_ body: String) throws {
        let error = try #require(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body))
        #expect(error.code == .badChunk)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n") == nil)
    }

    @Test func aContentLengthOfMoreThanEighteenDigitsIsRefused() throws {
        let error = try #require(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000000000000\r\n\r\n"))
        #expect(error.code == .malformed)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100000000000000000\r\n\r\n") == nil)
    }

    @Test func aRequestWithContentLengthZeroEndsWithItsHead() throws {
        var parser = HTTP1Parser(mode: .request)
        let events = try parser.parse([bytes("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")])
        #expect(events.count == 2, "\(events)")
        #expect(events.last == .end(HTTPHeaders()))
    }
}
