import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1

/// Limits taken at their exact boundary, bytes the grammar forbids in places
/// no other check covers, and forwarding rules for heads of one particular shape.
@Suite("HTTP/1 limits at their boundary and rules at their edges")
struct HTTP1EdgeRulesTests {
    private static let chunkedHead = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

    // MARK: Limits at their boundary

    @Test("a header field line exactly as long as the limit is accepted; one byte more is a 431")
    func headerLineAtTheLimit() throws {
        var limits = HTTP1Limits()
        limits.maxHeaderLineLength = 64
        let exact = "X-Pad: " + String(repeating: "v", count: 64 - 7)
        #expect(exact.utf8.count == 64)
        #expect(parseWhole(bytes("GET / HTTP/1.1\r\nHost: h\r\n\(exact)\r\n\r\n"), limits: limits).value?.count == 2)
        let bareLF = bytes("GET / HTTP/1.1\nHost: h\n\(exact)\n\n")
        #expect(parseWhole(bareLF, limits: limits).value?.count == 2)
        #expect(parseBytewise(bareLF, limits: limits).value?.count == 2)
        let error = try #require(parseError("GET / HTTP/1.1\r\nHost: h\r\n\(exact)v\r\n\r\n", limits: limits))
        #expect(error.status == 431)
    }

    @Test("a line exactly at its limit fits however the input is split, the read ending between its CR and LF included")
    func lineAtTheLimitSplitBeforeItsLF() throws {
        var limits = HTTP1Limits()
        limits.maxHeaderLineLength = 64
        limits.maxStartLineLength = 100
        limits.maxChunkLineLength = 32
        let field = "X-Pad: " + String(repeating: "v", count: 64 - 7)
        let target = "/" + String(repeating: "a", count: 100 - "GET  HTTP/1.1".utf8.count - 1)
        let startLine = "GET \(target) HTTP/1.1"
        #expect(startLine.utf8.count == 100)
        let chunkLine = "5;ext=" + String(repeating: "e", count: 32 - 6)
        let text = "\(startLine)\r\nHost: h\r\n\(field)\r\nTransfer-Encoding: chunked\r\n\r\n\(chunkLine)\r\nhello\r\n0\r\n\r\n"
        let input = bytes(text)
        let whole = try #require(parseWhole(input, limits: limits).value)
        #expect(parseBytewise(input, limits: limits).value == whole)
        // Cut after every CR: each line's LF arrives in the next read.
        var pieces: [[UInt8]] = [[]]
        for byte in input {
            pieces[pieces.count - 1].append(byte)
            if byte == 0x0D { pieces.append([]) }
        }
        var parser = HTTP1Parser(mode: .request, limits: limits)
        #expect(try parser.parse(pieces) == whole)
        // One byte more than a limit is still refused when split the same way.
        var over = HTTP1Parser(mode: .request, limits: limits)
        #expect(throws: HTTP1Error.self) { try over.parse([bytes("GET / HTTP/1.1\r\nHost: h\r\n\(field)v\r"), bytes("\n\r\n")]) }
    }

    @Test("a chunk-size line exactly as long as the limit is accepted; one byte more is refused")
    func chunkLineAtTheLimit() throws {
        var limits = HTTP1Limits()
        limits.maxChunkLineLength = 32
        let exact = "5;ext=" + String(repeating: "e", count: 32 - 6)
        #expect(exact.utf8.count == 32)
        let input = bytes(Self.chunkedHead + exact + "\r\nhello\r\n0\r\n\r\n")
        let events = try #require(parseWhole(input, limits: limits).value)
        #expect(events.contains(.body(bytes("hello"))))
        let longer = try #require(parseError(Self.chunkedHead + exact + "e\r\nhello\r\n0\r\n\r\n", limits: limits))
        #expect(longer.code == .badChunk)
    }

    @Test("a trailer section has its own size budget: the head's bytes do not count against it")
    func trailerSectionSizeIsCountedOnItsOwn() throws {
        var limits = HTTP1Limits()
        limits.maxHeaderBlockSize = 200
        let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nX-Pad: " + String(repeating: "h", count: 90) + "\r\n\r\n"
        let trailer = "X-Trailer: " + String(repeating: "t", count: 120) + "\r\n\r\n"
        #expect(head.utf8.count > 100 && head.utf8.count < 200)
        #expect(trailer.utf8.count > 100 && trailer.utf8.count < 200)
        let input = bytes(head + "3\r\nabc\r\n0\r\n" + trailer)
        let events = try #require(parseWhole(input, limits: limits).value)
        #expect(events.last == .end(["X-Trailer": String(repeating: "t", count: 120)]))
        #expect(parseBytewise(input, limits: limits).value == events)
        // A trailer section over the limit on its own is still refused.
        let big = "X-Trailer: " + String(repeating: "t", count: 200) + "\r\n\r\n"
        #expect(parseError(head + "0\r\n" + big, limits: limits)?.status == 431)
    }

