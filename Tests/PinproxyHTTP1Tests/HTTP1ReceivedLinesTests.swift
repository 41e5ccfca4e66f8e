import Foundation
import PinproxyBase
import Testing
@testable import PinproxyHTTP1
import PinproxyTestSupport

/// Forwarded heads are written from the field lines as received when they
/// spell the fields exactly (``HTTPHeaders/wireLines``). These tests hold
/// that path to the field-by-field one: byte for byte the same heads, no
/// dropped field copied along with its neighbours, no line kept after the
/// fields changed.
@Suite("HTTP/1 heads written from the received lines")
struct HTTP1ReceivedLinesTests {
    /// The fields of `headers` in a list that never was received.
    private func built(_ headers: HTTPHeaders) -> HTTPHeaders { HTTPHeaders(headers.fields.map { ($0.name, $0.value) }) }

    private func requestHead(_ text: String) throws -> HTTP1RequestHead {
        var parser = HTTP1Parser(mode: .request)
        guard case .requestHead(let head)? = try parser.feed(bytes(text)).first else { throw HTTP1Error.malformed("no head") }
        return head
    }

    private func responseHead(_ text: String) throws -> HTTP1ResponseHead {
        var parser = HTTP1Parser(mode: .response)
        parser.expectResponse(toMethod: "GET")
        guard case .responseHead(let head)? = try parser.feed(bytes(text)).first else { throw HTTP1Error.malformed("no head") }
        return head
    }

    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func parsedHeadsCarryTheirLinesUntilTheyChange() throws {
        let head = try requestHead("GET / HTTP/1.1\r\nHost: client.test\r\nX-Old: 1\r\nAccept: */*\r\n\r\n")
        #expect(head.headers.wireLines == bytes("Host: client.test\r\nX-Old: 1\r\nAccept: */*\r\n"))
        var changes: [(String, (inout HTTPHeaders) -> Void, String?, String?)] = [
            ("replace", { $0.replaceOrAdd(name: "X-Old", value: "2") }, "X-Old: 2\r\n", "X-Old: 1"),
            ("remove", { $0.remove(name: "X-Old") }, nil, "X-Old"),
            ("add", { $0.add(name: "X-New", value: "n") }, "X-New: n\r\n", nil),
            ("add wire-safe", { $0.addWireSafe(name: "X-New", value: "n") }, "X-New: n\r\n", nil),
            ("content length", { $0.setContentLength(7) }, "Content-Length: 7\r\n", nil),
        ]
        changes.append(("host", { $0.replaceOrAdd(name: "Host", value: "origin.test") }, "Host: origin.test\r\n", "client.test"))
        for (label, change, present, absent) in changes {
            var changed = head
            change(&changed.headers)
            #expect(changed.headers.wireLines == nil, "\(label)")
            let wire = text(changed.serialized())
            #expect(changed.serialized() == Reference.serialized(changed), "\(label)")
            if let present { #expect(wire.contains(present), "\(label): \(wire)") }
            if let absent { #expect(!wire.contains(absent), "\(label): \(wire)") }
            let forwarded = text(HTTP1Forwarding.serializedRequestForUpstream(changed, via: nil).bytes)
            if let present { #expect(forwarded.contains(present), "\(label): \(forwarded)") }
            if let absent { #expect(!forwarded.contains(absent), "\(label): \(forwarded)") }
        }
        // The received head itself is untouched by changes to copies.
        #expect(head.headers.wireLines != nil)
    }

    @Test func hopByHopFieldsBetweenKeptOnesAreNotCopiedAlong() throws {
        let head = try requestHead("POST /p HTTP/1.1\r\nHost: client.test\r\nConnection: keep-alive, X-Secret\r\nX-Keep: 1\r\n"
                                   + "X-Secret: s\r\nKeep-Alive: timeout=5\r\nProxy-Authorization: Basic dTpw\r\nContent-Length: 3\r\n"
                                   + "TE: trailers, deflate\r\nX-Last: z\r\n\r\n")
        #expect(head.headers.wireLines != nil)
        let forwarded = text(HTTP1Forwarding.serializedRequestForUpstream(head, via: "pinproxy", host: "origin.test:8443").bytes)
        #expect(forwarded == "POST /p HTTP/1.1\r\nHost: origin.test:8443\r\nX-Keep: 1\r\nContent-Length: 3\r\nX-Last: z\r\n"
                + "TE: trailers\r\nVia: 1.1 pinproxy\r\n\r\n")

        let response = try responseHead("HTTP/1.1 200 OK\r\nServer: s\r\nConnection: keep-alive\r\nContent-Length: 5\r\n"
                                        + "Content-Length: 5\r\nX-Hop: h\r\nUpgrade: h2c\r\nETag: \"e\"\r\n\r\n")
        #expect(response.headers.wireLines != nil)
        let closing = HTTP1RequestHead(method: "GET", target: .origin("/"), version: .http1_1, headers: ["Host": "h", "Connection": "close"])
        let forClient = text(HTTP1Forwarding.serializedResponseForClient(response, to: closing, via: nil).bytes)
        #expect(forClient == "HTTP/1.1 200 OK\r\nServer: s\r\nContent-Length: 5\r\nX-Hop: h\r\nETag: \"e\"\r\nConnection: close\r\n\r\n")
    }

    @Test func linesThatDoNotSpellTheirFieldsAreNotKept() throws {
        for line in ["X-A:1", "X-A:  1", "X-A: 1 ", "X-A:\t1", "X-A: 1\t"] {
            let head = try requestHead("GET / HTTP/1.1\r\nHost: h\r\n\(line)\r\nX-B: 2\r\n\r\n")
            #expect(head.headers.wireLines == nil, "\(line.debugDescription)")
            #expect(text(head.serialized()) == "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nX-B: 2\r\n\r\n")
        }
        let bareLF = try requestHead("GET / HTTP/1.1\r\nHost: h\nX-B: 2\r\n\r\n")
        #expect(bareLF.headers.wireLines == nil)
        #expect(text(bareLF.serialized()) == "GET / HTTP/1.1\r\nHost: h\r\nX-B: 2\r\n\r\n")
        // A byte that is not UTF-8 is decoded to U+FFFD: the lines no longer spell the field.
        var invalid = bytes("GET / HTTP/1.1\r\nHost: h\r\nX-Latin: caf")
        invalid += [0xe9] + bytes("\r\n\r\n")
        var parser = HTTP1Parser(mode: .request)
        guard case .requestHead(let latin)? = try parser.feed(invalid).first else { Issue.record("no head"); return }
        #expect(latin.headers.wireLines == nil)
        #expect(latin.serialized() == Reference.serialized(latin))
        #expect(!latin.serialized().contains(0xe9))
    }

    @Test func highestPositionIsTheLastInserted() {
        var positions = HTTPFieldIndex.Positions()
        #expect(positions.highest == -1)
        for position in [0, 3, 63, 64, 100, 128, 191, 192, 255] {
            positions.insert(position)
            #expect(positions.highest == position)
            var alone = HTTPFieldIndex.Positions()
            alone.insert(position)
            #expect(alone.highest == position)
        }
    }

    /// One field line, spelled canonically most of the time, else with
    /// whitespace, a bare LF, or bytes the decoding changes.
    private static func spell(_ name: String, _ value: String, using generator: inout SeededGenerator) -> [UInt8] {
        switch Int.random(in: 0..<12, using: &generator) {
        case 0: return bytes("\(name):\(value)\r\n")
        case 1: return bytes("\(name):  \(value)\t\r\n")
        case 2: return bytes("\(name): \(value)\n")
        case 3: return bytes("\(name): \(value)") + [0xc3] + bytes("\r\n")
        default: return bytes("\(name): \(value)\r\n")
        }
    }

    static let pool: [(String, [String])] = [
        ("Content-Length", ["0", "5", "05"]), ("Connection", ["keep-alive", "close", "upgrade, X-Hop", "close, Host", "X-Hop, Date"]),
        ("Upgrade", ["websocket"]), ("TE", ["trailers", "deflate"]), ("Transfer-Encoding", ["chunked"]),
        ("Keep-Alive", ["timeout=5"]), ("X-Hop", ["1"]), ("Via", ["1.0 other"]), ("Accept", ["*/*"]),
        ("Date", ["Sun, 22 Nov 2026 15:26:08 GMT", "Sun, 22 Nov 2026 15:26:09 GMT"]), ("Proxy-Authorization", ["Basic dTpw"]),
        ("Server", ["nginx", "caf\u{e9}"]), ("ETag", ["\"a\"", "\"b\""]), ("Expect", ["100-continue"]),
    ]

    /// Field lists where each one often repeats the one before, whole, with
    /// one value changed or with its last field gone, as keep-alive
    /// connections send them (the parser's memory of heads).
    private static func fieldLists(seed: UInt64, count: Int) -> [[(String, String)]] {
        var generator = SeededGenerator(state: seed)
        var lists: [[(String, String)]] = []
        var last: [(String, String)] = []
        for _ in 0..<count {
            var fields = last
            switch Int.random(in: 0..<6, using: &generator) {
            case 0, 1: break
            case 2 where !fields.isEmpty:
                let position = Int.random(in: 0..<fields.count, using: &generator)
                let values = pool.first { $0.0 == fields[position].0 }?.1 ?? ["v"]
                fields[position].1 = values.randomElement(using: &generator)!
            case 3 where !fields.isEmpty: fields.removeLast()
            default:
                fields = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                    let (name, values) = pool.randomElement(using: &generator)!
                    return (name, values.randomElement(using: &generator)!)
                }
            }
            lists.append(fields)
            last = fields
        }
        return lists
    }

    /// Requests on one connection: each parsed head, forwarded, matches the
    /// same fields built in memory and forwarded the long way.
    @Test(arguments: [51, 52, 53] as [UInt64])
    func forwardedRequestsMatchTheLongWay(_ seed: UInt64) throws {
        var generator = SeededGenerator(state: seed &+ 1000)
        var parser = HTTP1Parser(mode: .request)
        var fastPath = 0
        var checked = 0
        for fields in Self.fieldLists(seed: seed, count: 400) {
            var text = bytes("GET /a?b HTTP/1.1\r\nHost: client.test\r\n")
            for (name, value) in fields { text += Self.spell(name, value, using: &generator) }
            text += bytes("\r\n")
            let events: [HTTP1Event]
            do { events = try parser.feed(text) } catch {
                parser = HTTP1Parser(mode: .request)
                continue
            }
            guard case .requestHead(let head)? = events.first else { Issue.record("no head: \(events)"); return }
            #expect(head.headers.wireLinesMatchFields)
            if head.headers.wireLines != nil { fastPath += 1 }
            let longWay = HTTP1RequestHead(method: head.method, target: head.target, version: head.version,
                                           headers: built(head.headers), framing: head.framing)
            #expect(head.serialized() == Reference.serialized(longWay))
            for via in [nil, "pinproxy"] as [String?] {
                for host in [nil, "origin.test:443"] as [String?] {
                    var expected = HTTP1Forwarding.requestForUpstream(longWay, via: via)
                    if let host { expected.headers.replaceOrAdd(name: "Host", value: host) }
                    let direct = HTTP1Forwarding.serializedRequestForUpstream(head, via: via, host: host)
                    #expect(direct.bytes == Reference.serialized(expected), "\(fields) via \(String(describing: via)) host \(String(describing: host))")
                    #expect(direct.framing == expected.framing)
                }
            }
            checked += 1
            // The body, so that the next head starts where the parser expects one.
            var rest: [UInt8] = []
            switch head.framing {
            case .contentLength(let length): rest = Array(repeating: 0x78, count: length)
            case .chunked: rest = bytes("0\r\n\r\n")
            case .none, .untilClose: break
            }
            if head.requestsUpgrade || !rest.isEmpty && (try? parser.feed(rest)) == nil { parser = HTTP1Parser(mode: .request) }
        }
        #expect(checked > 200 && fastPath > 50, "\(checked) heads checked, \(fastPath) with their lines")
    }

    /// Responses on one connection, likewise, for clients of each kind.
    @Test(arguments: [61, 62, 63] as [UInt64])
    func forwardedResponsesMatchTheLongWay(_ seed: UInt64) throws {
        var generator = SeededGenerator(state: seed &+ 1000)
        var parser = HTTP1Parser(mode: .response)
        var fastPath = 0
        var checked = 0
        let clients = [
            HTTP1RequestHead(method: "GET", target: .origin("/"), version: .http1_1, headers: ["Host": "h"]),
            HTTP1RequestHead(method: "GET", target: .origin("/"), version: .http1_0, headers: ["Host": "h", "Connection": "keep-alive"]),
            HTTP1RequestHead(method: "GET", target: .origin("/"), version: .http1_1, headers: ["Host": "h", "Connection": "close"]),
        ]
        for fields in Self.fieldLists(seed: seed, count: 400) {
            var text = bytes("HTTP/1.1 200 OK\r\n")
            for (name, value) in fields { text += Self.spell(name, value, using: &generator) }
            text += bytes("\r\n")
            parser.expectResponse(toMethod: "HEAD")
            let events: [HTTP1Event]
            do { events = try parser.feed(text) } catch {
                parser = HTTP1Parser(mode: .response)
                continue
            }
            guard case .responseHead(let received)? = events.first else { Issue.record("no head: \(events)"); return }
            #expect(received.headers.wireLinesMatchFields)
            if received.headers.wireLines != nil { fastPath += 1 }
            // Answering HEAD leaves the body out; the framing the fields say is what the rules see.
            let framing = (try? HTTP1Syntax.framing(of: received.headers, version: received.version, isRequest: false)) ?? .untilClose
            var head = received
            head.framing = framing
            let longWay = HTTP1ResponseHead(version: head.version, status: head.status, reason: head.reason,
                                            headers: built(head.headers), framing: framing)
            for client in clients {
                for closeConnection in [false, true] {
                    let expected = HTTP1Forwarding.responseForClient(longWay, to: client, closeConnection: closeConnection, via: nil)
                    let direct = HTTP1Forwarding.serializedResponseForClient(head, to: client, closeConnection: closeConnection, via: nil)
                    #expect(direct.bytes == Reference.serialized(expected), "\(fields)")
                    #expect(direct.framing == expected.framing && direct.keepAlive == expected.keepAlive)
                }
            }
            checked += 1
        }
        #expect(checked > 200 && fastPath > 50, "\(checked) heads checked, \(fastPath) with their lines")
    }
}
