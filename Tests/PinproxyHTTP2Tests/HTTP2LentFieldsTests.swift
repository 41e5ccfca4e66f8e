import PinproxyHTTP1
@testable import PinproxyHTTP2
import Testing

/// HEADERS are submitted without nghttp2 copying their field bytes: the
/// session keeps them until nghttp2 has encoded the frame or dropped it.
@Suite("HTTP/2 field bytes lent to nghttp2")
struct HTTP2LentFieldsTests {
    @Test("requests held back by the peer's stream limit keep their field bytes until their HEADERS leave, then give them back")
    func heldBackRequests() throws {
        let pair = try SessionPair(serverLimits: HTTP2Limits(maxConcurrentStreams: 1))
        // SETTINGS both ways: the client learns it may open one stream at a time.
        try pair.pump()
        let echo = EchoServer(pair.server)
        var values: [HTTP2StreamID: String] = [:]
        for index in 0..<6 {
            // Past 15 bytes, so that each value has storage of its own; the
            // name in capitals, which must reach the peer lower-cased.
            let value = "request \(index) " + String(repeating: "abcdefghij", count: 3 + index)
            let head = HTTP2RequestHead(method: "GET", scheme: "https", authority: "example.com", path: "/held/\(index)",
                                        headers: ["X-Sequence": value])
            values[try pair.client.sendRequest(head, endStream: true)] = value
            // Churn the allocator, as a busy loop would, between submissions.
            _ = (0..<64).map { [UInt8](repeating: UInt8($0), count: 32 + $0) }
        }
        #expect(pair.client.lentFields.count == 6)
        var heldWhenFirstArrived: Int?
        try pair.pump { side, event in
            if side == .server, case .request = event, heldWhenFirstArrived == nil {
                heldWhenFirstArrived = pair.client.lentFields.count
            }
            if side == .server { try echo.handle(event) }
        }
        #expect(heldWhenFirstArrived == 5, "one request left, five waited for a stream")
        #expect(echo.requests.count == 6)
        for (stream, value) in values {
            #expect(echo.requests[stream]?.headers.first(name: "x-sequence") == value)
            #expect(echo.requests[stream]?.headers.fields.map(\.name) == ["x-sequence"])
        }
        #expect(pair.client.lentFields.isEmpty)
        #expect(pair.server.lentFields.isEmpty)
    }

    @Test("requests GOAWAY leaves no room for are refused, and their field bytes given back")
    func requestsDroppedByGoAway() throws {
        let pair = try SessionPair(serverLimits: HTTP2Limits(maxConcurrentStreams: 1))
        try pair.pump()
        let first = try pair.client.sendRequest(post("/first"), endStream: false)
        let later = try (0..<3).map { try pair.client.sendRequest(post("/later/\($0)"), endStream: false) }
        #expect(pair.client.lentFields.count == 4)
        var seen = ClientStreams()
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(pair.client.lentFields.count == 3, "the first request's HEADERS left; the others wait for a stream")
        try pair.server.goAway(code: .noError, lastStream: first)
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        // nghttp2 looks at the waiting requests again when a stream is free:
        // the first one finishing makes room, which GOAWAY has taken away.
        try pair.client.sendData([], on: first, endStream: true)
        try pair.server.sendResponse(HTTP2ResponseHead(status: 204), on: first, endStream: true)
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(seen.closed[first] == .noError)
        for stream in later { #expect(seen.closed[stream] == .refusedStream) }
        #expect(pair.client.lentFields.isEmpty)
    }

    @Test("an interim head, the final head and trailers on one stream each keep their bytes until they leave")
    func interimFinalAndTrailers() throws {
        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(get("/hints"), endStream: true)
        var arrived: HTTP2StreamID?
        pair.pump { side, event in
            if side == .server, case .request(let id, _, _) = event { arrived = id }
        }
        let id = try #require(arrived)
        try pair.server.sendResponse(HTTP2ResponseHead(status: 103, headers: ["link": "</style.css>; rel=preload; as=style"]),
                                     on: id, endStream: false)
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200, headers: ["content-type": "text/plain; charset=utf-8"]),
                                     on: id, endStream: false)
        try pair.server.sendData(Array("body".utf8), on: id)
        try pair.server.sendTrailers(["X-Checksum": "sha-256=a-trailer-longer-than-fifteen-bytes"], on: id)
        #expect(pair.server.lentFields.map(\.stream) == [id.rawValue, id.rawValue])
        var seen = ClientStreams()
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(seen.heads[stream]?.status == 200)
        #expect(seen.heads[stream]?.headers.first(name: "content-type") == "text/plain; charset=utf-8")
        #expect(seen.bodies[stream] == Array("body".utf8))
        #expect(seen.trailers[stream]?.first(name: "x-checksum") == "sha-256=a-trailer-longer-than-fifteen-bytes")
        #expect(seen.closed[stream] == .noError)
        #expect(pair.server.lentFields.isEmpty, "the trailers, lent while the body was framed, were given back too")
    }
}