    @Test("exactly the allowed bytes may wait for an upgrade's answer; one more is refused")
    func bytesHeldWhilePausedAtTheLimit() throws {
        var limits = HTTP1Limits()
        limits.maxBufferedWhilePaused = 16
        let request = bytes("GET /chat HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let early = Array(repeating: UInt8(ascii: "x"), count: 16)

        var parser = HTTP1Parser(mode: .request, limits: limits)
        _ = try parser.feed(request + Array(early.prefix(10)))
        _ = try parser.feed(Array(early.suffix(6)))
        #expect(parser.isAwaitingUpgradeDecision)
        #expect(parser.acceptUpgrade() == early)

        var over = HTTP1Parser(mode: .request, limits: limits)
        _ = try over.feed(request + early)
        #expect(throws: HTTP1Error.self) { try over.feed([UInt8(ascii: "y")]) }
    }

    // MARK: Bytes the grammar forbids

    @Test("DEL (0x7f) in a field value is refused: it is neither a visible character nor obs-text (RFC 9110 §5.5)")
    func delInAFieldValue() throws {
        for value in ["a\u{7f}b", "\u{7f}", "caf\u{e9}\u{7f}"] {
            let error = try #require(parseError("GET / HTTP/1.1\r\nHost: h\r\nX-Del: \(value)\r\n\r\n"), "\(value.debugDescription)")
            #expect(error.code == .malformed)
            #expect(error.status == 400)
            let trailer = try #require(parseError(Self.chunkedHead + "0\r\nX-Del: \(value)\r\n\r\n"))
            #expect(trailer.code == .malformed)
        }
        let response = try #require(parseError("HTTP/1.1 200 OK\r\nX-Del: a\u{7f}\r\nContent-Length: 0\r\n\r\n", mode: .response))
        #expect(response.status == 502)
    }

    @Test("DEL in a chunk extension is refused like any other control byte")
    func delInAChunkExtension() throws {
        let error = try #require(parseError(Self.chunkedHead + "5;name=a\u{7f}b\r\nhello\r\n0\r\n\r\n"))
        #expect(error.code == .badChunk)
        #expect(error.status == 400)
    }

    @Test("a tab inside the request target is refused: a target has no whitespace (RFC 9112 §3.2)")
    func tabInTheRequestTarget() throws {
        for line in ["GET /a\tb HTTP/1.1", "GET http://example.test/a\tb HTTP/1.1", "OPTIONS *\t HTTP/1.1"] {
            let input = line + "\r\nHost: h\r\n\r\n"
            let error = try #require(parseError(input), "accepted: \(line.debugDescription)")
            #expect(error.status == 400)
            #expect(parseBytewise(bytes(input)).error?.code == error.code)
        }
    }

    @Test("a bare CR inside a request target or a reason phrase is refused: lines end with CRLF")
    func bareCRInsideAStartLine() throws {
        for line in ["GET /a\rb HTTP/1.1", "GET /a\r HTTP/1.1", "GET http://example.test/\rx HTTP/1.1"] {
            let input = line + "\r\nHost: h\r\n\r\n"
            let error = try #require(parseError(input), "accepted: \(line.debugDescription)")
            #expect(error.code == .malformed)
            #expect(error.status == 400)
            #expect(parseBytewise(bytes(input)).error?.code == .malformed)
        }
        let response = try #require(parseError("HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n", mode: .response))
        #expect(response.code == .malformed)
        #expect(response.status == 502)
    }

    @Test("a status code below 100 is refused: valid codes run from 100 to 599 (RFC 9110 §15)")
    func statusCodesBelow100() throws {
        for line in ["HTTP/1.1 000 Zero", "HTTP/1.1 099 Nearly", "HTTP/1.1 010", "HTTP/1.1 001 X"] {
            let error = try #require(parseError(line + "\r\nContent-Length: 0\r\n\r\n", mode: .response), "accepted: \(line)")
            #expect(error.code == .malformed)
            #expect(error.status == 502)
        }
        #expect(parseError("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 599 Last\r\nContent-Length: 0\r\n\r\n", mode: .response) == nil)
    }

    @Test("an empty Content-Length, or one of empty list elements, is not a length of zero")
    func emptyContentLength() throws {
        for value in ["", ",", " , ", ",,"] {
            // The head alone, so that nothing after it can be what fails.
            let input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(value)\r\n\r\n"
            let error = try #require(parseError(input), "accepted Content-Length \(value.debugDescription)")
            #expect(error.code == .malformed)
            #expect(error.status == 400)
            let response = try #require(parseError("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\n", mode: .response))
            #expect(response.status == 502)
        }
    }

    @Test("an HTTP/1.0 response with Transfer-Encoding is refused, as a request is (RFC 9112 §6.1)")
    func transferEncodingInAnHTTP10Response() throws {
        for fields in ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked\r\nContent-Length: 5"] {
            let input = "HTTP/1.0 200 OK\r\n\(fields)\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            let error = try #require(parseError(input, mode: .response), "accepted: \(fields)")
            #expect(error.code == .ambiguousFraming)
            #expect(error.status == 502)
        }
        #expect(parseError("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", mode: .response) == nil)
    }

