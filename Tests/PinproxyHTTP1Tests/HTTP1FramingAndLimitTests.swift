import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1
import PinproxyTestSupport

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

    /// A SOCKS client pointed at the HTTP proxy port is told what it met, whole or byte by byte;
    /// the same bytes later in a line are only bytes.
    @Test func aSOCKSGreetingIsNamed() throws {
        for (greeting, version) in [([UInt8]([0x05, 0x01, 0x00]), 5), ([0x04, 0x01, 0x01, 0xbb, 0x7f, 0x00, 0x00, 0x01, 0x00], 4)] {
            for error in [parseWhole(greeting).error, parseBytewise(greeting).error] {
                #expect(error?.status == 400 && error?.reason.contains("it looks like a SOCKS\(version) greeting; pinproxy is an HTTP proxy") == true,
                        "\(String(describing: error))")
            }
        }
        let later = try #require(parseWhole(Array("GET /\u{5} HTTP/1.1\r\n\r\n".utf8)).error)
        #expect(later.reason.contains("contains byte 0x05") && !later.reason.contains("SOCKS"), "\(later.reason)")
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
