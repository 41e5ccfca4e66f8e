import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1
import PinproxyTestSupport

@Suite("HTTP/1 serializing and forwarding")
struct HTTP1SerializerTests {
    @Test func requestHeadRoundTrips() throws {
        let head = try parsedRequestHead("POST /p?q=1 HTTP/1.1\r\nHost: h.test\r\nx-lower: a\r\nX-Dup: 1\r\nX-Dup: 2\r\nContent-Length: 0\r\n\r\n")
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text == "POST /p?q=1 HTTP/1.1\r\nHost: h.test\r\nx-lower: a\r\nX-Dup: 1\r\nX-Dup: 2\r\nContent-Length: 0\r\n\r\n")
        #expect(try parsedRequestHead(text) == head)
    }

    @Test func responseHeadRoundTrips() throws {
        let head = try parsedResponseHead("HTTP/1.1 404 Not Here\r\nContent-Length: 0\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n")
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 404 Not Here\r\n"))
        #expect(try parsedResponseHead(text) == head)
    }

    @Test func serializationCannotBeSplitByInjectedLineBreaks() throws {
        var headers = HTTPHeaders()
        headers.add(name: "X-Evil", value: "a\r\nInjected: yes")
        headers.add(name: "Bad Name", value: "dropped")
        let head = HTTP1RequestHead(method: "GET", target: .origin("/x\r\nY: z"), headers: headers)
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(!text.contains("\r\nInjected"))
        #expect(!text.contains("Bad Name"))
        #expect(text.components(separatedBy: "\r\n").count == 4) // request line, one field, empty line, end
    }

    @Test func absoluteFormBecomesOriginFormWithHost() throws {
        let head = try parsedRequestHead("GET http://example.test:8080/a?b=c HTTP/1.1\r\nHost: wrong.test\r\nProxy-Connection: keep-alive\r\n"
                                   + "Proxy-Authorization: Basic dTpw\r\nAccept: */*\r\n\r\n")
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        #expect(forwarded.target == .origin("/a?b=c"))
        #expect(forwarded.headers["Host"] == ["example.test:8080"])
        #expect(!forwarded.headers.contains(name: "Proxy-Connection"))
        #expect(!forwarded.headers.contains(name: "Proxy-Authorization"))
        #expect(forwarded.headers.first(name: "Accept") == "*/*")
        #expect(forwarded.headers.first(name: "Via") == "1.1 pinproxy")
        let text = String(decoding: forwarded.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("GET /a?b=c HTTP/1.1\r\nHost: example.test:8080\r\n"))
        let defaultPort = HTTP1Forwarding.requestForUpstream(try parsedRequestHead("GET http://example.test/ HTTP/1.1\r\nHost: x\r\n\r\n"), via: nil)
        #expect(defaultPort.headers["Host"] == ["example.test"])
        #expect(!defaultPort.headers.contains(name: "Via"))
    }

    @Test func hopByHopFieldsAndThoseNamedByConnectionAreRemoved() throws {
        let head = try parsedRequestHead("POST / HTTP/1.1\r\nHost: h\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n"
                                   + "TE: trailers, deflate\r\nTrailer: Checksum\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\nX-Keep: yes\r\n\r\n")
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        let names = Set(forwarded.headers.map { $0.name.lowercased() })
        #expect(names == ["host", "x-keep", "te", "transfer-encoding", "via"])
        #expect(forwarded.headers["TE"] == ["trailers"])
        #expect(forwarded.headers["Transfer-Encoding"] == ["chunked"])
        #expect(forwarded.framing == .chunked)
    }

    @Test func upgradeIsRelayedWhenRequested() throws {
        let head = try parsedRequestHead("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, X-Hop\r\nX-Hop: 1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n")
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        #expect(forwarded.headers["Upgrade"] == ["websocket"])
        #expect(forwarded.headers["Connection"] == ["upgrade"])
        #expect(!forwarded.headers.contains(name: "X-Hop"))
        #expect(forwarded.requestsUpgrade)

        let switching = try parsedResponseHead("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: a\r\n\r\n")
        let toClient = HTTP1Forwarding.responseForClient(switching, to: head)
        #expect(toClient.headers["Upgrade"] == ["websocket"])
        #expect(toClient.headers["Connection"] == ["upgrade"])
    }

    @Test func contentLengthIsNormalised() throws {
        let head = try parsedRequestHead("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n")
        #expect(HTTP1Forwarding.requestForUpstream(head).headers["Content-Length"] == ["3"])
    }

    @Test func responseReframingForHTTP11AndHTTP10Clients() throws {
        let modern = try parsedRequestHead("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        let old = try parsedRequestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let untilClose = try parsedResponseHead("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        #expect(untilClose.framing == .untilClose)

        let chunkedForModern = HTTP1Forwarding.responseForClient(untilClose, to: modern)
        #expect(chunkedForModern.framing == .chunked)
        #expect(chunkedForModern.headers["Transfer-Encoding"] == ["chunked"])
        #expect(chunkedForModern.keepAlive)

        let closeForOld = HTTP1Forwarding.responseForClient(untilClose, to: old)
        #expect(closeForOld.framing == .untilClose)
        #expect(!closeForOld.headers.contains(name: "Transfer-Encoding"))
        #expect(!closeForOld.keepAlive)

        let sized = try parsedResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n")
        let sizedForOld = HTTP1Forwarding.responseForClient(sized, to: old)
        #expect(sizedForOld.headers["Connection"] == ["keep-alive"])
        #expect(sizedForOld.keepAlive)
        let closing = HTTP1Forwarding.responseForClient(sized, to: modern, closeConnection: true)
        #expect(closing.headers["Connection"] == ["close"])
        #expect(!closing.keepAlive)
    }

    @Test func chunkedEncoderOutputParsesBackWithTrailers() throws {
        var wire = bytes("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        let pieces = ["hello", "", " ", String(repeating: "x", count: 300)]
        for piece in pieces { wire += HTTP1ChunkedEncoder.chunk(bytes(piece)) }
        wire += HTTP1ChunkedEncoder.chunkHeader(size: 3) + bytes("abc") + HTTP1ChunkedEncoder.chunkTrailer
        wire += HTTP1ChunkedEncoder.end(trailers: ["Checksum": "42"])
        let events = try #require(parseWhole(wire).value)
        #expect(events.count == 3)
        #expect(events[1] == .body(bytes(pieces.joined() + "abc")))
        #expect(events[2] == .end(["Checksum": "42"]))
        #expect(HTTP1ChunkedEncoder.chunk([UInt8]()).isEmpty)
        #expect(HTTP1ChunkedEncoder.chunkHeader(size: 255) == bytes("ff\r\n"))
    }

    @Test(arguments: [(400, "the request line is not HTTP"), (414, "too long"), (431, "header X is too large"), (502, "upstream certificate: unknown CA")])
    func cannedErrorResponses(_ status: Int, _ reason: String) throws {
        let wire = HTTP1Response.error(status: status, reason: reason)
        let events = try #require(parseWhole(wire, mode: .response, methods: ["GET"]).value)
        guard case .response(let head) = events.first, case .body(let body) = events[1] else { Issue.record("\(events)"); return }
        #expect(head.status == status)
        #expect(head.reason == HTTP1Response.reasonPhrase(for: status))
        #expect(head.headers["Connection"] == ["close"])
        #expect(head.headers.first(name: "Content-Type")?.hasPrefix("text/plain") == true)
        #expect(!head.keepAlive)
        #expect(String(decoding: body, as: UTF8.self).contains(reason))
        #expect(events.last == .end(HTTPHeaders()))
    }

    @Test func errorResponseForAParseError() throws {
        let error = try #require(parseError("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 9000) + "\r\n\r\n"))
        let text = String(decoding: HTTP1Response.error(error), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
        #expect(text.contains(error.reason))
        let proxyAuth = String(decoding: HTTP1Response.error(status: 407, reason: "credentials needed",
                                                             headers: ["Proxy-Authenticate": "Basic realm=\"pinproxy\""]), as: UTF8.self)
        #expect(proxyAuth.contains("Proxy-Authenticate: Basic realm=\"pinproxy\"\r\n"))
    }

    @Test func trailersAreFilteredBeforeRelaying() {
        let trailers: HTTPHeaders = ["Checksum": "1", "Content-Length": "5", "Connection": "X-Hop", "X-Hop": "1",
                                     "Transfer-Encoding": "chunked", "Grpc-Status": "0", "Host": "evil.test"]
        let kept = HTTP1Forwarding.forwardableTrailers(trailers)
        #expect(kept.fields.map(\.name) == ["Checksum", "Grpc-Status"])
    }

    @Test func headersLookupAndEditing() {
        var headers: HTTPHeaders = ["A": "1", "b": "2", "a": "3"]
        #expect(headers["a"] == ["1", "3"])
        headers.replaceOrAdd(name: "A", value: "x")
        #expect(headers.fields.map(\.name) == ["A", "b"])
        #expect(headers["a"] == ["x"])
        headers.remove(name: "B")
        #expect(headers.count == 1)
        headers.add(name: "Connection", value: " Keep-Alive ,, Upgrade ")
        #expect(headers.tokens(name: "connection") == ["keep-alive", "upgrade"])
    }
}

@Suite("HTTP/1 forwarded heads written straight to bytes")
struct HTTP1ForwardedHeadTests {
    /// Received heads with every field the forwarding rules touch, in odd
    /// numbers and cases, next to ordinary ones.
    static func receivedFields(seed: UInt64, count: Int) -> [HTTPHeaders] {
        var generator = SeededGenerator(state: seed)
        let pool: [(String, [String])] = [
            ("Host", ["a.test", "b.test:8080"]), ("host", ["c.test"]), ("Content-Length", ["0", "5", "05", "1024"]),
            ("content-length", ["5"]), ("Connection", ["keep-alive", "close", "Upgrade", "upgrade, X-Hop", "close, Host", "Content-Length"]),
            ("Upgrade", ["websocket", " , "]), ("TE", ["trailers", "deflate"]), ("Transfer-Encoding", ["chunked"]),
            ("Keep-Alive", ["timeout=5"]), ("X-Hop", ["1"]), ("Via", ["1.0 other"]), ("Accept", ["*/*"]),
            ("Date", ["Sun, 22 Nov 2026 15:26:08 GMT"]), ("Proxy-Authorization", ["Basic dTpw"]), ("Expect", ["100-continue"]),
        ]
        return (0..<count).map { _ in
            var headers = HTTPHeaders()
            for _ in 0..<Int.random(in: 0...9, using: &generator) {
                let (name, values) = pool.randomElement(using: &generator)!
                headers.add(name: name, value: values.randomElement(using: &generator)!)
            }
            return headers
        }
    }

    static let framings: [HTTP1BodyFraming] = [.none, .contentLength(0), .contentLength(5), .contentLength(1024), .chunked, .untilClose]
    static let vias: [String?] = [nil, HTTP1Forwarding.defaultVia, "other", "bad\r\nX: y"]

    @Test(arguments: [31, 32, 33] as [UInt64])
    func requestsMatchBuildingThenSerializing(_ seed: UInt64) throws {
        var generator = SeededGenerator(state: seed)
        let targets: [HTTP1RequestTarget] = [
            .origin("/a?b"),
            .absolute(HTTP1AbsoluteURL(scheme: "http", host: try HostName(validating: "example.test"), port: 8080, path: "/p")),
        ]
        for fields in Self.receivedFields(seed: seed, count: 300) {
            let head = HTTP1RequestHead(
                method: ["GET", "POST", "CONNECT"].randomElement(using: &generator)!, target: targets.randomElement(using: &generator)!,
                version: Bool.random(using: &generator) ? .http1_1 : .http1_0, headers: fields,
                framing: Self.framings.randomElement(using: &generator)!)
            let via = Self.vias.randomElement(using: &generator)!
            for host in [nil, "origin.test:443", "evil\r\n"] as [String?] {
                var built = HTTP1Forwarding.requestForUpstream(head, via: via)
                if let host { built.headers.replaceOrAdd(name: "Host", value: host) }
                let direct = HTTP1Forwarding.serializedRequestForUpstream(head, via: via, host: host)
                #expect(direct.bytes == built.serialized(), "\(fields.fields) via \(String(describing: via)) host \(String(describing: host))")
                #expect(direct.framing == built.framing)
                #expect(direct.keepAlive == head.keepAlive)
            }
        }
    }

    @Test(arguments: [41, 42, 43] as [UInt64])
    func responsesMatchBuildingThenSerializing(_ seed: UInt64) throws {
        var generator = SeededGenerator(state: seed)
        for fields in Self.receivedFields(seed: seed, count: 300) {
            let head = HTTP1ResponseHead(
                version: Bool.random(using: &generator) ? .http1_1 : .http1_0, status: [200, 101, 204, 404].randomElement(using: &generator)!,
                reason: ["OK", "", "Odd\r\nReason"].randomElement(using: &generator)!, headers: fields,
                framing: Self.framings.randomElement(using: &generator)!)
            var requestFields: HTTPHeaders = ["Host": "h"]
            if Bool.random(using: &generator) { requestFields.add(name: "Connection", value: ["close", "keep-alive"].randomElement(using: &generator)!) }
            let request = HTTP1RequestHead(method: "GET", target: .origin("/"), version: Bool.random(using: &generator) ? .http1_1 : .http1_0,
                                           headers: requestFields)
            let via = Self.vias.randomElement(using: &generator)!
            for closeConnection in [false, true] {
                let built = HTTP1Forwarding.responseForClient(head, to: request, closeConnection: closeConnection, via: via)
                let direct = HTTP1Forwarding.serializedResponseForClient(head, to: request, closeConnection: closeConnection, via: via)
                #expect(direct.bytes == built.serialized(), "\(fields.fields) via \(String(describing: via))")
                #expect(direct.framing == built.framing)
                #expect(direct.keepAlive == built.keepAlive)
            }
        }
    }

    @Test func headsTheFastPathLeavesAloneStillMatch() throws {
        // Not wire-safe (a name with a space, a value with CR LF), and a non-ASCII Connection value.
        let odd = HTTPHeaders([("Bad Name", "1"), ("X", "a\r\nb"), ("Content-Length", "3"), ("Connection", "caf\u{e9}, close")])
        let request = HTTP1RequestHead(method: "PUT", target: .origin("/"), headers: odd, framing: .contentLength(3))
        let built = HTTP1Forwarding.requestForUpstream(request)
        #expect(HTTP1Forwarding.serializedRequestForUpstream(request).bytes == built.serialized())
        let response = HTTP1ResponseHead(status: 200, headers: odd, framing: .contentLength(3))
        let client = HTTP1RequestHead(method: "GET", target: .origin("/"), headers: ["Host": "h"])
        let direct = HTTP1Forwarding.serializedResponseForClient(response, to: client)
        #expect(direct.bytes == HTTP1Forwarding.responseForClient(response, to: client).serialized())
    }
}
