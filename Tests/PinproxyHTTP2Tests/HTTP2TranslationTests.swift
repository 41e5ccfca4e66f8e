import PinproxyBase
import PinproxyHTTP1
@testable import PinproxyHTTP2
import PinproxyTestSupport
import Testing

/// Heads between HTTP/1.1 and HTTP/2 (RFC 9113 §8.2–§8.3).
@Suite("HTTP/2 ↔ HTTP/1.1 translation")
struct HTTP2TranslationTests {
    @Test("an HTTP/1.1 request becomes pseudo-header fields; Host becomes :authority; connection-specific fields go")
    func requestToHTTP2() {
        let head = HTTP1RequestHead(method: "POST", target: .origin("/a?b=1"), headers: [
            "Host": "example.com:8443", "Connection": "keep-alive, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5",
            "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Proxy-Connection": "close", "TE": "trailers, deflate",
            "Accept": "*/*", "Cookie": "a=1",
        ], framing: .chunked)
        let h2 = HTTP2RequestHead(http1: head)
        #expect(h2.method == "POST" && h2.scheme == "https" && h2.authority == "example.com:8443" && h2.path == "/a?b=1")
        #expect(h2.headers == ["accept": "*/*", "cookie": "a=1", "te": "trailers"])
    }

    @Test("an absolute-form target gives scheme and authority; CONNECT has neither scheme nor path")
    func requestTargets() throws {
        let url = HTTP1AbsoluteURL(scheme: "http", host: try HostName(validating: "example.org"), port: 8080, path: "/x")
        let absolute = HTTP2RequestHead(http1: HTTP1RequestHead(method: "GET", target: .absolute(url), headers: ["Host": "other"]))
        #expect(absolute.scheme == "http" && absolute.authority == "example.org:8080" && absolute.path == "/x")
        #expect(!absolute.headers.contains(name: "host"))
        let connect = HTTP2RequestHead(http1: HTTP1RequestHead(method: "CONNECT", target: .authority(host: try HostName(validating: "example.org"), port: 443)))
        #expect(connect.scheme == nil && connect.path == nil && connect.authority == "example.org:443")
        let back = try connect.http1Head(endStream: false)
        #expect(back.target == .authority(host: try HostName(validating: "example.org"), port: 443))
        #expect(back.framing == .none)
    }

    @Test("an HTTP/2 request becomes HTTP/1.1: Host from :authority, cookie crumbs joined, TE: trailers kept")
    func requestToHTTP1() throws {
        let h2 = HTTP2RequestHead(method: "GET", scheme: "https", authority: "example.com", path: "/p", headers: [
            "cookie": "a=1", "accept": "text/html", "cookie": "b=2", "host": "ignored.example", "te": "trailers",
        ])
        let head = try h2.http1Head(endStream: true)
        #expect(head.target == .origin("/p"))
        #expect(head.headers == ["Host": "example.com", "cookie": "a=1; b=2", "accept": "text/html", "te": "trailers"])
        #expect(head.framing == .none)
    }

    @Test("a request body is framed by content-length when known, chunked otherwise")
    func requestFraming() throws {
        let sized = try HTTP2RequestHead(method: "POST", scheme: "https", authority: "a", path: "/", headers: ["content-length": "12"])
            .http1Head(endStream: false)
        #expect(sized.framing == .contentLength(12))
        let streamed = try post("/").http1Head(endStream: false)
        #expect(streamed.framing == .chunked)
        #expect(streamed.headers.first(name: "transfer-encoding") == "chunked")
        #expect(throws: HTTP2Error.self) { try HTTP2RequestHead(method: "GET", scheme: "https", authority: "a", path: "x").http1Head(endStream: true) }
    }

    @Test("responses go both ways; 101 has no HTTP/2 form; bodiless statuses get no framing")
    func responses() throws {
        let h1 = HTTP1ResponseHead(status: 200, headers: ["Content-Type": "text/plain", "Connection": "close", "Transfer-Encoding": "chunked"],
                                   framing: .chunked)
        let h2 = try HTTP2ResponseHead(http1: h1)
        #expect(h2.status == 200 && h2.headers == ["content-type": "text/plain"])
        #expect(throws: HTTP2Error.self) { try HTTP2ResponseHead(http1: HTTP1ResponseHead(status: 101)) }

        let chunked = h2.http1Head(requestMethod: "GET", endStream: false)
        #expect(chunked.framing == .chunked && chunked.headers.first(name: "transfer-encoding") == "chunked")
        let empty = h2.http1Head(requestMethod: "GET", endStream: true)
        #expect(empty.framing == .contentLength(0) && empty.headers.first(name: "content-length") == "0")
        let sized = HTTP2ResponseHead(status: 200, headers: ["content-length": "5"]).http1Head(requestMethod: "GET", endStream: false)
        #expect(sized.framing == .contentLength(5))
        #expect(HTTP2ResponseHead(status: 200, headers: ["content-length": "5"]).http1Head(requestMethod: "HEAD", endStream: true).framing == .none)
        #expect(HTTP2ResponseHead(status: 304).http1Head(requestMethod: "GET", endStream: true).framing == .none)
        #expect(HTTP2ResponseHead(status: 204).http1Head(requestMethod: "GET", endStream: true).reason == "No Content")
    }

