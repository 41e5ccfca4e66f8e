import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// Each limit at its edge: exactly the limit passes, one more does not; and
/// window that went back to the peer once never goes back twice.
@Suite("HTTP/2 limits at their edges")
struct HTTP2LimitBoundaryTests {
    typealias Exchange = HTTP2MalformedInputTests.Exchange

    @Test("a header section of exactly maxHeaderCount fields is accepted; one more ends the connection")
    func headerCountEdge() throws {
        let limits = HTTP2Limits(maxHeaderCount: 10)
        // HPACK.request() has four pseudo-header fields.
        var exact = try Exchange(limits: limits)
        exact.send(.headers(stream: 1, block: HPACK.request(extra: (0..<6).map { ("x-f\($0)", "v") })))
        #expect(exact.requests == [HTTP2StreamID(1)])
        #expect(exact.connectionError == nil)
        var over = try Exchange(limits: limits)
        over.send(.headers(stream: 1, block: HPACK.request(extra: (0..<7).map { ("x-f\($0)", "v") })))
        #expect(over.connectionError?.code == .headerListTooLarge)
        #expect(over.goAwayCodes == [.enhanceYourCalm])
        #expect(over.requests.isEmpty)
    }

    @Test("a header list over maxHeaderListSize ends the connection though it has few fields")
    func headerListSize() throws {
        var exchange = try Exchange()
        // 25 fields, about 85 KB decoded: one 4 KB field in the dynamic table, then 20 references to it.
        let block = HPACK.request() + HPACK.indexedLiteral("x-big", String(repeating: "b", count: 4000))
            + [UInt8](repeating: HPACK.indexed(62)[0], count: 20)
        exchange.send(.headers(stream: 1, block: block))
        #expect(exchange.connectionError?.code == .headerListTooLarge)
        #expect(exchange.connectionError?.reason.contains("larger than \(HTTP2Limits.default.maxHeaderListSize) bytes") == true,
                "\(String(describing: exchange.connectionError))")
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(exchange.requests.isEmpty)
    }

    @Test("exactly resetBurst resets at once are allowed; one more ends the connection")
    func resetBurstEdge() throws {
        func resets(_ count: Int) -> [UInt8] {
            var frames: [UInt8] = []
            for index in 0..<count {
                let stream = UInt32(2 * index + 1)
                frames += RawFrame.headers(stream: stream, block: HPACK.request(), flags: RawFrame.endHeaders).bytes
                frames += RawFrame(.rstStream, stream: stream, payload: RawFrame.uint32(8)).bytes
            }
            return frames
        }
        let limits = HTTP2Limits(resetBurst: 5, resetsPerSecond: 1)
        var exact = try Exchange(limits: limits)
        exact.feed(resets(5))
        #expect(exact.connectionError == nil)
        #expect(exact.goAwayCodes.isEmpty)
        var over = try Exchange(limits: limits)
        over.feed(resets(6))
        #expect(over.connectionError?.wireCode == .enhanceYourCalm)
        #expect(over.goAwayCodes == [.enhanceYourCalm])
    }

    @Test("bytes released to the connection window, released again or consumed later, go back to the peer once")
    func releasedWindowGoesBackOnce() throws {
        let window = 2 * 65_535
        let limits = HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: window)
        let pair = try SessionPair(serverLimits: limits)
        let first = try pair.client.sendRequest(post("/a"), endStream: false)
        let second = try pair.client.sendRequest(post("/b"), endStream: false)
        try pair.client.sendData(pattern(60_000, seed: 1), on: first)
        try pair.client.sendData(pattern(60_000, seed: 2), on: second)
        try pair.pump()
        #expect(pair.server.unconsumedBytes(on: first) == 60_000 && pair.server.unconsumedBytes(on: second) == 60_000)
        #expect(pair.client.connectionSendWindow == window - 120_000)

        // Held streams: the connection window goes back, the streams' stay shut.
        pair.server.releaseConnectionWindow(60_000, on: first)
        pair.server.releaseConnectionWindow(60_000, on: second)
        pair.server.releaseConnectionWindow(60_000, on: first)  // nothing more to release
        try pair.pump()
        #expect(pair.client.connectionSendWindow == window)
        // Passed on at last: the streams' windows open, the connection's was already given.
        pair.server.consume(60_000, on: first)
        pair.server.consume(60_000, on: second)
        try pair.pump()

        // A second round, half of it passed on: the window the peer gets never
        // covers bytes still held.
        try pair.client.sendData(pattern(60_000, seed: 3), on: first)
        try pair.client.sendData(pattern(60_000, seed: 4), on: second)
        try pair.pump()
        pair.server.consume(60_000, on: first)
        try pair.pump()
        #expect(pair.client.connectionSendWindow <= window - 60_000,
                "the peer may send \(pair.client.connectionSendWindow) bytes while 60,000 are held in a \(window)-byte window")
        pair.server.consume(60_000, on: second)
        try pair.pump()
        #expect(pair.client.connectionSendWindow == window)
        #expect(pair.client.sendWindow(on: first) == 65_535 && pair.client.sendWindow(on: second) == 65_535)
    }
}
