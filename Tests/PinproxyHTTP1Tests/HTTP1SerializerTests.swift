import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1

@Suite("HTTP/1 serializing and forwarding")
struct HTTP1SerializerTests {
    private func requestHead(_ text: String) throws -> HTTP1RequestHead {
        let events = try #require(parseWhole(bytes(text)).value)
        guard case .request(let head)? = events.first else { throw HTTP1Error.malformed("no head in \(events)") }
        return head
    }

    private func responseHead(_ text: String, method: String = "GET") throws -> HTTP1ResponseHead {
        let events = try #require(parseWhole(bytes(text), mode: .response, methods: [method]).value)
        guard case .response(let head)? = events.first else { throw HTTP1Error.malformed("no head in \(events)") }
        return head
    }

    @Test func requestHeadRoundTrips() throws {
        let head = try requestHead("POST /p?q=1 HTTP/1.1\r\nHost: h.test\r\nx-lower: a\r\nX-Dup: 1\r\nX-Dup: 2\r\nContent-Length: 0\r\n\r\n")
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text == "POST /p?q=1 HTTP/1.1\r\nHost: h.test\r\nx-lower: a\r\nX-Dup: 1\r\nX-Dup: 2\r\nContent-Length: 0\r\n\r\n")
        #expect(try requestHead(text) == head)
    }

    @Test func responseHeadRoundTrips() throws {
        let head = try responseHead("HTTP/1.1 404 Not Here\r\nContent-Length: 0\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n")
        let text = String(decoding: head.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 404 Not Here\r\n"))
        #expect(try responseHead(text) == head)
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
        let head = try requestHead("GET http://example.test:8080/a?b=c HTTP/1.1\r\nHost: wrong.test\r\nProxy-Connection: keep-alive\r\n"
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
        let defaultPort = HTTP1Forwarding.requestForUpstream(try requestHead("GET http://example.test/ HTTP/1.1\r\nHost: x\r\n\r\n"), via: nil)
        #expect(defaultPort.headers["Host"] == ["example.test"])
        #expect(!defaultPort.headers.contains(name: "Via"))
    }

    @Test func hopByHopFieldsAndThoseNamedByConnectionAreRemoved() throws {
        let head = try requestHead("POST / HTTP/1.1\r\nHost: h\r\nConnection: close, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n"
                                   + "TE: trailers, deflate\r\nTrailer: Checksum\r\nUpgrade: h2c\r\nTransfer-Encoding: chunked\r\nX-Keep: yes\r\n\r\n")
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        let names = Set(forwarded.headers.map { $0.name.lowercased() })
        #expect(names == ["host", "x-keep", "te", "transfer-encoding", "via"])
        #expect(forwarded.headers["TE"] == ["trailers"])
        #expect(forwarded.headers["Transfer-Encoding"] == ["chunked"])
        #expect(forwarded.framing == .chunked)
    }

    @Test func upgradeIsRelayedWhenRequested() throws {
        let head = try requestHead("GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, X-Hop\r\nX-Hop: 1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n")
        let forwarded = HTTP1Forwarding.requestForUpstream(head)
        #expect(forwarded.headers["Upgrade"] == ["websocket"])
        #expect(forwarded.headers["Connection"] == ["upgrade"])
        #expect(!forwarded.headers.contains(name: "X-Hop"))
        #expect(forwarded.requestsUpgrade)

        let switching = try responseHead("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: a\r\n\r\n")
        let toClient = HTTP1Forwarding.responseForClient(switching, to: head)
        #expect(toClient.headers["Upgrade"] == ["websocket"])
        #expect(toClient.headers["Connection"] == ["upgrade"])
    }

    @Test func contentLengthIsNormalised() throws {
        let head = try requestHead("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n")
        #expect(HTTP1Forwarding.requestForUpstream(head).headers["Content-Length"] == ["3"])
    }

    @Test func responseReframingForHTTP11AndHTTP10Clients() throws {
        let modern = try requestHead("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        let old = try requestHead("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let untilClose = try responseHead("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        #expect(untilClose.framing == .untilClose)

        let chunkedForModern = HTTP1Forwarding.responseForClient(untilClose, to: modern)
        #expect(chunkedForModern.framing == .chunked)
        #expect(chunkedForModern.headers["Transfer-Encoding"] == ["chunked"])
        #expect(chunkedForModern.keepAlive)

        let closeForOld = HTTP1Forwarding.responseForClient(untilClose, to: old)
        #expect(closeForOld.framing == .untilClose)
        #expect(!closeForOld.headers.contains(name: "Transfer-Encoding"))
        #expect(!closeForOld.keepAlive)

        let sized = try responseHead("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n")
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

@Suite("HTTP/1 fast paths agree with the rules as written")
struct HTTP1FastPathAgreementTests {
    static let listValues: [String] = [
        "close", "Close", "CLOSE", " close ", ", , close ,", "keep-alive, close", "keep-alive,close", "closed", "clos", "x-close",
        "close;q=1", "\"close\"", "\"x,close\"", "\"a, close\"", "clo se", "\tclose\t", ",,,", "", " ", "upgrade", "Upgrade, HTTP2-Settings",
        "100-continue", "100-Continue, x", "trailers", "TE, trailers", "keep-alive", "Keep-Alive", "clos\u{e9}", "close,\u{301}x",
        "close\u{301}", "\u{212A}eep-alive", "UPGRADE\u{0}", "caf\u{e9}, close", "a\u{e9}, upgrade",
    ]
    static let tokens = ["close", "keep-alive", "upgrade", "100-continue", "trailers", "Close", "KEEP-ALIVE", "x", "", "caf\u{e9}", "\u{212A}"]

    @Test(arguments: listValues)
    func containsTokenMatchesTokensContains(_ value: String) {
        for name in ["Connection", "connection", "X-List"] {
            var headers: HTTPHeaders = ["Host": "h"]
            headers.add(name: name, value: value)
            headers.add(name: "Other", value: "close")
            for token in Self.tokens {
                let expected = headers.tokens(name: "Connection").contains(token.lowercased())
                #expect(headers.containsToken(name: "Connection", token: token) == expected, "\(value.debugDescription) \(token)")
                #expect(headers.containsToken(name: "CONNECTION", token: token) == expected)
            }
        }
        var two: HTTPHeaders = ["Connection": "x"]
        two.add(name: "Connection", value: value)
        for token in Self.tokens {
            #expect(two.containsToken(name: "Connection", token: token) == two.tokens(name: "Connection").contains(token.lowercased()))
        }
    }

    @Test(arguments: listValues)
    func headSemanticsMatchTheRulesAsWritten(_ value: String) {
        for version in [HTTPVersion.http1_0, .http1_1, HTTPVersion(major: 1, minor: 5)] {
            for fields in [["Connection": value], ["Connection": value, "Upgrade": value], ["Upgrade": value, "Connection": "upgrade"],
                           ["Expect": value], ["Connection": "Upgrade", "Upgrade": " , \t"], ["Connection": "upgrade", "Upgrade": value]] as [HTTPHeaders] {
                let request = HTTP1RequestHead(method: "GET", target: .origin("/"), version: version, headers: fields)
                #expect(request.keepAlive == Reference.keepAlive(version: version, headers: fields), "\(fields)")
                #expect(request.expectsContinue == Reference.expectsContinue(request), "\(fields)")
                #expect(request.upgradeProtocols == Reference.upgradeProtocols(fields), "\(fields)")
                #expect(request.requestsUpgrade == !Reference.upgradeProtocols(fields).isEmpty, "\(fields)")
                let response = HTTP1ResponseHead(version: version, status: 200, headers: fields, framing: .contentLength(0))
                #expect(response.keepAlive == Reference.keepAlive(version: version, headers: fields), "\(fields)")
            }
        }
    }

    /// Header lists that mix hop-by-hop fields, fields named by Connection,
    /// odd cases, duplicates and text the fast path leaves to the general rule.
    static func headerSets(seed: UInt64, count: Int) -> [HTTPHeaders] {
        var generator = SeededGenerator(state: seed)
        let names = ["Host", "Connection", "connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "PROXY-AUTHENTICATE",
                     "TE", "Trailer", "Transfer-Encoding", "Upgrade", "upgrade", "Content-Length", "Expect", "X-Secret", "x-secret",
                     "close", "Close", "Accept", "Date", "K\u{212A}", "Caf\u{e9}", "Bad Name", "X-Cr"]
        let values = ["1", "close", "X-Secret", "keep-alive, X-Secret", "Upgrade", "upgrade, close", "Close, x-secret ,", "TE, trailers",
                      "Content-Length", "host", "\u{212A}eep-alive", "caf\u{e9}", "K\u{212A}", "a\r\nb", ", ,", "Accept, Date, Host"]
        return (0..<count).map { _ in
            var headers = HTTPHeaders()
            for _ in 0..<Int.random(in: 0...10, using: &generator) {
                headers.add(name: names.randomElement(using: &generator)!, value: values.randomElement(using: &generator)!)
            }
            return headers
        }
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func removingHopByHopMatchesTheRuleAsWritten(_ seed: UInt64) {
        for headers in Self.headerSets(seed: seed, count: 400) {
            for keepingUpgrade in [false, true] {
                let fast = HTTP1Forwarding.removingHopByHop(headers, keepingUpgrade: keepingUpgrade)
                #expect(fast == Reference.removingHopByHop(headers, keepingUpgrade: keepingUpgrade), "\(headers.fields)")
                #expect(fast.isWireSafe == fast.fields.allSatisfy(HTTPHeaders.isWireSafe))
            }
        }
    }

    @Test func parsedHeadsTakeTheFastPathAndAgreeToo() throws {
        let text = "GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Secret, Upgrade, close\r\nX-Secret: 1\r\nclose: 2\r\n"
            + "Upgrade: websocket\r\nKeep-Alive: 5\r\nAccept: */*\r\nTE: trailers\r\nX-secret: 3\r\n\r\n"
        let events = try #require(parseWhole(bytes(text)).value)
        guard case .request(let head) = events.first else { Issue.record("\(events)"); return }
        #expect(head.headers.isWireSafe && head.headers.isIndexed)
        for keepingUpgrade in [false, true] {
            let fast = HTTP1Forwarding.removingHopByHop(head.headers, keepingUpgrade: keepingUpgrade)
            #expect(fast == Reference.removingHopByHop(head.headers, keepingUpgrade: keepingUpgrade))
            #expect(fast.fields.map(\.name) == (keepingUpgrade ? ["Host", "Upgrade", "Accept"] : ["Host", "Accept"]))
        }
    }

    @Test(arguments: [21, 22] as [UInt64])
    func fieldIndexFollowsEveryChange(_ seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        let names = ["Host", "host", "Content-Length", "CONTENT-LENGTH", "Connection", "Upgrade", "TE", "Expect", "Keep-Alive",
                     "Trailer", "Transfer-Encoding", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "X-Other", "Hos", "Hosts"]
        var headers = HTTPHeaders()
        for _ in 0..<2000 {
            let name = names.randomElement(using: &generator)!
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5: headers.add(name: name, value: "v")
            case 5, 6: headers.replaceOrAdd(name: name, value: "r")
            case 7: headers.remove(name: name)
            case 8: headers.setContentLength(Int.random(in: 0...20, using: &generator))
            default: if headers.count > 12 { headers = HTTPHeaders(Array(headers.fields.prefix(3)).map { ($0.name, $0.value) }) }
            }
            for probe in names {
                let expected = Reference.firstIndex(headers, probe)
                #expect(headers.firstIndex(name: probe) == expected, "\(probe) in \(headers.fields.map(\.name))")
                if let expected {
                    #expect(headers.firstIndex(name: probe, from: expected + 1) == Reference.firstIndex(headers, probe, from: expected + 1))
                }
            }
        }
    }

    @Test func largeListsAreFoundWithoutTheIndex() {
        var headers = HTTPHeaders()
        for number in 0..<300 { headers.add(name: "X-\(number)", value: "v") }
        headers.add(name: "Connection", value: "close")
        #expect(!headers.isIndexed)
        #expect(headers.firstIndex(name: "connection") == 300)
        #expect(headers.containsToken(name: "Connection", token: "close"))
        #expect(HTTP1Forwarding.removingHopByHop(headers).count == 300)
    }

    @Test func setContentLengthIsReplaceOrAdd() {
        for (fields, length) in [([("Content-Length", "5")], 5), ([("content-length", "5")], 6), ([("Content-Length", "05")], 5),
                                 ([("Content-Length", "5"), ("Content-Length", "5")], 5), ([("X", "1")], 0), ([], 1234567)] as [([(String, String)], Int)] {
            var fast = HTTPHeaders(fields)
            var written = HTTPHeaders(fields)
            fast.setContentLength(length)
            written.replaceOrAdd(name: "Content-Length", value: String(length))
            #expect(fast == written)
        }
    }

    static let heads: [String] = [
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 15:26:08 GMT\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n",
        "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\nX-Latin: caf\u{e9}\r\n\r\n",
        "HTTP/1.1 204\r\nX-Tab: a\tb\r\n\r\n",
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    ]

    @Test(arguments: heads)
    func serializedHeadsMatchTheWriterAsWritten(_ text: String) throws {
        let events = try #require(parseWhole(bytes(text), mode: .response, methods: ["GET"]).value)
        guard case .response(let head) = events.first else { Issue.record("\(events)"); return }
        #expect(head.serialized() == Reference.serialized(head))
        let request = HTTP1RequestHead(method: "GET", target: .origin("/"), version: head.version, headers: ["Host": "h"])
        let forwarded = HTTP1Forwarding.responseForClient(head, to: request)
        #expect(forwarded.serialized() == Reference.serialized(forwarded))
        let upstream = HTTP1Forwarding.requestForUpstream(request, via: "proxy\r\nX: y")
        #expect(upstream.serialized() == Reference.serialized(upstream))
        #expect(!upstream.headers.isWireSafe)
    }

    @Test func unsafeFieldsAreCleanedWhicheverWayTheyArrive() {
        var headers: HTTPHeaders = ["A": "1"]
        #expect(headers.isWireSafe)
        headers.replaceOrAdd(name: "A", value: "x\r\ny")
        #expect(!headers.isWireSafe)
        headers = HTTPHeaders([("Bad Name", "1"), ("Ok", "2")])
        #expect(!headers.isWireSafe)
        for status in [200, 7, 1000, -5] {
            let head = HTTP1ResponseHead(version: HTTPVersion(major: 12, minor: 345), status: status, reason: "Nul\0Here", headers: headers)
            #expect(head.serialized() == Reference.serialized(head))
        }
        let request = HTTP1RequestHead(method: "G\nET", target: .origin("/\r\n"), version: HTTPVersion(major: 0, minor: 9), headers: headers)
        #expect(request.serialized() == Reference.serialized(request))
    }

    @Test func chunkSizeLinesAreStringRadix16() {
        for size in [0, 1, 9, 10, 15, 16, 255, 256, 4095, 65536, 1 << 40, Int.max, -1, -4096] {
            #expect(HTTP1ChunkedEncoder.chunkHeader(size: size) == Array((String(size, radix: 16) + "\r\n").utf8))
        }
        #expect(HTTP1ChunkedEncoder.chunk(bytes("abc")) == bytes("3\r\nabc\r\n"))
        #expect(HTTP1ChunkedEncoder.end(trailers: ["A": "1"]) == bytes("0\r\nA: 1\r\n\r\n"))
    }

    @Test func byteHelpersMatchTheirDefinitions() {
        for byte in UInt8.min...UInt8.max {
            #expect(HTTP1Syntax.isTokenByte(byte) == Reference.isTokenByte(byte), "\(byte)")
        }
        var generator = SeededGenerator(state: 99)
        for length in 0..<40 {
            for _ in 0..<50 {
                var buffer = (0..<length).map { _ in UInt8.random(in: 0x20...0x7e, using: &generator) }
                if length > 0, Bool.random(using: &generator) {
                    buffer[Int.random(in: 0..<length, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                buffer.withUnsafeBufferPointer { bytes in
                    #expect(HTTP1Bytes.isPrintableASCII(bytes) == buffer.allSatisfy { (0x20...0x7e).contains($0) })
                    #expect(HTTP1Bytes.isASCII(bytes) == buffer.allSatisfy { $0 < 0x80 })
                    #expect(HTTP1Bytes.isToken(bytes) == (!buffer.isEmpty && buffer.allSatisfy(Reference.isTokenByte)))
                }
            }
        }
        for (text, value, expected) in [("0", 0, true), ("00", 0, false), ("1024", 1024, true), ("01024", 1024, false), ("024", 1024, false),
                                        ("", 0, false), ("-1", -1, false), ("9223372036854775807", Int.max, true)] {
            #expect(Array(text.utf8).withUnsafeBufferPointer { HTTP1Bytes.isDecimal($0, of: value) } == expected, "\(text)")
        }
        #expect(Set(HopByHop.fieldNames.map { "\($0.lowercased)" }) == HTTP1Forwarding.hopByHopFields)
        for name in HTTPFieldIndex.Name.allCases {
            #expect(Array("\(name.lowercased)".utf8).withUnsafeBufferPointer(HTTPFieldIndex.Name.matching) == name)
            #expect(Array("\(name.lowercased)".uppercased().utf8).withUnsafeBufferPointer(HTTPFieldIndex.Name.matching) == name)
        }
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
