import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// A client session and a server session talking in memory: streams,
/// bodies, trailers, resets, GOAWAY and flow control.
@Suite("HTTP/2 sessions in memory")
struct HTTP2SessionTests {
    @Test("100 concurrent streams on one connection each get their own body back")
    func concurrentStreams() throws {
        let pair = try SessionPair()
        let echo = EchoServer(pair.server)
        var sent: [HTTP2StreamID: [UInt8]] = [:]
        for index in 0..<100 {
            let stream = try pair.client.sendRequest(post("/echo/\(index)"), endStream: false)
            let body = pattern(10_000 + index * 97, seed: index)
            try pair.client.sendData(body, on: stream, endStream: true)
            sent[stream] = body
        }
        var seen = ClientStreams()
        var mostOpen = 0
        try pair.pump { side, event in
            mostOpen = max(mostOpen, pair.server.openStreams.count)
            if side == .server { try echo.handle(event) } else { seen.record(event, session: pair.client) }
        }
        #expect(echo.requests.count == 100)
        #expect(mostOpen > 1, "the streams never overlapped")
        for (stream, body) in sent {
            #expect(seen.heads[stream]?.status == 200)
            #expect(seen.heads[stream]?.headers.first(name: "x-path") == echo.requests[stream]?.path)
            let same = seen.bodies[stream] == body
            #expect(same, "stream \(stream) got another body back (\(seen.bodies[stream]?.count ?? 0) of \(body.count) bytes)")
            #expect(seen.closed[stream] == .noError)
        }
        #expect(pair.client.openStreams.isEmpty && pair.server.openStreams.isEmpty)
    }

    @Test("bodies of several MB go both ways through the windows, never buffering more than a window")
    func largeBodies() throws {
        let pair = try SessionPair()
        let echo = EchoServer(pair.server)
        var sent: [HTTP2StreamID: [UInt8]] = [:]
        for index in 0..<3 {
            let stream = try pair.client.sendRequest(post("/big/\(index)"), endStream: false)
            sent[stream] = pattern(4 * 1024 * 1024 + index, seed: 100 + index)
        }
        // The client feeds each upload 64 KiB at a time as its buffer drains.
        var offsets: [HTTP2StreamID: Int] = [:]
        func feed() throws {
            for (stream, body) in sent where offsets[stream, default: 0] < body.count {
                guard pair.client.bufferedBytes(on: stream) < 64 * 1024 else { continue }
                let start = offsets[stream, default: 0]
                let end = min(body.count, start + 64 * 1024)
                try pair.client.sendData(Array(body[start..<end]), on: stream, endStream: end == body.count)
                offsets[stream] = end
            }
        }
        var seen = ClientStreams()
        var mostUnconsumed = 0
        repeat {
            try feed()
            try pair.pump(rounds: 4) { side, event in
                if side == .server {
                    try echo.handle(event)
                    for stream in pair.server.openStreams {
                        mostUnconsumed = max(mostUnconsumed, pair.server.unconsumedBytes(on: stream))
                    }
                } else {
                    seen.record(event, session: pair.client)
                }
            }
        } while seen.closed.count < sent.count && pair.clientToServer < 100_000_000
        for (stream, body) in sent {
            let same = seen.bodies[stream] == body
            #expect(same, "stream \(stream) got \(seen.bodies[stream]?.count ?? 0) of \(body.count) bytes, or other bytes")
        }
        #expect(pair.clientToServer > 12 * 1024 * 1024 && pair.serverToClient > 12 * 1024 * 1024)
        #expect(mostUnconsumed <= HTTP2Limits.default.initialStreamWindow)
        #expect(echo.maxBuffered <= HTTP2Limits.default.initialStreamWindow)
    }

