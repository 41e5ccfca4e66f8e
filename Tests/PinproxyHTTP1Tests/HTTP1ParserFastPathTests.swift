import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1
import PinproxyTestSupport

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
