import PinproxyHTTP1
import PinproxyHTTP2

// HTTP/2 frames a client may send, into a server HTTP2Session, and frames an
// origin server may send, into a client HTTP2Session, each driven as a relay
// drives it.
//
// Input: one control byte, then the bytes. Control bits: 0 feeds the bytes
// as they are (else the client connection preface and an empty SETTINGS
// frame, or the server's empty SETTINGS frame, go first, so that most inputs
// reach the frame layer); 1 answers each request with a body and trailers
// (server); 2 resets every third stream that gets a head; 3 leaves received
// bodies unconsumed. A client session has opened five streams before the
// bytes arrive (GETs, a POST with a body and trailers, a POST whose body
// stays open). The bytes are fed in pieces cut at points chosen from
// the input's hash. The session's limits are small (16 streams, 4 KiB
// stream windows, 4 KiB header lists, 20 resets at once) so that inputs of
// a few KB reach them.

extension FuzzTarget {
    public static let http2Frames = FuzzTarget(
        "http2-frames",
        "a client's bytes into a server HTTP2Session, which answers, resets and consumes as a relay would"
    ) { input throws(FuzzFailure) in
        guard let control = input.first else { return }
        var stream = Array(input.dropFirst())
        if control & 1 == 0 { stream = HTTP2Fuzz.preface + stream }
        try HTTP2Fuzz(role: .server, control: control).run(stream)
    }

    public static let http2Responses = FuzzTarget(
        "http2-responses",
        "an origin server's bytes into a client HTTP2Session with five streams open, which resets and consumes as a relay would"
    ) { input throws(FuzzFailure) in
        guard let control = input.first else { return }
        var stream = Array(input.dropFirst())
        if control & 1 == 0 { stream = HTTP2Fuzz.emptySettings + stream }
        try HTTP2Fuzz(role: .client, control: control).run(stream)
    }
}

