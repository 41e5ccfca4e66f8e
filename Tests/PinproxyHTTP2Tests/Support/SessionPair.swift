import PinproxyHTTP1
import PinproxyHTTP2

/// A client session and a server session joined in memory: ``pump(_:)``
/// moves bytes both ways until neither has anything to say, handing every
/// event to the test as it comes.
final class SessionPair {
    let client: HTTP2Session
    let server: HTTP2Session
    /// Bytes that crossed, each way.
    private(set) var clientToServer = 0
    private(set) var serverToClient = 0

    init(clientLimits: HTTP2Limits = .default, serverLimits: HTTP2Limits = .default) throws {
        client = try HTTP2Session(role: .client, limits: clientLimits)
        server = try HTTP2Session(role: .server, limits: serverLimits)
    }

    enum Side { case client, server }

    /// Pumps until quiet: no bytes and no events on either side for a round.
    /// `handle` runs for each event and may send more.
    func pump(rounds: Int = 100_000, _ handle: (Side, HTTP2Event) throws -> Void = { _, _ in }) rethrows {
        for _ in 0..<rounds {
            var quiet = true
            let up = client.takeOutput(limit: 64 * 1024)
            if !up.isEmpty {
                quiet = false
                clientToServer += up.count
                server.receive(up)
            }
            for event in server.takeEvents() {
                quiet = false
                try handle(.server, event)
            }
            let down = server.takeOutput(limit: 64 * 1024)
            if !down.isEmpty {
                quiet = false
                serverToClient += down.count
                client.receive(down)
            }
            for event in client.takeEvents() {
                quiet = false
                try handle(.client, event)
            }
            if quiet { return }
        }
    }
}

/// Deterministic test bytes: `count` bytes that differ per `seed`.
func pattern(_ count: Int, seed: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    var state = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 &+ 1)
    for index in 0..<count {
        state = state &* 1_664_525 &+ 1_013_904_223
        out[index] = UInt8(truncatingIfNeeded: state >> 24)
    }
    return out
}

func post(_ path: String, authority: String = "example.com") -> HTTP2RequestHead {
    HTTP2RequestHead(method: "POST", scheme: "https", authority: authority, path: path)
}

func get(_ path: String, authority: String = "example.com") -> HTTP2RequestHead {
    HTTP2RequestHead(method: "GET", scheme: "https", authority: authority, path: path)
}

/// A server application that answers each request with its own body, as it
/// arrives, releasing request bytes only when their echo has been written:
/// how a relay uses the session.
final class EchoServer {
    let session: HTTP2Session
    var requests: [HTTP2StreamID: HTTP2RequestHead] = [:]
    var trailersSeen: [HTTP2StreamID: HTTPHeaders] = [:]
    /// Echo trailers: answer request trailers with these response trailers.
    var responseTrailers: HTTPHeaders?
    /// The most echo bytes buffered on one stream at any time.
    private(set) var maxBuffered = 0

    init(_ session: HTTP2Session) { self.session = session }

    func handle(_ event: HTTP2Event) throws {
        switch event {
        case .request(let stream, let head, let endStream):
            requests[stream] = head
            try session.sendResponse(HTTP2ResponseHead(status: 200, headers: ["x-path": head.path ?? ""]), on: stream, endStream: endStream)
        case .data(let stream, let bytes, let endStream):
            try session.sendData(bytes, on: stream, endStream: endStream)
            maxBuffered = max(maxBuffered, session.bufferedBytes(on: stream))
        case .trailers(let stream, let trailers):
            trailersSeen[stream] = trailers
            if let responseTrailers {
                try session.sendTrailers(responseTrailers, on: stream)
            } else {
                try session.sendData([], on: stream, endStream: true)
            }
        case .dataWritten(let stream, let count):
            session.consume(count, on: stream)
        default:
            break
        }
    }
}

/// What a client saw of each stream.
struct ClientStreams {
    var heads: [HTTP2StreamID: HTTP2ResponseHead] = [:]
    var bodies: [HTTP2StreamID: [UInt8]] = [:]
    var trailers: [HTTP2StreamID: HTTPHeaders] = [:]
    var ended: Set<HTTP2StreamID> = []
    var closed: [HTTP2StreamID: HTTP2ErrorCode] = [:]
    var resets: [HTTP2StreamID: HTTP2ErrorCode] = [:]
    var goAways: [(HTTP2StreamID, HTTP2ErrorCode)] = []

    /// Records `event`; body bytes are consumed at once unless `consuming` says no.
    mutating func record(_ event: HTTP2Event, session: HTTP2Session, consuming: (HTTP2StreamID) -> Bool = { _ in true }) {
        switch event {
        case .response(let stream, let head, let endStream):
            if !head.isInformational { heads[stream] = head }
            if endStream { ended.insert(stream) }
        case .data(let stream, let bytes, let endStream):
            bodies[stream, default: []] += bytes
            if consuming(stream) { session.consume(bytes.count, on: stream) }
            if endStream { ended.insert(stream) }
        case .trailers(let stream, let fields):
            trailers[stream] = fields
            ended.insert(stream)
        case .streamClosed(let stream, let code):
            closed[stream] = code
        case .reset(let stream, let code):
            resets[stream] = code
        case .goAway(let last, let code, _):
            goAways.append((last, code))
        default:
            break
        }
    }
}
