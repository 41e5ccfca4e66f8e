import PinproxyHTTP1
import PinproxyHTTP2

/// What must hold of every head the parser accepted once the proxy forwards
/// it: the fast serializer writes what building and serializing the head
/// writes, and what goes on the wire parses back to the same message.
enum HTTP1ForwardingChecks {
    /// Limits for parsing forwarded heads back: forwarding adds a few fields
    /// (`Host`, `Via`, framing) to a head that was within the defaults.
    static let roomyLimits = HTTP1Limits(
        maxStartLineLength: 16 * 1024, maxHeaderLineLength: 16 * 1024, maxHeaderBlockSize: 128 * 1024,
        maxHeaderCount: 200, maxChunkLineLength: 4 * 1024, maxBufferedWhilePaused: 1 << 20)

    /// The names a forwarded head may carry among the hop-by-hop ones, each with the one value the rules write.
    static let addedHopByHop: [String: String] = [
        "connection": "upgrade", "te": "trailers", "transfer-encoding": "chunked", "upgrade": "",
    ]

    /// The request as the proxy sends it upstream, checked against the received one.
    static func checkRequest(_ head: HTTP1RequestHead, body: [UInt8], trailers: HTTPHeaders?) throws(FuzzFailure) {
        let reverseHost = "origin.test:8443"
        for (via, host) in [(HTTP1Forwarding.defaultVia, nil), (nil, reverseHost)] as [(String?, String?)] {
            let fast = HTTP1Forwarding.serializedRequestForUpstream(head, via: via, host: host)
            var built = HTTP1Forwarding.requestForUpstream(head, via: via)
            if let host { built.headers.replaceOrAdd(name: "Host", value: host) }
            try require(fast.bytes == built.serialized(),
                        "the request written directly differs from the built one:\n\(fast.bytes.text)\nvs\n\(built.serialized().text)")
            try require(fast.framing == built.framing, "framing \(fast.framing) written, \(built.framing) built")
            try require(fast.keepAlive == head.keepAlive, "keep-alive \(fast.keepAlive) for a request that says \(head.keepAlive)")

            // Without a Host field nor an absolute URL an HTTP/1.0 request
            // names no server; only the reverse-proxy variant supplies one.
            let namesServer: Bool
            if case .origin = head.target { namesServer = host != nil || !head.headers["Host"].isEmpty } else { namesServer = true }
            guard namesServer, trailers != nil else { continue }
            let wire = fast.bytes + reframed(body, framing: fast.framing, trailers: trailers ?? HTTPHeaders())
            let back = HTTP1StreamRun(wire, pieces: [0..<wire.count], mode: .request, limits: roomyLimits)
            guard case .requestHead(let parsed)? = back.events.first else {
                throw fail("the forwarded request does not parse back (\(back.error?.reason ?? "no head")):\n\(wire.text)")
            }
            try require(parsed.method == head.method, "method \(parsed.method) forwarded for \(head.method)")
            try require(parsed.version == .http1_1, "the forwarded request is \(parsed.version)")
            try require(parsed.target == built.target, "target \(parsed.target) forwarded for \(built.target)")
            try require(parsed.framing == fast.framing, "the forwarded request reads as \(parsed.framing), written as \(fast.framing)")
            // CONNECT and OPTIONS * name their server in the target, so Host is optional there.
            let hosts = parsed.headers["Host"].count
            switch head.target {
            case .origin, .absolute: try require(hosts == 1, "the forwarded request has \(hosts) Host fields")
            case .authority, .asterisk: try require(hosts <= 1, "the forwarded request has \(hosts) Host fields")
            }
            try checkHopByHop(parsed.headers, upgrading: head.requestsUpgrade)
            try checkBody(back, body: body, framing: fast.framing, trailers: trailers, what: "request")
        }
    }

    /// The response as the proxy sends it to the client that asked with `method`, for each kind of client.
    static func checkResponse(_ head: HTTP1ResponseHead, method: String, body: [UInt8], trailers: HTTPHeaders?) throws(FuzzFailure) {
        try checkHTTP2Translation(head)
        if head.isInformational && head.status != 101 {
            let interim = HTTP1ResponseHead(status: head.status, reason: head.reason,
                                            headers: HTTP1Forwarding.removingHopByHop(head.headers))
            let back = HTTP1StreamRun(interim.serialized(), pieces: [0..<interim.serialized().count], mode: .response, limits: roomyLimits)
            guard case .responseHead(let parsed)? = back.events.first, parsed.status == head.status else {
                throw fail("the forwarded interim response does not parse back: \(interim.serialized().text)")
            }
            return
        }
        let clients: [(HTTPVersion, HTTPHeaders)] = [
            (.http1_1, HTTPHeaders()), (.http1_0, ["Connection": "keep-alive"]), (.http1_0, HTTPHeaders()),
        ]
        for (version, fields) in clients {
            let request = HTTP1RequestHead(method: method, target: .origin("/"), version: version, headers: fields)
            for close in [false, true] {
                let fast = HTTP1Forwarding.serializedResponseForClient(head, to: request, closeConnection: close)
                let built = HTTP1Forwarding.responseForClient(head, to: request, closeConnection: close)
                try require(fast.bytes == built.serialized(),
                            "the response written directly differs from the built one:\n\(fast.bytes.text)\nvs\n\(built.serialized().text)")
                try require(fast.framing == built.framing, "framing \(fast.framing) written, \(built.framing) built")
                try require(fast.keepAlive == built.keepAlive, "keep-alive \(fast.keepAlive) written, \(built.keepAlive) built")
                if version == .http1_0 { try require(fast.framing != .chunked, "a chunked response for an HTTP/1.0 client") }

                guard trailers != nil else { continue }
                let wire = fast.bytes + reframed(body, framing: fast.framing, trailers: trailers ?? HTTPHeaders())
                let back = HTTP1StreamRun(wire, pieces: [0..<wire.count], mode: .response, limits: roomyLimits, methods: [method])
                guard case .responseHead(let parsed)? = back.events.first else {
                    throw fail("the forwarded response does not parse back (\(back.error?.reason ?? "no head")):\n\(wire.text)")
                }
                try require(parsed.status == head.status, "status \(parsed.status) forwarded for \(head.status)")
                try require(parsed.framing == fast.framing, "the forwarded response reads as \(parsed.framing), written as \(fast.framing)")
                try require(parsed.keepAlive == fast.keepAlive,
                            "the forwarded response reads as keep-alive \(parsed.keepAlive), the proxy assumes \(fast.keepAlive)")
                try checkHopByHop(parsed.headers, upgrading: head.status == 101, closing: true)
                try checkBody(back, body: body, framing: fast.framing, trailers: trailers, what: "response")
            }
        }
    }

