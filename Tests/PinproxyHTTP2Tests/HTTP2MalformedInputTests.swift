import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// Bytes no well-behaved client sends, fed to a server session as they are;
/// what it answers is read back frame by frame, without nghttp2.
@Suite("HTTP/2 server session against malformed input")
struct HTTP2MalformedInputTests {
    /// A server session fed `frames` after the preface and an empty SETTINGS.
    struct Exchange {
        let session: HTTP2Session
        var output: [RawFrame] = []
        var events: [HTTP2Event] = []

        init(limits: HTTP2Limits = .default, prefix: [UInt8] = RawFrame.preface + RawFrame.settings().bytes) throws {
            session = try HTTP2Session(role: .server, limits: limits)
            feed(prefix)
        }

        mutating func feed(_ bytes: [UInt8]) {
            session.receive(bytes)
            events += session.takeEvents()
            output += RawFrame.parse(session.takeOutput())
            events += session.takeEvents()
        }

        mutating func send(_ frames: RawFrame...) { feed(frames.flatMap(\.bytes)) }

        var goAwayCodes: [HTTP2ErrorCode] { output.filter { $0.kind == .goAway }.compactMap { $0.errorCode.map { HTTP2ErrorCode($0) } } }
        func resetCodes(_ stream: UInt32) -> [HTTP2ErrorCode] {
            output.filter { $0.kind == .rstStream && $0.stream == stream }.compactMap { $0.errorCode.map { HTTP2ErrorCode($0) } }
        }
        var connectionError: HTTP2Error? {
            for case .connectionError(let error) in events { return error }
            return nil
        }
        var requests: [HTTP2StreamID] {
            events.compactMap { if case .request(let stream, _, _) = $0 { return stream } else { return nil } }
        }
    }

