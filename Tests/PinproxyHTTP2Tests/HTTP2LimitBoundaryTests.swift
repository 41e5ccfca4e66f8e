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

    @Test("a header list of exactly maxHeaderListSize bytes, counted as RFC 9113 §6.5.2 does, is accepted; one byte more ends the connection")
    func headerListSizeEdge() throws {
        let limits = HTTP2Limits(maxHeaderListSize: 300)
        // Each field counts its name, its value and 32 bytes; HPACK.request() sends these four first.
        let pseudo = [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/")]
        let pseudoSize = pseudo.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 32 }
        func block(listSize: Int) -> [UInt8] {
            HPACK.request(extra: [("x-pad", String(repeating: "v", count: listSize - pseudoSize - "x-pad".utf8.count - 32))])
        }
        var exact = try Exchange(limits: limits)
        exact.send(.headers(stream: 1, block: block(listSize: 300)))
        #expect(exact.requests == [HTTP2StreamID(1)])
        #expect(exact.connectionError == nil && exact.goAwayCodes.isEmpty)
        var over = try Exchange(limits: limits)
        over.send(.headers(stream: 1, block: block(listSize: 301)))
        #expect(over.connectionError?.code == .headerListTooLarge)
        #expect(over.goAwayCodes == [.enhanceYourCalm])
        #expect(over.requests.isEmpty)
    }

    @Test("by default a header section of 100 fields is accepted; 101 end the connection")
    func defaultHeaderCount() throws {
        // HPACK.request() has four pseudo-header fields.
        var exact = try Exchange()
        exact.send(.headers(stream: 1, block: HPACK.request(extra: (0..<96).map { ("x-f\($0)", "v") })))
        #expect(exact.requests == [HTTP2StreamID(1)])
        #expect(exact.connectionError == nil)
        var over = try Exchange()
        over.send(.headers(stream: 1, block: HPACK.request(extra: (0..<97).map { ("x-f\($0)", "v") })))
        #expect(over.connectionError?.code == .headerListTooLarge)
        #expect(over.goAwayCodes == [.enhanceYourCalm])
    }

    @Test("by default a header block may take 8 CONTINUATION frames; a ninth ends the connection with ENHANCE_YOUR_CALM")
    func defaultContinuations() throws {
        func frames(continuations: Int) -> [UInt8] {
            var frames = [RawFrame.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endStream)]
            for index in 0..<continuations {
                let last = index == continuations - 1
                frames.append(RawFrame(.continuation, flags: last ? RawFrame.endHeaders : 0, stream: 1,
                                       payload: HPACK.literal("x-c\(index)", "1")))
            }
            return frames.flatMap(\.bytes)
        }
        var exact = try Exchange()
        exact.feed(frames(continuations: 8))
        #expect(exact.requests == [HTTP2StreamID(1)])
        #expect(exact.connectionError == nil)
        var over = try Exchange()
        over.feed(frames(continuations: 9))
        #expect(over.connectionError?.code == .flooded)
        #expect(over.goAwayCodes == [.enhanceYourCalm])
        #expect(over.requests.isEmpty)
    }

    @Test("a default server session advertises 100 streams, 256 KiB stream windows, 16 KiB frames, 64 KiB header lists, no push")
    func defaultSettings() throws {
        let exchange = try Exchange()
        let settings = try #require(exchange.output.first { $0.kind == .settings && $0.flags == 0 })
        #expect(settings.settingsEntries == [1: 4096, 2: 0, 3: 100, 4: 256 * 1024, 5: 16 * 1024, 6: 64 * 1024])
        // The connection window is opened to 1 MiB at once.
        let update = exchange.output.first { $0.kind == .windowUpdate && $0.stream == 0 }
        #expect(update.map { RawFrame.readUInt32($0.payload[...]) } == UInt32(1024 * 1024 - 65_535))
    }

    @Test("the upstream limits are the defaults with 4 MiB stream and 16 MiB connection windows")
    func upstreamLimits() {
        var expected = HTTP2Limits.default
        expected.initialStreamWindow = 4 * 1024 * 1024
        expected.connectionWindow = 16 * 1024 * 1024
        #expect(HTTP2Limits.upstream == expected)
    }

    @Test("limits below what HTTP/2 can express are raised to its minimums: 16,384-byte frames, a 65,535-byte connection window")
    func limitsClamped() throws {
        let session = try HTTP2Session(role: .server, limits: HTTP2Limits(connectionWindow: 1000, maxFrameSize: 1000))
        #expect(session.limits.maxFrameSize == 16_384)
        #expect(session.limits.connectionWindow == 65_535)
        let settings = try #require(RawFrame.parse(session.takeOutput()).first { $0.kind == .settings })
        #expect(settings.settingsEntries[5] == 16_384)
        let large = try HTTP2Session(role: .server, limits: HTTP2Limits(maxFrameSize: 1 << 30))
        #expect(large.limits.maxFrameSize == 16_777_215)
    }

    @Test("resets past the burst are allowed again once the bucket has refilled")
    func resetBucketRefills() throws {
        func reset(_ stream: UInt32) -> [UInt8] {
            RawFrame.headers(stream: stream, block: HPACK.request(), flags: RawFrame.endHeaders).bytes
                + RawFrame(.rstStream, stream: stream, payload: RawFrame.uint32(8)).bytes
        }
        // A burst of one, refilled so fast that any time at all between two reads gives a token back.
        var exchange = try Exchange(limits: HTTP2Limits(resetBurst: 1, resetsPerSecond: 1_000_000_000))
        exchange.feed(reset(1))
        exchange.feed(reset(3))
        #expect(exchange.connectionError == nil)
        #expect(exchange.goAwayCodes.isEmpty)
    }

    @Test("the reset limit guards a server only: a client session takes any number of resets from its peer")
    func clientTakesResets() throws {
        let pair = try SessionPair(clientLimits: HTTP2Limits(resetBurst: 1, resetsPerSecond: 1))
        let streams = try (0..<5).map { _ in try pair.client.sendRequest(post("/"), endStream: false) }
        var seen = ClientStreams()
        var clientErrors: [HTTP2Error] = []
        try pair.pump { side, event in
            if side == .server, case .request(let stream, _, _) = event { try pair.server.reset(stream, code: .cancel) }
            if side == .client, case .connectionError(let error) = event { clientErrors.append(error) }
            if side == .client { seen.record(event, session: pair.client) }
        }
        #expect(clientErrors.isEmpty)
        #expect(streams.allSatisfy { seen.resets[$0] == .cancel })
        #expect(pair.client.wantsRead)
    }

    /// A pair whose server connection window is two default windows, after a first request's
    /// 70,000 body bytes arrived and were released to it `releases` times (all the bytes once,
    /// nothing more after).
    func pairWithFirstBodyReleased(releases: Int) throws -> (pair: SessionPair, window: Int, first: HTTP2StreamID) {
        let window = 2 * 65_535
        let pair = try SessionPair(serverLimits: HTTP2Limits(initialStreamWindow: 100_000, connectionWindow: window))
        let first = try pair.client.sendRequest(post("/a"), endStream: false)
        try pair.client.sendData(pattern(70_000, seed: 1), on: first)
        try pair.pump()
        for _ in 0..<releases { pair.server.releaseConnectionWindow(70_000, on: first) }
        try pair.pump()
        #expect(pair.client.connectionSendWindow == window)
        return (pair, window, first)
    }

    /// A second request's 70,000 bytes arrive and all but one stay held: the window the peer
    /// sees must not cover them.
    func expectSecondBodyHeld(_ pair: SessionPair, window: Int) throws {
        let second = try pair.client.sendRequest(post("/b"), endStream: false)
        try pair.client.sendData(pattern(70_000, seed: 2), on: second)
        try pair.pump()
        pair.server.releaseConnectionWindow(1, on: second)
        try pair.pump()
        #expect(pair.client.connectionSendWindow <= window - 69_999,
                "the peer may send \(pair.client.connectionSendWindow) bytes while 69,999 are held in a \(window)-byte window")
    }

    @Test("bytes released to the connection window a second time give the peer no window over bytes still held")
    func secondReleaseGivesNothing() throws {
        let (pair, window, _) = try pairWithFirstBodyReleased(releases: 2)
        try expectSecondBodyHeld(pair, window: window)
    }

    @Test("a stream that closes with bytes already released gives the peer no window over bytes held elsewhere")
    func closedStreamReleasedBytesGoBackOnce() throws {
        let (pair, window, first) = try pairWithFirstBodyReleased(releases: 1)
        // The held stream goes: its bytes already went back to the connection.
        try pair.client.reset(first, code: .cancel)
        try pair.pump()
        try expectSecondBodyHeld(pair, window: window)
    }
}