    @Test("trailers go both ways, and TE: trailers is allowed")
    func trailers() throws {
        let pair = try SessionPair()
        let echo = EchoServer(pair.server)
        echo.responseTrailers = ["grpc-status": "0", "x-checksum": "abc"]
        var head = post("/trailers")
        head.headers.add(name: "te", value: "trailers")
        let stream = try pair.client.sendRequest(head, endStream: false)
        try pair.client.sendData(Array("hello".utf8), on: stream)
        try pair.client.sendTrailers(["X-Request-Sum": "5"], on: stream)
        var seen = ClientStreams()
        try pair.pump { side, event in
            if side == .server { try echo.handle(event) } else { seen.record(event, session: pair.client) }
        }
        #expect(echo.requests[stream]?.headers.first(name: "te") == "trailers")
        #expect(echo.trailersSeen[stream] == ["x-request-sum": "5"])
        #expect(seen.bodies[stream] == Array("hello".utf8))
        #expect(seen.trailers[stream] == ["grpc-status": "0", "x-checksum": "abc"])
        #expect(seen.closed[stream] == .noError)
    }

    @Test("a client reset mid-body reaches the server, and the window it held goes back to the connection")
    func clientResetMidBody() throws {
        // Windows as small as HTTP/2 allows: a leaked window would stall the next stream.
        let small = HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: 65_535)
        let pair = try SessionPair(serverLimits: small)
        let first = try pair.client.sendRequest(post("/upload"), endStream: false)
        try pair.client.sendData(pattern(60_000, seed: 1), on: first)
        var serverEvents: [HTTP2Event] = []
        // The server application reads the first body but never passes it on.
        pair.pump { side, event in if side == .server { serverEvents.append(event) } }
        #expect(pair.server.unconsumedBytes(on: first) == 60_000)
        try pair.client.reset(first, code: .cancel)
        pair.pump { side, event in if side == .server { serverEvents.append(event) } }
        #expect(serverEvents.contains(.reset(first, .cancel)))
        #expect(serverEvents.contains(.streamClosed(first, .cancel)))