    @Test("a valid request is accepted: the baseline the other cases differ from")
    func validRequest() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(path: "/ok", extra: [("accept", "*/*")])))
        #expect(exchange.requests == [HTTP2StreamID(1)])
        #expect(exchange.goAwayCodes.isEmpty && exchange.resetCodes(1).isEmpty)
        #expect(exchange.session.wantsRead)
    }

    @Test("a bad preface ends the connection with PROTOCOL_ERROR")
    func badPreface() throws {
        var exchange = try Exchange(prefix: [])
        exchange.feed(Array("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        #expect(exchange.connectionError?.code == .badPreface)
        #expect(exchange.goAwayCodes == [.protocolError])
        #expect(!exchange.session.wantsRead)
        #expect(exchange.requests.isEmpty)
    }

    @Test("a frame larger than SETTINGS_MAX_FRAME_SIZE ends the connection with FRAME_SIZE_ERROR")
    func oversizedFrame() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request() + [UInt8](repeating: 0, count: 20_000 - HPACK.request().count)))
        #expect(exchange.goAwayCodes == [.frameSizeError])
        #expect(exchange.connectionError?.wireCode == .frameSizeError)
        #expect(exchange.requests.isEmpty)
    }

    @Test("an upper-case field name resets the stream with PROTOCOL_ERROR; the connection goes on")
    func upperCaseName() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(extra: [("X-Upper", "1")])))
        #expect(exchange.resetCodes(1) == [.protocolError])
        #expect(exchange.requests.isEmpty)
        exchange.send(.headers(stream: 3, block: HPACK.request()))
        #expect(exchange.requests == [HTTP2StreamID(3)])
        #expect(exchange.goAwayCodes.isEmpty)
    }

    @Test("connection-specific fields reset the stream with PROTOCOL_ERROR", arguments: [
        ("connection", "keep-alive"), ("keep-alive", "timeout=5"), ("transfer-encoding", "chunked"),
        ("upgrade", "h2c"), ("proxy-connection", "close"), ("te", "gzip"),
    ])
    func connectionSpecific(_ field: (String, String)) throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(extra: [field])))
        #expect(exchange.resetCodes(1) == [.protocolError])
        #expect(exchange.requests.isEmpty)
        #expect(exchange.goAwayCodes.isEmpty)
    }

    @Test("an HPACK bomb ends the connection with ENHANCE_YOUR_CALM before it decodes far past the limit")
    func hpackBomb() throws {
        var exchange = try Exchange()
        // One 4 KB field enters the dynamic table, then 4,000 one-byte references to it:
        // 16 MB decoded from a 16 KB block.
        let big = String(repeating: "a", count: 4000)
        let block = HPACK.request() + HPACK.indexedLiteral("x-bomb", big) + [UInt8](repeating: HPACK.indexed(62)[0], count: 4000)
        exchange.send(.headers(stream: 1, block: block))
        #expect(exchange.connectionError?.code == .headerListTooLarge)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(exchange.requests.isEmpty)
        #expect(!exchange.session.wantsRead)
    }

    @Test("more header fields than the limit end the connection with ENHANCE_YOUR_CALM")
    func tooManyFields() throws {
        var exchange = try Exchange()
        let extra = (0..<150).map { ("x-field-\($0)", "v") }
        exchange.send(.headers(stream: 1, block: HPACK.request(extra: extra)))
        #expect(exchange.connectionError?.code == .headerListTooLarge)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(exchange.requests.isEmpty)
    }

    @Test("a CONTINUATION flood ends the connection with ENHANCE_YOUR_CALM")
    func continuationFlood() throws {
        var exchange = try Exchange()
        var frames = [RawFrame.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endStream)]
        for index in 0..<50 {
            frames.append(RawFrame(.continuation, stream: 1, payload: HPACK.literal("x-c\(index)", "1")))
        }
        exchange.feed(frames.flatMap(\.bytes))
        #expect(exchange.connectionError?.code == .flooded)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(exchange.requests.isEmpty)
    }

    @Test("a PING flood that never reads the answers ends the connection with ENHANCE_YOUR_CALM")
    func pingFlood() throws {
        var exchange = try Exchange()
        exchange.feed((0..<2000).flatMap { _ in RawFrame(.ping, payload: [UInt8](repeating: 7, count: 8)).bytes })
        #expect(exchange.connectionError?.code == .flooded)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
    }

    @Test("a rapid-reset flood (streams opened and reset at once) ends the connection with ENHANCE_YOUR_CALM")
    func rapidReset() throws {
        var exchange = try Exchange(limits: HTTP2Limits(resetBurst: 50, resetsPerSecond: 1))
        var frames: [UInt8] = []
        for index in 0..<200 {
            let stream = UInt32(2 * index + 1)
            frames += RawFrame.headers(stream: stream, block: HPACK.request(), flags: RawFrame.endHeaders).bytes
            frames += RawFrame(.rstStream, stream: stream, payload: RawFrame.uint32(8)).bytes
        }
        exchange.feed(frames)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(exchange.connectionError?.wireCode == .enhanceYourCalm)
        #expect(exchange.requests.count < 200)
    }

    @Test("streams past SETTINGS_MAX_CONCURRENT_STREAMS are refused with REFUSED_STREAM")
    func tooManyStreams() throws {
        var exchange = try Exchange(limits: HTTP2Limits(maxConcurrentStreams: 10))
        // Open streams (no END_STREAM): the eleventh is over the limit.
        for index in 0..<11 {
            exchange.send(.headers(stream: UInt32(2 * index + 1), block: HPACK.request(), flags: RawFrame.endHeaders))
        }
        #expect(exchange.requests.count == 10)
        #expect(exchange.resetCodes(21) == [.refusedStream])
        #expect(exchange.goAwayCodes.isEmpty)
    }

    @Test("streams past the acknowledged limit end the connection with PROTOCOL_ERROR")
    func tooManyStreamsAfterAck() throws {
        var exchange = try Exchange(limits: HTTP2Limits(maxConcurrentStreams: 10))
        exchange.send(RawFrame.settingsAck)
        for index in 0..<11 {
            exchange.send(.headers(stream: UInt32(2 * index + 1), block: HPACK.request(), flags: RawFrame.endHeaders))
        }
        #expect(exchange.requests.count == 10)
        #expect(!exchange.requests.contains(HTTP2StreamID(21)))
        // nghttp2 applies the limit strictly once acknowledged (RFC 9113 §5.1.2 allows either).
        #expect(exchange.goAwayCodes == [.protocolError])
        #expect(exchange.connectionError?.wireCode == .protocolError)
    }

    @Test("DATA beyond the granted window ends the connection with FLOW_CONTROL_ERROR")
    func windowOverrun() throws {
        var exchange = try Exchange(limits: HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: 65_535))
        exchange.send(.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endHeaders))
        for _ in 0..<5 { exchange.send(RawFrame(.data, stream: 1, payload: [UInt8](repeating: 1, count: 16_000))) }
        #expect(exchange.goAwayCodes == [.flowControlError])
    }

    @Test("an empty DATA frame with END_STREAM ends the request body: the application sees the end")
    func emptyDataEndsTheStream() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(path: "/upload"), flags: RawFrame.endHeaders))
        exchange.send(RawFrame(.data, stream: 1, payload: Array("body".utf8)))
        exchange.send(RawFrame(.data, flags: RawFrame.endStream, stream: 1))
        let data = exchange.events.compactMap { event -> ([UInt8], Bool)? in
            if case .data(HTTP2StreamID(1), let bytes, let end) = event { return (Array(bytes), end) } else { return nil }
        }
        #expect(data.map(\.0) == [Array("body".utf8), []], "\(exchange.events)")
        #expect(data.map(\.1) == [false, true], "\(exchange.events)")
    }

    @Test("DATA that arrives for a stream the server reset gives its bytes back to the connection's window: the other streams keep moving")
    func dataForAResetStreamReturnsTheConnectionWindow() throws {
        var exchange = try Exchange(limits: HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: 65_535))
        exchange.send(.headers(stream: 1, block: HPACK.request(path: "/a"), flags: RawFrame.endHeaders))
        try exchange.session.reset(HTTP2StreamID(1), code: .cancel)
        exchange.output += RawFrame.parse(exchange.session.takeOutput())
        // In flight before the client saw the reset: most of the connection's window.
        for _ in 0..<4 { exchange.send(RawFrame(.data, stream: 1, payload: [UInt8](repeating: 1, count: 15_000))) }
        let given = exchange.output.filter { $0.kind == .windowUpdate && $0.stream == 0 }
            .map { Int(RawFrame.readUInt32($0.payload[...]) & 0x7fff_ffff) }.reduce(0, +)
        // nghttp2 sends WINDOW_UPDATE once half the window is consumed: three of the four frames by now.
        #expect(given >= 45_000, "the connection's window got \(given) of the 60,000 bytes back")
        // A second stream can send all the window the client has now.
        let room = 65_535 - 60_000 + given
        exchange.send(.headers(stream: 3, block: HPACK.request(path: "/b"), flags: RawFrame.endHeaders))
        for offset in stride(from: 0, to: room, by: 15_000) {
            exchange.send(RawFrame(.data, stream: 3, payload: [UInt8](repeating: 2, count: min(15_000, room - offset))))
        }
        #expect(exchange.goAwayCodes.isEmpty, "\(exchange.goAwayCodes)")
        let received = exchange.events.reduce(0) { total, event in
            if case .data(HTTP2StreamID(3), let bytes, _) = event { return total + bytes.count } else { return total }
        }
        #expect(received == room)
    }

    @Test("DATA of a stream refused past the GOAWAY's last stream gives its bytes back to the connection's window: the streams it kept keep moving")
    func dataForARefusedStreamReturnsTheConnectionWindow() throws {
        var exchange = try Exchange(limits: HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: 65_535))
        exchange.send(.headers(stream: 1, block: HPACK.request(path: "/kept"), flags: RawFrame.endHeaders))
        // GOAWAY promises stream 1 and no later one; it has not left when stream 3 comes.
        try exchange.session.goAway(code: .noError, lastStream: HTTP2StreamID(1))
        var frames = RawFrame.headers(stream: 3, block: HPACK.request(path: "/refused"), flags: RawFrame.endHeaders).bytes
        for _ in 0..<4 { frames += RawFrame(.data, stream: 3, payload: [UInt8](repeating: 1, count: 15_000)).bytes }
        exchange.feed(frames)
        #expect(exchange.resetCodes(3) == [.refusedStream], "\(exchange.output)")
        #expect(exchange.requests == [HTTP2StreamID(1)])
        let given = exchange.output.filter { $0.kind == .windowUpdate && $0.stream == 0 }
            .map { Int(RawFrame.readUInt32($0.payload[...]) & 0x7fff_ffff) }.reduce(0, +)
        #expect(given >= 45_000, "the connection's window got \(given) of the refused stream's 60,000 bytes back")
        let room = 65_535 - 60_000 + given
        for offset in stride(from: 0, to: room, by: 15_000) {
            exchange.send(RawFrame(.data, stream: 1, payload: [UInt8](repeating: 2, count: min(15_000, room - offset))))
        }
        #expect(!exchange.goAwayCodes.contains(.flowControlError), "\(exchange.goAwayCodes)")
        let received = exchange.events.reduce(0) { total, event in
            if case .data(HTTP2StreamID(1), let bytes, _) = event { return total + bytes.count } else { return total }
        }
        #expect(received == room)
    }

    @Test("the server's SETTINGS carry the limits")
    func settingsAdvertised() throws {
        let exchange = try Exchange(limits: HTTP2Limits(maxConcurrentStreams: 7, initialStreamWindow: 100_000, maxHeaderListSize: 9000))
        let settings = try #require(exchange.output.first { $0.kind == .settings && $0.flags == 0 })
        #expect(settings.settingsEntries[3] == 7)
        #expect(settings.settingsEntries[4] == 100_000)
        #expect(settings.settingsEntries[6] == 9000)
        #expect(settings.settingsEntries[2] == 0)
    }

    @Test("the client refuses server push: ENABLE_PUSH 0, and a PUSH_PROMISE ends the connection with PROTOCOL_ERROR")
    func pushRefused() throws {
        let client = try HTTP2Session(role: .client)
        let stream = try client.sendRequest(get("/"), endStream: true)
        let hello = RawFrame.parse(client.takeOutput())
        #expect(hello.first { $0.kind == .settings }?.settingsEntries[2] == 0)
        let promise = RawFrame(.pushPromise, flags: RawFrame.endHeaders, stream: UInt32(stream.rawValue),
                               payload: RawFrame.uint32(2) + HPACK.request(path: "/pushed"))
        client.receive(RawFrame.settings().bytes + RawFrame.settingsAck.bytes + promise.bytes)
        let answer = RawFrame.parse(client.takeOutput())
        let codes = answer.filter { $0.kind == .goAway }.compactMap { $0.errorCode.map { HTTP2ErrorCode($0) } }
        #expect(codes == [.protocolError])
        #expect(client.takeEvents().contains { if case .connectionError = $0 { return true } else { return false } })
    }

    @Test("an invalid response resets its stream with PROTOCOL_ERROR and reaches the client as a closed stream, not a head",
          arguments: [[("connection", "close")], [], [("x-a", "1")]])
    func invalidResponse(_ extra: [(String, String)]) throws {
        let client = try HTTP2Session(role: .client)
        let stream = try client.sendRequest(get("/"), endStream: true)
        _ = client.takeOutput()
        // A connection-specific field; a status with a leading zero; a status of one digit.
        let status = extra.isEmpty ? "075" : extra[0].0 == "x-a" ? "7" : "200"
        let block = HPACK.literal(":status", status) + extra.flatMap { HPACK.literal($0.0, $0.1) }
        client.receive(RawFrame.settings().bytes + RawFrame.headers(stream: UInt32(stream.rawValue), block: block).bytes)
        let answer = RawFrame.parse(client.takeOutput())
        let resets = answer.filter { $0.kind == .rstStream && $0.stream == UInt32(stream.rawValue) }.compactMap(\.errorCode)
        #expect(resets == [HTTP2ErrorCode.protocolError.rawValue])
        let events = client.takeEvents()
        #expect(events == [.streamClosed(stream, .protocolError)])
        #expect(client.wantsRead)
    }

    @Test("a PUSH_PROMISE before ENABLE_PUSH 0 was acknowledged has its promised stream reset, and no response appears")
    func pushRefusedBeforeAck() throws {
        let client = try HTTP2Session(role: .client)
        let stream = try client.sendRequest(get("/"), endStream: true)
        _ = client.takeOutput()
        let promise = RawFrame(.pushPromise, flags: RawFrame.endHeaders, stream: UInt32(stream.rawValue),
                               payload: RawFrame.uint32(2) + HPACK.request(path: "/pushed"))
        let pushed = RawFrame.headers(stream: 2, block: HPACK.literal(":status", "200"))
        client.receive(RawFrame.settings().bytes + promise.bytes + pushed.bytes)
        let answer = RawFrame.parse(client.takeOutput())
        #expect(answer.contains { $0.kind == .rstStream && $0.stream == 2 })
        let events = client.takeEvents()
        #expect(!events.contains { if case .response(HTTP2StreamID(2), _, _) = $0 { return true } else { return false } })
        #expect(client.wantsRead)
    }

    @Test("a header block that refers past the HPACK tables ends the connection with COMPRESSION_ERROR")
    func hpackBadIndex() throws {
        var exchange = try Exchange()
        // The static table has 61 entries and the dynamic table is empty.
        exchange.send(.headers(stream: 1, block: HPACK.indexed(2) + HPACK.indexed(70)))
        #expect(exchange.connectionError?.code == .headerCompression)
        #expect(exchange.connectionError?.wireCode == .compressionError)
        #expect(exchange.goAwayCodes == [.compressionError])
        #expect(exchange.requests.isEmpty)
    }

    @Test("a SETTINGS frame with more entries than maxSettingsEntries ends the connection with ENHANCE_YOUR_CALM")
    func settingsFlood() throws {
        var exchange = try Exchange(limits: HTTP2Limits(maxSettingsEntries: 4))
        exchange.send(.settings((0..<5).map { _ in (UInt16(3), UInt32(100)) }))
        #expect(exchange.connectionError?.code == .flooded)
        #expect(exchange.connectionError?.wireCode == .enhanceYourCalm)
        #expect(exchange.goAwayCodes == [.enhanceYourCalm])
        #expect(!exchange.session.wantsRead)
    }

    @Test("the SETTINGS carry the frame size and HPACK table size limits too")
    func settingsAdvertiseFrameAndTableSize() throws {
        let exchange = try Exchange(limits: HTTP2Limits(maxFrameSize: 32_768, headerTableSize: 1024))
        let settings = try #require(exchange.output.first { $0.kind == .settings && $0.flags == 0 })
        #expect(settings.settingsEntries[5] == 32_768)
        #expect(settings.settingsEntries[1] == 1024)
    }

    @Test("a reset of a stream whose request was refused is not reported: the application never saw the stream")
    func resetOfRefusedRequest() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(extra: [("X-Upper", "1")]), flags: RawFrame.endHeaders),
                      RawFrame(.rstStream, stream: 1, payload: RawFrame.uint32(8)))
        #expect(exchange.events.isEmpty, "\(exchange.events)")
        #expect(exchange.goAwayCodes.isEmpty)
    }

    @Test("when a frame before a closed-stream violation already ended the connection, its code is the one reported and sent")
    func earlierConnectionErrorWins() throws {
        var exchange = try Exchange()
        // In one read: a request that ends stream 1, a WINDOW_UPDATE of 0 on the
        // connection (PROTOCOL_ERROR), then DATA on stream 1 (STREAM_CLOSED).
        exchange.send(.headers(stream: 1, block: HPACK.request()),
                      RawFrame(.windowUpdate, stream: 0, payload: RawFrame.uint32(0)),
                      RawFrame(.data, flags: RawFrame.endStream, stream: 1, payload: Array("late".utf8)))
        #expect(exchange.goAwayCodes == [.protocolError])
        #expect(exchange.connectionError?.wireCode == .protocolError)
        #expect(!exchange.session.wantsRead)
    }

    @Test("a request above the last stream this side's GOAWAY named, arriving before it left, is reset with REFUSED_STREAM")
    func requestAfterGoAwayRefused() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endHeaders))
        try exchange.session.goAway(lastStream: HTTP2StreamID(1))
        exchange.send(.headers(stream: 3, block: HPACK.request()))
        #expect(exchange.resetCodes(3) == [.refusedStream])
        #expect(exchange.requests == [HTTP2StreamID(1)])
        #expect(exchange.goAwayCodes == [.noError])
    }

    @Test("a request in the same read after a connection error reaches no application")
    func requestAfterConnectionError() throws {
        var exchange = try Exchange()
        // A WINDOW_UPDATE of 0 on the connection is a PROTOCOL_ERROR (RFC 9113 §6.9).
        exchange.send(RawFrame(.windowUpdate, stream: 0, payload: RawFrame.uint32(0)),
                      .headers(stream: 1, block: HPACK.request()),
                      RawFrame(.data, flags: RawFrame.endStream, stream: 3, payload: [1]))
        #expect(exchange.goAwayCodes == [.protocolError])
        #expect(exchange.connectionError?.wireCode == .protocolError)
        #expect(exchange.requests.isEmpty, "\(exchange.events)")
    }

    @Test("after this side's GOAWAY, a connection error followed by a closed-stream violation: no error contradicts the GOAWAY sent")
    func violationAfterGoAwayAndError() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endHeaders))
        try exchange.session.goAway()
        exchange.feed([])
        exchange.send(.headers(stream: 3, block: HPACK.request()),
                      RawFrame(.windowUpdate, stream: 0, payload: RawFrame.uint32(0)),
                      RawFrame(.data, flags: RawFrame.endStream, stream: 3, payload: Array("late".utf8)))
        #expect(exchange.goAwayCodes == [.noError, .protocolError])
        for case .connectionError(let error) in exchange.events {
            #expect(error.wireCode == .protocolError, "\(error)")
        }
    }
}