struct HTTP2Fuzz {
    /// The client connection preface and an empty SETTINGS frame.
    static let preface = clientMagic + emptySettings
    static let clientMagic = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let emptySettings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]

    let role: HTTP2Role
    let answers: Bool
    let resets: Bool
    let consumes: Bool
    /// Small limits, so that inputs of a few KB reach every one of them.
    let limits = HTTP2Limits(
        maxConcurrentStreams: 16, initialStreamWindow: 4096, connectionWindow: 65_535, maxHeaderListSize: 4096,
        maxHeaderCount: 32, maxContinuations: 4, resetBurst: 20, resetsPerSecond: 5)

    init(role: HTTP2Role, control: UInt8) {
        self.role = role
        answers = control & 2 != 0
        resets = control & 4 != 0
        consumes = control & 8 == 0
    }

    func run(_ stream: [UInt8]) throws(FuzzFailure) {
        let session: HTTP2Session
        do {
            session = try HTTP2Session(role: role, limits: limits)
        } catch {
            throw fail("a session could not be made: \(error)")
        }
        var state = State()
        var output: [UInt8] = []
        if role == .client {
            // The requests leave before the server's first byte arrives.
            try openStreams(session, &state)
            output += session.takeOutput()
        }
        var choices = FuzzChoices(seededBy: stream)
        for piece in choices.pieces(of: stream.count) {
            session.receive(Array(stream[piece]))
            try handle(session.takeEvents(), session, &state)
            output += session.takeOutput()
            try handle(session.takeEvents(), session, &state)
            try checkWindows(session, state)
        }
        output += session.takeOutput()
        try handle(session.takeEvents(), session, &state)
        try checkOutput(output, state)
        FuzzLog.note("\(role): \(state.requests) requests, \(state.responses) responses, \(state.open.count) streams open, "
                     + "ended: \(state.failure.map { "\($0)" } ?? "no")")
    }

    /// The client's requests, sent before any byte of the server arrives.
    private func openStreams(_ session: HTTP2Session, _ state: inout State) throws(FuzzFailure) {
        do {
            for path in ["/a", "/b", "/c"] {
                state.open.insert(try session.sendRequest(HTTP2RequestHead(method: "GET", scheme: "https", authority: "example.com", path: path), endStream: true))
            }
            let post = HTTP2RequestHead(method: "POST", scheme: "https", authority: "example.com", path: "/up")
            let sent = try session.sendRequest(post, endStream: false)
            try session.sendData(Array(repeating: 0x62, count: 100), on: sent)
            try session.sendTrailers(["x-sum": "100"], on: sent)
            let open = try session.sendRequest(post, endStream: false)
            try session.sendData(Array(repeating: 0x63, count: 50), on: open)
            state.open.formUnion([sent, open])
        } catch {
            throw fail("the client could not open its streams: \(error)")
        }
    }

    /// What the run saw, for the invariants.
    struct State {
        var lastRequest: Int32 = 0
        var requests = 0
        var responses = 0
        var failure: HTTP2Error?
        var open: Set<HTTP2StreamID> = []
    }

    private func handle(_ events: [HTTP2Event], _ session: HTTP2Session, _ state: inout State) throws(FuzzFailure) {
        for event in events {
            switch event {
            case .request(let stream, let head, let endStream):
                try require(role == .server, "a client session reported a request")
                try require(state.failure == nil, "a request on stream \(stream) came after the connection ended")
                try require(stream.rawValue % 2 == 1 && stream.rawValue > state.lastRequest,
                            "request stream \(stream) after \(state.lastRequest): not odd and increasing")
                try require(head.method.isEmpty == false, "a request without :method")
                state.lastRequest = stream.rawValue
                state.requests += 1
                state.open.insert(stream)
                if resets && state.requests % 3 == 0 {
                    try call { () throws(HTTP2Error) in try session.reset(stream, code: .cancel) }
                } else if answers {
                    try call { () throws(HTTP2Error) in try session.sendResponse(HTTP2ResponseHead(status: 200, headers: ["x-fuzz": "1"]), on: stream, endStream: false) }
                    try call { () throws(HTTP2Error) in try session.sendData(Array(repeating: 0x61, count: 100), on: stream) }
                    if endStream { try call { () throws(HTTP2Error) in try session.sendTrailers(["x-done": "1"], on: stream) } }
                }
            case .data(let stream, let bytes, _):
                try require(state.open.contains(stream), "data on stream \(stream), which reported no request")
                if consumes { session.consume(bytes.count, on: stream) }
            case .trailers(let stream, let fields):
                try require(state.open.contains(stream), "trailers on stream \(stream), which reported no request")
                try require(!fields.fields.contains { $0.name.hasPrefix(":") }, "trailers with a pseudo-header field")
            case .streamClosed(let stream, _):
                state.open.remove(stream)
            case .connectionError(let error):
                try require(state.failure == nil, "two connection errors: \(state.failure!) and \(error)")
                state.failure = error
            case .response(let stream, let head, _):
                try require(role == .client, "a server session reported a response")
                try require(state.failure == nil, "a response on stream \(stream) came after the connection ended")
                try require(state.open.contains(stream), "a response on stream \(stream), which the client did not open")
                try require((100...999).contains(head.status), "the status \(head.status) is not three digits")
                state.responses += 1
                if resets && state.responses % 3 == 0 { try call { () throws(HTTP2Error) in try session.reset(stream, code: .cancel) } }
            default:
                break
            }
        }
    }

    /// Calls into the session; only a closed stream or a closed connection may refuse.
    private func call(_ body: () throws(HTTP2Error) -> Void) throws(FuzzFailure) {
        do {
            try body()
        } catch where error.code == .noSuchStream || error.code == .invalidState {
            return
        } catch {
            throw fail("the session refused a valid call: \(error)")
        }
    }

    /// Memory stays within the windows: no stream holds more unconsumed body
    /// than its window, nor all of them more than the connection's. Until the
    /// peer acknowledges SETTINGS it may use the protocol's initial 65,535
    /// bytes per stream (RFC 9113 §6.9.2), so a smaller window bounds a stream
    /// only from then on.
    private func checkWindows(_ session: HTTP2Session, _ state: State) throws(FuzzFailure) {
        var total = 0
        let streamBound = max(limits.initialStreamWindow, 65_535)
        for stream in state.open {
            let held = session.unconsumedBytes(on: stream)
            try require(held <= streamBound, "stream \(stream) holds \(held) unconsumed bytes, over its window")
            total += held
        }
        try require(total <= limits.connectionWindow, "the connection holds \(total) unconsumed bytes, over its window")
    }

    /// The output is whole frames, starting with SETTINGS (after the client
    /// preface, from a client); a connection error sent its GOAWAY code.
    private func checkOutput(_ output: [UInt8], _ state: State) throws(FuzzFailure) {
        var offset = 0
        if role == .client {
            try require(output.starts(with: HTTP2Fuzz.clientMagic), "the client did not start with the connection preface")
            offset = HTTP2Fuzz.clientMagic.count
        }
        var goAwayCodes: [UInt32] = []
        var first = true
        while offset < output.count {
            try require(output.count - offset >= 9, "the output ends inside a frame header")
            let length = Int(output[offset]) << 16 | Int(output[offset + 1]) << 8 | Int(output[offset + 2])
            let type = output[offset + 3]
            try require(output.count - offset - 9 >= length, "the output ends inside a frame")
            if first { try require(type == 4, "the session did not start with SETTINGS") }
            first = false
            if type == 7, length >= 8 {
                let code = output[(offset + 13)..<(offset + 17)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                goAwayCodes.append(code)
            }
            offset += 9 + length
        }
        if let failure = state.failure, let code = failure.wireCode {
            try require(goAwayCodes.contains(code.rawValue), "\(failure) was reported, but no GOAWAY \(code) was sent (sent \(goAwayCodes))")
        }
    }
}
