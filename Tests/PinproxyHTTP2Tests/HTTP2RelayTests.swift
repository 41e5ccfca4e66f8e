import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// Two legs joined by a relay, as the proxy will join them: client ↔ (server
/// session | relay | client session) ↔ origin, all in memory. The relay
/// consumes on one leg only what the other leg has written.
@Suite("HTTP/2 relay of two legs in memory")
struct HTTP2RelayTests {
    /// The proxy in the middle: maps streams across and forwards every event.
    final class Relay {
        let clientLeg: HTTP2Session
        let originLeg: HTTP2Session
        var upstream: [HTTP2StreamID: HTTP2StreamID] = [:]
        var downstream: [HTTP2StreamID: HTTP2StreamID] = [:]

        init(clientLeg: HTTP2Session, originLeg: HTTP2Session) {
            self.clientLeg = clientLeg
            self.originLeg = originLeg
        }

        /// The body bytes the relay holds for a client stream: queued on either
        /// leg (what is unconsumed is the same bytes, counted against the windows).
        func held(_ stream: HTTP2StreamID) -> Int {
            guard let up = upstream[stream] else { return 0 }
            return clientLeg.bufferedBytes(on: stream) + originLeg.bufferedBytes(on: up)
        }

        func fromClient(_ event: HTTP2Event) throws {
            switch event {
            case .request(let stream, let head, let endStream):
                let up = try originLeg.sendRequest(head, endStream: endStream)
                upstream[stream] = up
                downstream[up] = stream
            case .data(let stream, let bytes, let endStream):
                guard let up = upstream[stream] else { return }
                try originLeg.sendData(bytes, on: up, endStream: endStream)
            case .trailers(let stream, let fields):
                guard let up = upstream[stream] else { return }
                try originLeg.sendTrailers(fields, on: up)
            case .reset(let stream, let code):
                guard let up = upstream[stream] else { return }
                try? originLeg.reset(up, code: code)
            case .dataWritten(let stream, let count):
                // The client took response bytes: the origin may send as many more.
                guard let up = upstream[stream] else { return }
                originLeg.consume(count, on: up)
            default:
                break
            }
        }

        func fromOrigin(_ event: HTTP2Event) throws {
            switch event {
            case .response(let up, let head, let endStream):
                guard let stream = downstream[up] else { return }
                try clientLeg.sendResponse(head, on: stream, endStream: endStream)
            case .data(let up, let bytes, let endStream):
                guard let stream = downstream[up] else { return }
                try clientLeg.sendData(bytes, on: stream, endStream: endStream)
            case .trailers(let up, let fields):
                guard let stream = downstream[up] else { return }
                try clientLeg.sendTrailers(fields, on: stream)
            case .reset(let up, let code):
                guard let stream = downstream[up] else { return }
                try? clientLeg.reset(stream, code: code)
            case .dataWritten(let up, let count):
                guard let stream = downstream[up] else { return }
                clientLeg.consume(count, on: stream)
            default:
                break
            }
        }
    }

    @Test("a slow client stream holds at most its windows in the relay while the other streams finish")
    func slowClientStream() throws {
        let front = try SessionPair()
        let back = try SessionPair()
        let relay = Relay(clientLeg: front.server, originLeg: back.client)
        let size = 3 * 1024 * 1024
        let slow = try front.client.sendRequest(get("/slow"), endStream: true)
        var fast: [HTTP2StreamID] = []
        for index in 0..<6 { fast.append(try front.client.sendRequest(get("/fast/\(index)"), endStream: true)) }
        // The origin produces each response 16 KiB at a time while its buffer is short.
        var produced: [HTTP2StreamID: Int] = [:]
        var seen = ClientStreams()
        var readingSlow = false
        var mostHeld = 0
        for _ in 0..<20_000 {
            for stream in back.server.openStreams where produced[stream, default: 0] < size {
                while back.server.bufferedBytes(on: stream) < 32 * 1024, produced[stream, default: 0] < size {
                    let count = min(16 * 1024, size - produced[stream, default: 0])
                    produced[stream, default: 0] += count
                    try back.server.sendData(pattern(count, seed: 5), on: stream, endStream: produced[stream] == size)
                }
            }
            var progressed = false
            try front.pump(rounds: 2) { side, event in
                progressed = true
                if side == .server { try relay.fromClient(event) } else { seen.record(event, session: front.client) { $0 != slow || readingSlow } }
            }
            try back.pump(rounds: 2) { side, event in
                progressed = true
                if side == .client {
                    try relay.fromOrigin(event)
                } else if case .request(let stream, _, _) = event {
                    try back.server.sendResponse(HTTP2ResponseHead(status: 200), on: stream, endStream: false)
                }
            }
            mostHeld = max(mostHeld, relay.held(slow))
            if !progressed && !readingSlow {
                #expect(fast.allSatisfy { seen.closed[$0] == .noError }, "a fast stream waited for the slow one")
                #expect((seen.bodies[slow]?.count ?? 0) < size)
                readingSlow = true
                front.client.consume(front.client.unconsumedBytes(on: slow), on: slow)
            } else if !progressed {
                break
            }
        }
        #expect(readingSlow)
        #expect(seen.bodies[slow]?.count == size)
        for stream in fast { #expect(seen.bodies[stream]?.count == size) }
        // The origin leg's stream window bounds what the relay holds for the stream.
        #expect(mostHeld <= HTTP2Limits.default.initialStreamWindow, "the relay held \(mostHeld) bytes of one stream")
        #expect(mostHeld > 0)
    }

    @Test("resets and trailers cross the relay both ways")
    func resetsAndTrailers() throws {
        let front = try SessionPair()
        let back = try SessionPair()
        let relay = Relay(clientLeg: front.server, originLeg: back.client)
        let echo = EchoServer(back.server)
        echo.responseTrailers = ["x-origin": "done"]
        let withTrailers = try front.client.sendRequest(post("/t"), endStream: false)
        try front.client.sendData(Array("abc".utf8), on: withTrailers)
        try front.client.sendTrailers(["x-client": "1"], on: withTrailers)
        let cancelled = try front.client.sendRequest(post("/c"), endStream: false)
        try front.client.sendData(Array("partial".utf8), on: cancelled)
        var seen = ClientStreams()
        var originEvents: [HTTP2Event] = []
        func pumpAll() throws {
            for _ in 0..<50 {
                try front.pump(rounds: 2) { side, event in
                    if side == .server { try relay.fromClient(event) } else { seen.record(event, session: front.client) }
                }
                try back.pump(rounds: 2) { side, event in
                    if side == .client { try relay.fromOrigin(event) } else { originEvents.append(event); try echo.handle(event) }
                }
            }
        }
        try pumpAll()
        #expect(seen.trailers[withTrailers] == ["x-origin": "done"])
        #expect(seen.bodies[withTrailers] == Array("abc".utf8))
        #expect(echo.trailersSeen.values.contains(["x-client": "1"]))
        try front.client.reset(cancelled, code: .cancel)
        try pumpAll()
        #expect(originEvents.contains { if case .reset(_, .cancel) = $0 { return true } else { return false } })
        #expect(seen.closed[cancelled] == .cancel)
    }
}