    @Test("HTTP/2 is written HTTP/2.0, as HAR files name it")
    func versionText() {
        #expect(HTTPVersion.http2.description == "HTTP/2.0")
    }

    @Test("trailers lose hop-by-hop and forbidden fields both ways")
    func trailers() {
        let trailers: HTTPHeaders = ["Grpc-Status": "0", "Content-Length": "3", "Connection": "close"]
        #expect(HTTP2Translation.http2Trailers(trailers) == ["grpc-status": "0"])
        #expect(HTTP2Translation.http1Trailers(["grpc-status": "0", "transfer-encoding": "x"]) == ["grpc-status": "0"])
    }

    @Test("a translated request goes through a session and arrives as sent")
    func throughSession() throws {
        let head = HTTP1RequestHead(method: "GET", target: .origin("/via"), headers: ["Host": "example.com", "Accept": "*/*", "Connection": "close"])
        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(HTTP2RequestHead(http1: head), endStream: true)
        var received: HTTP2RequestHead?
        pair.pump { side, event in
            if side == .server, case .request(stream, let head, true) = event { received = head }
        }
        let arrived = try #require(received)
        #expect(try arrived.http1Head(endStream: true).headers == ["Host": "example.com", "accept": "*/*"])
    }

    @Test("the session refuses to send invalid or connection-specific fields")
    func sendingChecks() throws {
        let client = try HTTP2Session(role: .client)
        var head = get("/")
        head.headers.add(name: "Connection", value: "close")
        #expect(throws: HTTP2Error.self) { _ = try client.sendRequest(head, endStream: true) }
        var bad = get("/")
        bad.headers.add(name: "x-bad", value: "a\r\nb")
        #expect(throws: HTTP2Error.self) { _ = try client.sendRequest(bad, endStream: true) }
        var upper = get("/")
        upper.headers.add(name: "X-Upper", value: "fine")
        let stream = try client.sendRequest(upper, endStream: true)
        let server = try HTTP2Session(role: .server)
        server.receive(client.takeOutput())
        let names = server.takeEvents().compactMap { event -> [String]? in
            if case .request(stream, let head, _) = event { return head.headers.fields.map(\.name) } else { return nil }
        }
        #expect(names == [["x-upper"]])
    }

    @Test("every connection-specific name is refused whatever its case; te: trailers passes, te: gzip does not", arguments: [
        ("Connection", "keep-alive", false), ("KEEP-ALIVE", "timeout=5", false), ("Proxy-Connection", "close", false),
        ("Transfer-Encoding", "chunked", false), ("Upgrade", "websocket", false), ("TE", "gzip", false),
        ("te", " Trailers ", true), ("x-connection", "close", true), ("upgrade-insecure-requests", "1", true),
    ])
    func connectionSpecificNames(name: String, value: String, allowed: Bool) throws {
        let client = try HTTP2Session(role: .client)
        var head = get("/")
        head.headers.add(name: name, value: value)
        do {
            _ = try client.sendRequest(head, endStream: true)
            #expect(allowed, "\(name): \(value) was sent")
        } catch {
            #expect(!allowed, "\(name): \(value) was refused: \(error)")
            #expect(error.reason.contains("'\(name)'"), "\(error)")
        }
    }

