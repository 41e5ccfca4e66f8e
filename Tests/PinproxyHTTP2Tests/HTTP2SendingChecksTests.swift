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
}
