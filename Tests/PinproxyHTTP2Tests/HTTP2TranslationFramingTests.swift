import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// Framing that a translated head must not get: a length from conflicting
/// `content-length` fields, or any length or chunking on a 204.
@Suite("HTTP/2 → HTTP/1.1 framing edges")
struct HTTP2TranslationFramingTests {
    @Test("conflicting content-length fields give no length: the body goes chunked and the fields go")
    func conflictingLengths() throws {
        let head = try HTTP2RequestHead(method: "POST", scheme: "https", authority: "a", path: "/",
                                        headers: ["content-length": "5", "content-length": "6"]).http1Head(endStream: false)
        #expect(head.framing == .chunked)
        #expect(head.headers["content-length"].isEmpty)
        let agreeing = try HTTP2RequestHead(method: "POST", scheme: "https", authority: "a", path: "/",
                                            headers: ["content-length": "5", "content-length": "5"]).http1Head(endStream: false)
        #expect(agreeing.framing == .contentLength(5))
        #expect(agreeing.headers["content-length"] == ["5"])
    }

    @Test("a 204 gets neither Content-Length nor chunking, ended or not; 304 and HEAD keep their length")
    func noContent() {
        for endStream in [true, false] {
            let head = HTTP2ResponseHead(status: 204).http1Head(requestMethod: "GET", endStream: endStream)
            #expect(head.framing == .none)
            #expect(head.headers["content-length"].isEmpty && head.headers["transfer-encoding"].isEmpty)
        }
        let notModified = HTTP2ResponseHead(status: 304, headers: ["content-length": "120"]).http1Head(requestMethod: "GET", endStream: true)
        #expect(notModified.framing == .none && notModified.headers["content-length"] == ["120"])
    }

    @Test("content-length: 0 on a stream not ended is a length of zero, not a chunked body")
    func zeroLength() throws {
        let request = try HTTP2RequestHead(method: "POST", scheme: "https", authority: "a", path: "/", headers: ["content-length": "0"])
            .http1Head(endStream: false)
        #expect(request.framing == .contentLength(0))
        #expect(request.headers["content-length"] == ["0"] && request.headers["transfer-encoding"].isEmpty)
        let response = HTTP2ResponseHead(status: 200, headers: ["content-length": "0"]).http1Head(requestMethod: "GET", endStream: false)
        #expect(response.framing == .contentLength(0))
        #expect(response.headers["content-length"] == ["0"] && response.headers["transfer-encoding"].isEmpty)
    }

    @Test("a negative content-length gives no length: the body goes chunked and the field goes")
    func negativeLength() throws {
        let head = try HTTP2RequestHead(method: "POST", scheme: "https", authority: "a", path: "/", headers: ["content-length": "-1"])
            .http1Head(endStream: false)
        #expect(head.framing == .chunked)
        #expect(head.headers["content-length"].isEmpty)
        let response = HTTP2ResponseHead(status: 200, headers: ["content-length": "-5"]).http1Head(requestMethod: "GET", endStream: true)
        #expect(response.framing == .contentLength(0) && response.headers["content-length"] == ["0"])
    }

    @Test("a 1xx response gets neither Content-Length nor chunking")
    func informational() {
        let head = HTTP2ResponseHead(status: 103, headers: ["link": "</style.css>; rel=preload"]).http1Head(requestMethod: "GET", endStream: false)
        #expect(head.framing == .none)
        #expect(head.headers == ["link": "</style.css>; rel=preload"])
    }
}