    @Test("field values that are not ASCII arrive as sent: UTF-8 as text, other bytes one Latin-1 scalar each")
    func nonASCIIValues() throws {
        let client = try HTTP2Session(role: .client)
        var head = get("/")
        head.headers.add(name: "x-text", value: "café ☕")
        let stream = try client.sendRequest(head, endStream: true)
        let server = try HTTP2Session(role: .server)
        server.receive(client.takeOutput())
        let values = server.takeEvents().compactMap { event -> [String]? in
            if case .request(stream, let head, _) = event { return head.headers.fields.map(\.value) } else { return nil }
        }
        #expect(values == [["café ☕"]])
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]  // "caf" and é in Latin-1: not UTF-8
        #expect(latin1.withUnsafeBufferPointer { HTTP2FieldText.string($0) } == "café")
        #expect(Array("plain".utf8).withUnsafeBufferPointer { HTTP2FieldText.string($0) } == "plain")
    }

    @Test("a translated response from a wire-safe head is sent without a second check, names lower-cased, hop-by-hop fields gone")
    func translatedResponseIsSentAsChecked() throws {
        let h1 = HTTP1ResponseHead(status: 200, headers: [
            "Server": "nginx", "Content-Type": "text/plain", "connection": "close, X-Hop", "X-Hop": "1", "ETag": "\"É\"",
            "Keep-Alive": "timeout=5", "Transfer-Encoding": "chunked", "x-lower": "v",
        ], framing: .chunked)
        let h2 = try HTTP2ResponseHead(http1: h1)
        #expect(h2.receivedFields.areChecked)
        #expect(h2.headers == ["server": "nginx", "content-type": "text/plain", "etag": "\"É\"", "x-lower": "v"])
        // A head whose bytes were never checked keeps the check on sending.
        let unsafe = try HTTP2ResponseHead(http1: HTTP1ResponseHead(status: 200, headers: HTTPHeaders([("X-Bad", "a\nb")])))
        #expect(!unsafe.receivedFields.areChecked)

        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(HTTP2RequestHead(method: "GET", scheme: "https", authority: "a", path: "/"), endStream: true)
        try pair.pump()
        #expect(throws: HTTP2Error.self) { try pair.server.sendResponse(unsafe, on: stream, endStream: true) }
        let sendable = try HTTP2ResponseHead(http1: HTTP1ResponseHead(status: 200, headers: ["Server": "nginx", "ETag": "\"x\"", "Connection": "close"]))
        try pair.server.sendResponse(sendable, on: stream, endStream: true)
        var received: HTTP2ResponseHead?
        pair.pump { side, event in
            if side == .client, case .response(stream, let head, _) = event { received = head }
        }
        #expect(received?.headers == ["server": "nginx", "etag": "\"x\""])
    }

    @Test("a wire-safe HTTP/1.1 response head is laid out for HTTP/2 straight from its fields, as its translated head would be",
          arguments: [1, 2, 3] as [UInt64])
    func fieldListStraightFromHTTP1(_ seed: UInt64) throws {
        let pool: [(String, [String])] = [
            ("Server", ["nginx"]), ("Content-Type", ["text/html", "application/json"]), ("ETag", ["\"abc\"", "W/\"É\""]),
            ("Connection", ["keep-alive", "close", "X-Hop", "close, X-Hop, x-other"]), ("X-Hop", ["1"]), ("x-other", ["2"]),
            ("Keep-Alive", ["timeout=5"]), ("TE", ["trailers", "gzip", "deflate, Trailers"]), ("Upgrade", ["h2c"]),
            ("Proxy-Connection", ["close"]), ("Transfer-Encoding", ["chunked"]), ("Set-Cookie", ["a=1", "b=2; Path=/"]),
            ("HOST", ["example.com"]), ("Cache-Control", ["no-cache"]), ("x-MiXeD-Case", ["v", ""]), ("Content-Length", ["0", "12"]),
        ]
        var random = SeededGenerator(state: seed)
        var compared = 0
        for _ in 0..<400 {
            let status = [100, 103, 200, 204, 206, 304, 404, 599][Int.random(in: 0..<8, using: &random)]
            var headers = HTTPHeaders()
            for _ in 0..<Int.random(in: 0..<10, using: &random) {
                let (name, values) = pool[Int.random(in: 0..<pool.count, using: &random)]
                headers.add(name: name, value: values[Int.random(in: 0..<values.count, using: &random)])
            }
            let head = HTTP1ResponseHead(status: status, headers: headers)
            let direct = try #require(HTTP2ResponseHead.fieldList(http1: head))
            let longWay = try HTTP2ResponseHead(http1: head).fieldList()
            #expect(Self.fields(direct) == Self.fields(longWay), "\(head.headers)")
            compared += 1
        }
        #expect(compared == 400)
        // Nothing straight for what has no HTTP/2 form or was never checked.
        #expect(HTTP2ResponseHead.fieldList(http1: HTTP1ResponseHead(status: 101)) == nil)
        #expect(HTTP2ResponseHead.fieldList(http1: HTTP1ResponseHead(status: 200, headers: HTTPHeaders([("X-Bad", "a\nb")]))) == nil)
    }

    @Test("an HTTP/1.1 response head sent over HTTP/2 arrives translated; 101 and unchecked bytes are refused")
    func sendResponseFromHTTP1() throws {
        let pair = try SessionPair()
        let stream = try pair.client.sendRequest(HTTP2RequestHead(method: "GET", scheme: "https", authority: "a", path: "/"), endStream: true)
        try pair.pump()
        #expect(throws: HTTP2Error.self) { try pair.server.sendResponse(http1: HTTP1ResponseHead(status: 101), on: stream, endStream: false) }
        let unsafe = HTTP1ResponseHead(status: 200, headers: HTTPHeaders([("X-Bad", "a\nb")]))
        #expect(throws: HTTP2Error.self) { try pair.server.sendResponse(http1: unsafe, on: stream, endStream: true) }
        let interim = HTTP1ResponseHead(status: 103, headers: ["Link": "</a.css>; rel=preload"])
        #expect(throws: HTTP2Error.self) { try pair.server.sendResponse(http1: interim, on: stream, endStream: true) }
        try pair.server.sendResponse(http1: interim, on: stream, endStream: false)
        let head = HTTP1ResponseHead(status: 200, headers: [
            "Server": "nginx", "Connection": "keep-alive, X-Hop", "X-Hop": "1", "TE": "trailers", "ETag": "\"x\"",
        ])
        try pair.server.sendResponse(http1: head, on: stream, endStream: true)
        var received: [HTTP2ResponseHead] = []
        var ended = false
        pair.pump { side, event in
            if side == .client, case .response(stream, let head, let endStream) = event {
                received.append(head)
                ended = endStream
            }
        }
        #expect(received.map(\.status) == [103, 200])
        #expect(received.first?.headers == ["link": "</a.css>; rel=preload"])
        #expect(received.last?.headers == ["server": "nginx", "etag": "\"x\"", "te": "trailers"])
        #expect(ended)
        #expect(throws: HTTP2Error.self) { try pair.server.sendResponse(http1: head, on: stream, endStream: true) }
    }

    /// A field list's names and values, as nghttp2 is handed them.
    private static func fields(_ list: HTTP2FieldList) -> [String] {
        list.withNV { nva, count in
            (0..<count).map { index in
                let field = nva[index]
                let name = String(decoding: UnsafeBufferPointer(start: field.name, count: field.namelen), as: UTF8.self)
                let value = String(decoding: UnsafeBufferPointer(start: field.value, count: field.valuelen), as: UTF8.self)
                return "\(name): \(value)"
            }
        }
    }

    @Test("ASCII lower-casing leaves other bytes alone and copies nothing when there is nothing to change")
    func asciiLowercased() {
        #expect("Content-Type".asciiLowercased == "content-type")
        #expect("x-already-lower".asciiLowercased == "x-already-lower")
        #expect("X-ÜBER-@[`{".asciiLowercased == "x-Über-@[`{")
        #expect("".asciiLowercased == "")
    }

    @Test("a request without :authority takes Host from its host field; OPTIONS * keeps its asterisk")
    func hostFieldAndAsterisk() throws {
        let noAuthority = try HTTP2RequestHead(method: "GET", scheme: "https", authority: nil, path: "/p", headers: ["host": "example.com"])
            .http1Head(endStream: true)
        #expect(noAuthority.headers == ["Host": "example.com"])
        let options = try HTTP2RequestHead(method: "OPTIONS", scheme: "https", authority: "example.com", path: "*").http1Head(endStream: true)
        #expect(options.target == .asterisk)
    }

    @Test("a CONNECT authority needs a port from 1 to 65535", arguments: [
        ("example.org:0", false), ("example.org:65536", false), ("example.org", false), ("example.org:1", true),
        ("example.org:65535", true), ("[2001:db8::1]:443", true),
    ])
    func connectPorts(authority: String, valid: Bool) throws {
        let head = HTTP2RequestHead(method: "CONNECT", scheme: nil, authority: authority, path: nil)
        if valid {
            let translated = try head.http1Head(endStream: false)
            #expect(translated.target.description == authority)
        } else {
            #expect(throws: HTTP2Error.self) { try head.http1Head(endStream: false) }
        }
    }

    @Test("error codes are named as RFC 9113 names them; unknown ones are shown in hex")
    func errorCodeNames() {
        #expect(HTTP2ErrorCode.enhanceYourCalm.description == "ENHANCE_YOUR_CALM")
        #expect(HTTP2ErrorCode.http11Required.description == "HTTP_1_1_REQUIRED")
        #expect(HTTP2ErrorCode(0x1234).description == "0x1234")
    }
}