        let second = try pair.client.sendRequest(post("/upload"), endStream: false)
        try pair.client.sendData(pattern(60_000, seed: 2), on: second, endStream: true)
        var received = 0
        var ended = false
        pair.pump { side, event in
            guard side == .server, case .data(second, let bytes, let endStream) = event else { return }
            received += bytes.count
            ended = ended || endStream
            pair.server.consume(bytes.count, on: second)
        }
        #expect(received == 60_000 && ended)
    }

    @Test("a stream's bytes released to the connection window let other streams move while its own window stays shut")
    func releaseConnectionWindow() throws {
        // The connection window is one stream window: a held stream would stall every other one.
        let small = HTTP2Limits(initialStreamWindow: 65_535, connectionWindow: 65_535)
        let pair = try SessionPair(serverLimits: small)
        let waiting = try pair.client.sendRequest(post("/waiting"), endStream: false)
        try pair.client.sendData(pattern(65_535, seed: 1), on: waiting)
        pair.pump { side, event in
            if side == .server, case .data(waiting, let bytes, _) = event { pair.server.releaseConnectionWindow(bytes.count, on: waiting) }
        }
        #expect(pair.server.unconsumedBytes(on: waiting) == 65_535)
        #expect(pair.server.receiveWindow(on: waiting) == 0)
        #expect(pair.client.sendWindow(on: waiting) == 0, "the waiting stream's own window stays shut")

        let moving = try pair.client.sendRequest(post("/moving"), endStream: false)
        try pair.client.sendData(pattern(60_000, seed: 2), on: moving, endStream: true)
        var received = 0
        pair.pump { side, event in
            guard side == .server, case .data(moving, let bytes, _) = event else { return }
            received += bytes.count
            pair.server.consume(bytes.count, on: moving)
        }
        #expect(received == 60_000, "the other stream got the connection window back")

        // Consuming the released bytes later opens the stream's own window.
        pair.server.consume(65_535, on: waiting)
        pair.pump { _, _ in }
        #expect(pair.client.sendWindow(on: waiting) > 0)
    }

    @Test("a server reset mid-response reaches the client with its code")
    func serverResetMidBody() throws {
        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(get("/download"), endStream: true)
        var seen = ClientStreams()
        try pair.pump { side, event in
            if side == .server, case .request(let id, _, _) = event {
                try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: id, endStream: false)
                try pair.server.sendData(pattern(10_000, seed: 3), on: id)
            } else if side == .client {
                seen.record(event, session: pair.client)
            }
        }
        #expect(seen.bodies[stream]?.count == 10_000)
        try pair.server.reset(stream, code: .internalError)
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(seen.resets[stream] == .internalError)
        #expect(seen.closed[stream] == .internalError)
        #expect(!seen.ended.contains(stream))
    }

    @Test("GOAWAY lets open streams finish, refuses new ones, and ends both sessions")
    func goAway() throws {
        let pair = try SessionPair()
        let echo = EchoServer(pair.server)
        let open = try pair.client.sendRequest(post("/slow"), endStream: false)
        var seen = ClientStreams()
        try pair.pump { side, event in
            if side == .server { try echo.handle(event) } else { seen.record(event, session: pair.client) }
        }
        try pair.server.goAway(code: .noError, debugData: Array("bye".utf8))
        try pair.pump { side, event in
            if side == .server { try echo.handle(event) } else { seen.record(event, session: pair.client) }
        }
        #expect(seen.goAways.count == 1)
        #expect(seen.goAways.first?.0 == open && seen.goAways.first?.1 == .noError)
        // A request after GOAWAY is refused without reaching the server.
        #expect(throws: HTTP2Error.self) { _ = try pair.client.sendRequest(get("/late"), endStream: true) }
        // The open stream still completes.
        try pair.client.sendData(Array("done".utf8), on: open, endStream: true)
        try pair.pump { side, event in
            if side == .server { try echo.handle(event) } else { seen.record(event, session: pair.client) }
        }
        #expect(seen.bodies[open] == Array("done".utf8))
        #expect(seen.closed[open] == .noError)
        #expect(echo.requests.count == 1)
        #expect(pair.server.isFinished)
        #expect(pair.client.isFinished)
    }

    @Test("GOAWAY naming an earlier last stream: the streams above it are refused, the others finish, and a later GOAWAY does not raise it")
    func goAwayWithLastStream() throws {
        let pair = try SessionPair()
        let first = try pair.client.sendRequest(post("/first"), endStream: false)
        let second = try pair.client.sendRequest(post("/second"), endStream: false)
        var seen = ClientStreams()
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        var serverClosed: [HTTP2StreamID: HTTP2ErrorCode] = [:]
        try pair.server.goAway(code: .noError, lastStream: first)
        try pair.server.goAway(code: .noError)
        pair.pump { side, event in
            if side == .client { seen.record(event, session: pair.client) }
            if side == .server, case .streamClosed(let stream, let code) = event { serverClosed[stream] = code }
        }
        #expect(seen.goAways.map(\.0) == [first, first])
        #expect(seen.closed[second] == .refusedStream)
        #expect(serverClosed[second] == .refusedStream)
        try pair.client.sendData(Array("done".utf8), on: first, endStream: true)
        try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: first, endStream: true)
        pair.pump { side, event in if side == .client { seen.record(event, session: pair.client) } }
        #expect(seen.closed[first] == .noError)
        #expect(pair.server.isFinished && pair.client.isFinished)
    }

    @Test("a request reset before its HEADERS left is reset after them, not on an idle stream: the connection goes on")
    func resetBeforeHeadersLeft() throws {
        let pair = try SessionPair()
        let echo = EchoServer(pair.server)
        let early = try pair.client.sendRequest(post("/early"), endStream: false)
        try pair.client.reset(early, code: .cancel)
        let later = try pair.client.sendRequest(get("/later"), endStream: true)
        var seen = ClientStreams()
        var serverResets: [HTTP2StreamID: HTTP2ErrorCode] = [:]
        pair.pump { side, event in
            if side == .server {
                // The reset arrives with the request: answering /early may find it closed.
                try? echo.handle(event)
                if case .reset(let stream, let code) = event { serverResets[stream] = code }
            } else {
                seen.record(event, session: pair.client)
            }
        }
        #expect(pair.server.failure == nil, "RST_STREAM on an idle stream is a connection error")
        #expect(serverResets[early] == .cancel)
        #expect(seen.closed[early] == .cancel)
        #expect(seen.heads[later]?.status == 200 && seen.closed[later] == .noError)
    }

    @Test("GOAWAY on an idle connection is reported and ends both sessions")
    func goAwayIdle() throws {
        let pair = try SessionPair()
        pair.pump { _, _ in }
        try pair.client.goAway(code: .noError)
        var serverEvents: [HTTP2Event] = []
        pair.pump { side, event in if side == .server { serverEvents.append(event) } }
        #expect(serverEvents == [.goAway(lastStreamID: HTTP2StreamID(0), .noError, debugData: [])])
        #expect(pair.client.isFinished && pair.server.isFinished)
    }

    @Test("a request still queued when GOAWAY arrives is closed with REFUSED_STREAM")
    func requestQueuedAtGoAway() throws {
        let pair = try SessionPair()
        pair.pump { _, _ in }
        try pair.server.goAway()
        let queued = try pair.client.sendRequest(get("/queued"), endStream: true)
        var seen = ClientStreams()
        var requests = 0
        pair.pump { side, event in
            if side == .client { seen.record(event, session: pair.client) }
            if side == .server, case .request = event { requests += 1 }
        }
        #expect(seen.goAways.count == 1)
        #expect(seen.closed[queued] == .refusedStream)
        #expect(requests == 0)
    }

    @Test("a slow reader stalls its own stream only, with at most one window of its body buffered")
    func slowReader() throws {
        let pair = try SessionPair()
        let size = 2 * 1024 * 1024
        let slow = try pair.client.sendRequest(get("/slow"), endStream: true)
        var fast: [HTTP2StreamID] = []
        for index in 0..<8 { fast.append(try pair.client.sendRequest(get("/fast/\(index)"), endStream: true)) }
        // The server sends each response 32 KiB at a time while its buffer is short.
        var sentBytes: [HTTP2StreamID: Int] = [:]
        func produce() throws {
            for stream in pair.server.openStreams where sentBytes[stream, default: 0] < size {
                while pair.server.bufferedBytes(on: stream) < 64 * 1024, sentBytes[stream, default: 0] < size {
                    let count = min(32 * 1024, size - sentBytes[stream, default: 0])
                    sentBytes[stream, default: 0] += count
                    try pair.server.sendData(pattern(count, seed: Int(stream.rawValue)), on: stream, endStream: sentBytes[stream] == size)
                }
            }
        }
        var seen = ClientStreams()
        var mostBufferedOnServer = 0
        var readingSlow = false
        for _ in 0..<10_000 {
            try produce()
            mostBufferedOnServer = max(mostBufferedOnServer, pair.server.bufferedBytes(on: slow))
            var progressed = false
            try pair.pump(rounds: 2) { side, event in
                progressed = true
                if side == .server, case .request(let id, _, _) = event {
                    try pair.server.sendResponse(HTTP2ResponseHead(status: 200), on: id, endStream: false)
                } else if side == .client {
                    seen.record(event, session: pair.client) { $0 != slow || readingSlow }
                }
            }
            if !progressed && !readingSlow {
                // Quiet with the slow stream unread: the fast ones must be done.
                #expect(fast.allSatisfy { seen.closed[$0] == .noError }, "a fast stream waited for the slow one")
                #expect(seen.bodies[slow]?.count ?? 0 <= HTTP2Limits.default.initialStreamWindow)
                #expect(pair.client.unconsumedBytes(on: slow) <= HTTP2Limits.default.initialStreamWindow)
                #expect(pair.client.unconsumedBytes(on: slow) > 0)
                readingSlow = true
                pair.client.consume(pair.client.unconsumedBytes(on: slow), on: slow)
            } else if !progressed {
                break
            }
        }
        #expect(readingSlow)
        #expect(mostBufferedOnServer <= 64 * 1024 + 32 * 1024)
        #expect(seen.bodies[slow]?.count == size)
        #expect(seen.closed[slow] == .noError)
    }
}
