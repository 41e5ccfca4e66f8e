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

    @Test("an empty Host is refused in HTTP/1.0 as in 1.1; a missing one only in 1.1; absolute form needs none",
          arguments: ["HTTP/1.0", "HTTP/1.1"])
    func anEmptyHostIsRefusedWhateverTheVersion(_ version: String) throws {
        for host in ["Host:\r\n", "Host: \r\n", "Host: \t \r\n"] {
            for connection in ["", "Connection: keep-alive\r\n", "Connection: foo,, x-y\r\n"] {
                let error = try #require(parseError("GET /old \(version)\r\n\(connection)\(host)\r\n"), "\(version) \(host.debugDescription)")
                #expect(error.status == 400)
                #expect(error.reason.contains("Host field is empty"), "\(error.reason)")
            }
        }
        let missing = parseError("GET /old \(version)\r\n\r\n")
        #expect((missing == nil) == (version == "HTTP/1.0"), "\(String(describing: missing))")
        // An absolute-form target names the server; its Host, empty or not, is replaced when forwarded.
        let absolute = try #require(parseWhole(bytes("GET http://a.example/x \(version)\r\nHost:\r\n\r\n")).value)
        guard case .request(let head)? = absolute.first else { Issue.record("no head"); return }
        #expect(HTTP1Forwarding.requestForUpstream(head).headers["Host"] == ["a.example"])
    }

    @Test("Host named in Connection is kept: the request is routed by it")
    func hostIsNeverAConnectionOption() throws {
        for connection in ["Host, X-Drop", "keep-alive, host, x-drop", "HOST,x-drop"] {
            let head = HTTP1RequestHead(method: "GET", target: .origin("/"),
                                        headers: ["Host": "a.example", "Connection": connection, "X-Drop": "1", "X-Keep": "2"])
            for forwarded in [HTTP1Forwarding.requestForUpstream(head).serialized(),
                              HTTP1Forwarding.serializedRequestForUpstream(head, via: nil).bytes] {
                let text = String(decoding: forwarded, as: UTF8.self)
                #expect(text.contains("\r\nHost: a.example\r\n"), "\(connection): \(text)")
                #expect(!text.contains("X-Drop"), "\(connection): \(text)")
                #expect(text.contains("X-Keep: 2"), "\(connection): \(text)")
            }
            // A parsed head takes the indexed path; the same rule holds.
            let parsed = try #require(parseWhole(bytes("GET / HTTP/1.1\r\nHost: a.example\r\nConnection: \(connection)\r\nX-Drop: 1\r\n\r\n")).value)
            guard case .request(let wireHead)? = parsed.first else { Issue.record("no head"); return }
            let text = String(decoding: HTTP1Forwarding.serializedRequestForUpstream(wireHead, via: nil).bytes, as: UTF8.self)
            #expect(text.contains("\r\nHost: a.example\r\n") && !text.contains("X-Drop"), "\(connection): \(text)")
        }
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
