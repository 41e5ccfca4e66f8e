import PinproxyHTTP1
import PinproxyHTTP2

/// The one request the built-in client sends once it accepts, in a form
/// either protocol can carry: HTTP/1.1 text, or an HTTP/2 head on a stream.
public struct ClientRequest: Sendable {
    public var method: String
    /// `api.example.com:8443`: HTTP/1.1's `Host`, HTTP/2's `:authority`.
    public var authority: String
    /// Origin form: `/account`.
    public var path: String
    /// Regular fields, in order (no `Host`: ``authority`` is written as the protocol wants it).
    public var headers: [(name: String, value: String)]

    public init(method: String, authority: String, path: String, headers: [(name: String, value: String)]) {
        self.method = method
        self.authority = authority
        self.path = path
        self.headers = headers
    }

    /// The request as HTTP/1.1 bytes; `Connection: close`, as the client closes after one exchange.
    public var http1: [UInt8] {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(authority)\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        return Array((text + "Connection: close\r\n\r\n").utf8)
    }

    /// The request as an HTTP/2 head: names lower-cased, `Host` becomes `:authority`
    /// (RFC 9113 §8.3.1); the client ends the connection with GOAWAY, not a field.
    public var http2: HTTP2RequestHead {
        HTTP2RequestHead(method: method, scheme: "https", authority: authority, path: path,
                         headers: HTTPHeaders(headers.map { ($0.name.lowercased(), $0.value) }))
    }
}