    /// The response as an HTTP/2 client gets it: laid out for nghttp2 straight from the parsed head's
    /// fields (`sendResponse(http1:)`) it is refused or sent exactly as its translated head would be
    /// (the same HEADERS bytes from the same session state), and a final head is sent.
    static func checkHTTP2Translation(_ head: HTTP1ResponseHead) throws(FuzzFailure) {
        func answer(_ send: (HTTP2Session, HTTP2StreamID) throws -> Void) throws(FuzzFailure) -> [UInt8]? {
            let client: HTTP2Session, server: HTTP2Session, stream: HTTP2StreamID
            do {
                client = try HTTP2Session(role: .client)
                server = try HTTP2Session(role: .server)
                stream = try client.sendRequest(HTTP2RequestHead(method: "GET", scheme: "https", authority: "origin.test", path: "/"),
                                                endStream: true)
            } catch {
                throw fail("the HTTP/2 sessions of the translation check could not start: \(error)")
            }
            server.receive(client.takeOutput())
            _ = server.takeEvents()
            _ = server.takeOutput()
            do { try send(server, stream) } catch { return nil }
            return server.takeOutput()
        }
        let direct = try answer { try $0.sendResponse(http1: head, on: $1, endStream: false) }
        let longWay = try answer { try $0.sendResponse(HTTP2ResponseHead(http1: head), on: $1, endStream: false) }
        try require(direct == longWay, "status \(head.status) with \(head.headers): sent straight \(direct.map { "\($0.count) bytes" } ?? "refused"), "
                    + "translated \(longWay.map { "\($0.count) bytes" } ?? "refused")")
        if head.status != 101 && head.headers.isWireSafe { try require(direct != nil, "a parsed status \(head.status) head was refused over HTTP/2") }
    }

    /// The body as the proxy writes it for `framing` (as the session does with ``HTTP1ChunkedEncoder``).
    static func reframed(_ body: [UInt8], framing: HTTP1BodyFraming, trailers: HTTPHeaders) -> [UInt8] {
        switch framing {
        case .chunked: return HTTP1ChunkedEncoder.chunk(body) + HTTP1ChunkedEncoder.end(trailers: HTTP1Forwarding.forwardableTrailers(trailers))
        case .contentLength, .untilClose: return body
        case .none: return []
        }
    }

    /// Only the hop-by-hop fields the rules add, with the values they write.
    static func checkHopByHop(_ headers: HTTPHeaders, upgrading: Bool, closing: Bool = false) throws(FuzzFailure) {
        for field in headers {
            let name = field.name.lowercased()
            guard HTTP1Forwarding.hopByHopFields.contains(name) else { continue }
            guard let value = addedHopByHop[name] else { throw fail("hop-by-hop field \(field.name) was forwarded") }
            if name == "upgrade" {
                try require(upgrading, "Upgrade was forwarded without an upgrade")
            } else if name == "connection" {
                try require(field.value == "upgrade" || (closing && ["close", "keep-alive"].contains(field.value)),
                            "Connection: \(field.value) was forwarded")
            } else {
                try require(field.value == value, "\(field.name): \(field.value) was forwarded")
            }
        }
    }

    /// The message parsed back carries the same body and the forwardable trailers.
    static func checkBody(
        _ back: HTTP1StreamRun, body: [UInt8], framing: HTTP1BodyFraming, trailers: HTTPHeaders?, what: String
    ) throws(FuzzFailure) {
        guard let message = back.messages.first else { throw fail("the forwarded \(what) has no message") }
        if case .none = framing {
            try require(message.body.isEmpty, "the forwarded \(what) grew a body")
            return
        }
        try require(message.body == body, "the forwarded \(what) body has \(message.body.count) bytes, not \(body.count)")
        try require(message.trailers != nil, "the forwarded \(what) does not end: \(back.error?.reason ?? "")")
        if framing == .chunked, let trailers {
            try require(message.trailers == HTTP1Forwarding.forwardableTrailers(trailers), "the forwarded \(what) trailers differ")
        }
    }
}