    @Test("a server that answers plain HTTP with a TLS alert is reported as TLS on a plain port")
    func tlsAlertFromTheServer() throws {
        let alert: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]
        for result in [parseWhole(alert, mode: .response, methods: ["GET"]), parseBytewise(alert, mode: .response, methods: ["GET"])] {
            let error = try #require(result.error)
            #expect(error.code == .tlsOnPlainPort)
            #expect(error.status == 502)
        }
    }

    @Test("whitespace before a chunk extension's ';' is allowed (BWS, RFC 9112 §7.1.1)")
    func whitespaceBeforeAChunkExtension() throws {
        for line in ["5 ;a=1", "5\t;a=1", "5 \t ;a"] {
            let input = bytes(Self.chunkedHead + line + "\r\nhello\r\n0\r\n\r\n")
            let events = try #require(parseWhole(input).value, "refused \(line.debugDescription)")
            #expect(events.contains(.body(bytes("hello"))))
            #expect(parseBytewise(input).value == events)
        }
    }

    // MARK: Framing of answers to CONNECT

    @Test("any 2xx answer to CONNECT starts a tunnel, not only 200 (RFC 9110 §9.3.6)", arguments: [200, 201, 204, 299])
    func everySuccessfulAnswerToConnectStartsATunnel(_ status: Int) throws {
        let input = "HTTP/1.1 \(status) Tunnel\r\nContent-Length: 5\r\n\r\nraw bytes"
        let events = try #require(parseWhole(bytes(input), mode: .response, methods: ["CONNECT"]).value)
        guard case .response(let head)? = events.first else { Issue.record("\(events)"); return }
        #expect(head.framing == .none)
        #expect(Array(events.suffix(2)) == [.end(HTTPHeaders()), .upgraded(bytes("raw bytes"))])
        #expect(parseBytewise(bytes(input), mode: .response, methods: ["CONNECT"]).value == events)
    }

    // MARK: Forwarding

    @Test("Proxy-Authenticate is not relayed: it is for the proxy's own client hop")
    func proxyAuthenticateIsHopByHop() throws {
        let request = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        let response = try parsedResponseHead("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"up\"\r\n"
                                        + "X-Keep: 1\r\nContent-Length: 0\r\n\r\n")
        let built = HTTP1Forwarding.responseForClient(response, to: request)
        #expect(!built.headers.contains(name: "Proxy-Authenticate"))
        #expect(built.headers.first(name: "X-Keep") == "1")
        let wire = String(decoding: HTTP1Forwarding.serializedResponseForClient(response, to: request).bytes, as: UTF8.self)
        #expect(!wire.lowercased().contains("proxy-authenticate"), "\(wire)")
        #expect(wire.contains("\r\nX-Keep: 1\r\n"))
        let kept = HTTP1Forwarding.removingHopByHop(["Proxy-Authenticate": "Basic", "A": "1"])
        #expect(kept.fields.map(\.name) == ["A"])
    }

    @Test("trailers that carry authentication, routing or content controls are not relayed (RFC 9110 §6.5.1)")
    func forbiddenTrailersAreDropped() {
        let forbidden = ["Authorization", "WWW-Authenticate", "Set-Cookie", "Cookie", "Content-Type", "Content-Encoding",
                         "Content-Range", "Content-Length", "Host", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range"]
        for name in forbidden {
            for spelled in [name, name.lowercased(), name.uppercased()] {
                var trailers: HTTPHeaders = ["Checksum": "1"]
                trailers.add(name: spelled, value: "x")
                let kept = HTTP1Forwarding.forwardableTrailers(trailers)
                #expect(kept.fields.map(\.name) == ["Checksum"], "\(spelled) was relayed")
            }
        }
    }

    @Test("Via names the version received: an HTTP/1.0 message gets '1.0 pinproxy' (RFC 9110 §7.6.3)")
    func viaNamesTheReceivedVersion() throws {
        let old = try parsedRequestHead("GET / HTTP/1.0\r\nHost: h\r\n\r\n")
        #expect(HTTP1Forwarding.requestForUpstream(old).headers["Via"] == ["1.0 pinproxy"])
        let oldWire = String(decoding: HTTP1Forwarding.serializedRequestForUpstream(old).bytes, as: UTF8.self)
        #expect(oldWire.contains("\r\nVia: 1.0 pinproxy\r\n"), "\(oldWire)")
        #expect(oldWire.hasPrefix("GET / HTTP/1.1\r\n"))

        let modern = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        let oldResponse = try parsedResponseHead("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(HTTP1Forwarding.responseForClient(oldResponse, to: modern).headers["Via"] == ["1.0 pinproxy"])
        let responseWire = String(decoding: HTTP1Forwarding.serializedResponseForClient(oldResponse, to: modern).bytes, as: UTF8.self)
        #expect(responseWire.contains("\r\nVia: 1.0 pinproxy\r\n"), "\(responseWire)")
        #expect(HTTP1Forwarding.requestForUpstream(modern).headers["Via"] == ["1.1 pinproxy"])
    }

    @Test("a response delimited by close goes to an HTTP/1.0 keep-alive client with Connection: close")
    func untilCloseToAKeepAliveHTTP10Client() throws {
        let old = try parsedRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(old.keepAlive)
        for response in ["HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"] {
            let head = try parsedResponseHead(response)
            let built = HTTP1Forwarding.responseForClient(head, to: old)
            #expect(built.framing == .untilClose)
            #expect(built.headers["Connection"] == ["close"], "\(built.headers.fields)")
            #expect(!built.keepAlive)
            let forwarded = HTTP1Forwarding.serializedResponseForClient(head, to: old)
            let wire = String(decoding: forwarded.bytes, as: UTF8.self)
            #expect(wire.contains("\r\nConnection: close\r\n") && !wire.contains("keep-alive"), "\(wire)")
            #expect(!forwarded.keepAlive)
        }
    }

    @Test("TE: trailers is sent upstream only when the client's TE lists trailers")
    func teTrailersOnlyWhenTheClientAcceptsTrailers() throws {
        for te in ["deflate", "gzip;q=0.5", "trailersx"] {
            let head = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\nTE: \(te)\r\n\r\n")
            #expect(!HTTP1Forwarding.requestForUpstream(head).headers.contains(name: "TE"), "TE: \(te)")
            let wire = String(decoding: HTTP1Forwarding.serializedRequestForUpstream(head).bytes, as: UTF8.self)
            #expect(!wire.contains("TE:"), "\(wire)")
        }
        let accepting = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\nTE: deflate, Trailers\r\n\r\n")
        #expect(HTTP1Forwarding.requestForUpstream(accepting).headers["TE"] == ["trailers"])
    }

    @Test("a fragment in an absolute-form target is not sent upstream: origin form has none (RFC 9112 §3.2.1)")
    func fragmentIsNotForwarded() throws {
        for (target, path) in [("http://example.test/a?b=1#frag", "/a?b=1"), ("http://example.test#top", "/"),
                               ("http://example.test/x#", "/x")] {
            let head = try parsedRequestHead("GET \(target) HTTP/1.1\r\nHost: example.test\r\n\r\n")
            let forwarded = HTTP1Forwarding.requestForUpstream(head)
            #expect(forwarded.target == .origin(path), "\(target)")
            let wire = String(decoding: HTTP1Forwarding.serializedRequestForUpstream(head).bytes, as: UTF8.self)
            #expect(wire.hasPrefix("GET \(path) HTTP/1.1\r\n"), "\(wire)")
        }
    }

    @Test("names fold case in ASCII letters only: a Connection option does not drop a field whose name differs in '^' and '~'")
    func connectionOptionsFoldOnlyLetters() throws {
        let head = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\nConnection: X-A^B\r\nx-a^b: 1\r\nX-A~B: 2\r\n\r\n")
        let kept = HTTP1Forwarding.removingHopByHop(head.headers)
        #expect(kept.fields.map(\.name) == ["Host", "X-A~B"])
        let wire = String(decoding: HTTP1Forwarding.serializedRequestForUpstream(head, via: nil).bytes, as: UTF8.self)
        #expect(wire.contains("\r\nX-A~B: 2\r\n") && !wire.contains("x-a^b"), "\(wire)")
        #expect(!head.headers.containsToken(name: "Connection", token: "x-a~b"))
    }
}
