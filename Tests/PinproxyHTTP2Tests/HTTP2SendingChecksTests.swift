import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// What a server session refuses to send for its application: a second final
/// head, a 1xx that ends the stream, a status outside 100–999, pseudo-header
/// trailers; and what a reset leaves queued (nothing).
@Suite("HTTP/2 sending checks")
struct HTTP2SendingChecksTests {
    /// A pair whose server has received one request with a body to follow.
    static func opened() throws -> (SessionPair, HTTP2StreamID) {
        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(post("/"), endStream: false)
        try pair.pump()
        return (pair, stream)
    }

    static func code(_ body: () throws(HTTP2Error) -> Void) -> HTTP2Error.Code? {
        do { try body() } catch { return error.code }
        return nil
    }

    @Test func aSecondFinalHeadIsRefused() throws {
        let (pair, stream) = try Self.opened()
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendResponse(HTTP2ResponseHead(status: 500), on: stream, endStream: false) } == .invalidState)
    }

    @Test func aNonFinalHeadCannotEndTheStreamAndAStatusMustHaveThreeDigits() throws {
        let (pair, stream) = try Self.opened()
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendResponse(HTTP2ResponseHead(status: 103), on: stream, endStream: true) } == .invalidHead)
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendResponse(HTTP2ResponseHead(status: 42), on: stream, endStream: true) } == .invalidHead)
        // Neither left anything behind: the real answer still goes.
        try pair.server.sendResponse(HTTP2ResponseHead(status: 204), on: stream, endStream: true)
        var statuses: [Int] = []
        pair.pump { side, event in
            if side == .client, case .response(stream, let head, _) = event { statuses.append(head.status) }
        }
        #expect(statuses == [204])
    }

    @Test func trailersWithAPseudoHeaderAreRefused() throws {
        let (pair, stream) = try Self.opened()
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendTrailers([":status": "200"], on: stream) } == .invalidHead)
    }

    @Test func aResetDropsWhatWasQueued() throws {
        let (pair, stream) = try Self.opened()
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
        // More than the client's window: the rest stays queued.
        try pair.server.sendData(pattern(600_000, seed: 5), on: stream)
        try pair.pump()
        #expect(pair.server.bufferedBytes(on: stream) > 0)
        try pair.server.reset(stream, code: .cancel)
        #expect(pair.server.bufferedBytes(on: stream) == 0)
    }

    @Test func aStatusAbove999IsRefused() throws {
        let (pair, stream) = try Self.opened()
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendResponse(HTTP2ResponseHead(status: 1000), on: stream, endStream: true) } == .invalidHead)
        try pair.server.sendResponse(HTTP2ResponseHead(status: 999), on: stream, endStream: true)
    }

    @Test func connectionSpecificTrailersAreRefusedAndTheBodyStaysOpen() throws {
        let (pair, stream) = try Self.opened()
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendTrailers(["connection": "close"], on: stream) } == .invalidHead)
        #expect(Self.code { () throws(HTTP2Error) in try pair.server.sendTrailers(["x-bad": "a\r\nb"], on: stream) } == .invalidHead)
        try pair.server.sendTrailers(["grpc-status": "0"], on: stream)
        var seen = ClientStreams()
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(seen.trailers[stream] == ["grpc-status": "0"])
    }

    @Test func emptyTrailersEndTheBodyWithDataNotAnEmptyHeaderSection() throws {
        let (pair, stream) = try Self.opened()
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
        try pair.server.sendData(Array("body".utf8), on: stream)
        try pair.server.sendTrailers([:], on: stream)
        var seen = ClientStreams()
        var headerFrames = 0
        for _ in 0..<10 {
            let down = pair.server.takeOutput()
            headerFrames += RawFrame.parse(down).filter { $0.kind == .headers && $0.stream == UInt32(stream.rawValue) }.count
            pair.client.receive(down)
            for event in pair.client.takeEvents() { seen.record(event, session: pair.client) }
            pair.server.receive(pair.client.takeOutput())
            _ = pair.server.takeEvents()
        }
        #expect(headerFrames == 1, "only the response head goes as HEADERS")
        #expect(seen.bodies[stream] == Array("body".utf8))
        #expect(seen.trailers[stream] == nil)
        #expect(seen.ended.contains(stream))
    }

    @Test func aClientThatSentGoAwayOpensNoMoreStreams() throws {
        let pair = try SessionPair()
        try pair.pump()
        try pair.client.goAway()
        #expect(Self.code { () throws(HTTP2Error) in _ = try pair.client.sendRequest(get("/"), endStream: true) } == .streamsExhausted)
    }

    @Test func consumingMoreThanArrivedGivesBackOnlyWhatArrived() throws {
        let (pair, stream) = try Self.opened()
        try pair.client.sendData(pattern(1000, seed: 1), on: stream)
        try pair.pump()
        #expect(pair.server.unconsumedBytes(on: stream) == 1000)
        pair.server.consume(5000, on: stream)
        #expect(pair.server.unconsumedBytes(on: stream) == 0)
        try pair.client.sendData(pattern(700, seed: 2), on: stream)
        try pair.pump()
        #expect(pair.server.unconsumedBytes(on: stream) == 700)
        #expect(pair.client.sendWindow(on: stream) <= HTTP2Limits.default.initialStreamWindow - 700)
    }

    @Test func aClientWithAStreamOpenIsNotReusableUntilItCloses() throws {
        let pair = try SessionPair()
        try pair.pump()
        #expect(pair.client.isReusable)
        let stream = try pair.client.sendRequest(get("/"), endStream: true)
        try pair.pump()
        #expect(!pair.client.isReusable, "stream \(stream) still waits for its response")
        try pair.server.sendResponse(HTTP2ResponseHead(status: 204), on: stream, endStream: true)
        try pair.pump()
        #expect(pair.client.isReusable)
    }

    @Test func beforeThePeersSettingsAClientOpensNoMoreStreamsThanItsOwnLimit() throws {
        let client = try HTTP2Session(role: .client, limits: HTTP2Limits(maxConcurrentStreams: 2))
        for index in 0..<3 { _ = try client.sendRequest(get("/\(index)"), endStream: true) }
        let first = RawFrame.parse(client.takeOutput())
        #expect(first.filter { $0.kind == .headers }.count == 2)
        // The server's SETTINGS allow 100: the third request goes.
        let server = try HTTP2Session(role: .server)
        client.receive(server.takeOutput())
        let second = RawFrame.parse(client.takeOutput())
        #expect(second.filter { $0.kind == .headers }.count == 1)
    }
}
