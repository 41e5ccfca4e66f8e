import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1
import PinproxyTestSupport

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
            var visited: [HTTPHeaders.Field] = []
            HTTP1Forwarding.forEachEndToEnd(headers) { visited.append($0) }
            #expect(visited == Reference.removingHopByHop(headers, keepingUpgrade: false).fields, "\(headers.fields)")
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
