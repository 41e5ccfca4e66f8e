import PinproxyBase

/// An HTTP/1.x protocol version; only 1.0 and 1.1 are parsed.
public struct HTTPVersion: Hashable, Sendable, Codable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// `HTTP/1.1`, as written on the wire and in HAR files.
    public var description: String {
        // Literals for the two versions parsed: no string built per exchange.
        if major == 1 && minor == 1 { return "HTTP/1.1" }
        if major == 1 && minor == 0 { return "HTTP/1.0" }
        return "HTTP/\(major).\(minor)"
    }
}

/// How the body of a message is delimited on the wire (RFC 9112 §6.3).
public enum HTTP1BodyFraming: Hashable, Sendable {
    /// No body at all (requests without length, HEAD responses, 1xx/204/304, CONNECT).
    case none
    /// Exactly this many bytes.
    case contentLength(Int)
    /// `Transfer-Encoding: chunked`, possibly followed by trailers.
    case chunked
    /// A response without length: the body ends when the server closes.
    case untilClose
}

/// The request target in one of its four forms (RFC 9112 §3.2).
public enum HTTP1RequestTarget: Hashable, Sendable, CustomStringConvertible {
    /// `/path?query`, as written.
    case origin(String)
    /// `http://host:port/path?query`, sent to a forward proxy.
    case absolute(HTTP1AbsoluteURL)
    /// `host:port`, the target of CONNECT.
    case authority(host: HostName, port: Int)
    /// `*`, only for `OPTIONS`.
    case asterisk

    /// The target as it is written on a request line.
    public var description: String {
        switch self {
        case .origin(let path): return path
        case .absolute(let url): return url.description
        case .authority(let host, let port): return "\(host.uriHost):\(port)"
        case .asterisk: return "*"
        }
    }

    /// The origin-form path (`/` for authority and asterisk forms' sake of logging).
    public var path: String {
        switch self {
        case .origin(let path): return path
        case .absolute(let url): return url.path
        case .authority, .asterisk: return description
        }
    }
}

/// The parts of an absolute-form target a forward proxy needs.
public struct HTTP1AbsoluteURL: Hashable, Sendable, CustomStringConvertible {
    /// Lower-cased `http` or `https`.
    public var scheme: String
    public var host: HostName
    /// The explicit port, or the scheme's default (80, 443).
    public var port: Int
    /// The origin-form remainder: `/path?query`, never empty.
    public var path: String

    public init(scheme: String, host: HostName, port: Int, path: String) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
    }

    /// The default port of ``scheme``.
    public var defaultPort: Int { scheme == "https" ? 443 : 80 }
    /// `host` or `host:port` when the port is not the default, as a Host header wants it.
    public var authority: String { port == defaultPort ? host.uriHost : "\(host.uriHost):\(port)" }
    public var description: String { "\(scheme)://\(authority)\(path)" }
}

/// The head of a request: request line and header fields.
public struct HTTP1RequestHead: Hashable, Sendable {
    /// The request line and the body's framing, shared by every copy of a
    /// head: a head goes from the parser to the exchange, to the upstream
    /// leg (which keeps it to replay the request) and to the serialisers,
    /// and each copy of these parts retained and released every text in
    /// them. They are never changed in place: a change makes a new line.
    /// (The fields stay in the head itself, read and changed there without
    /// a copy: in a box, every read of them through a method copied them out.)
    private final class Line: Sendable {
        let method: String
        let target: HTTP1RequestTarget
        let version: HTTPVersion
        let framing: HTTP1BodyFraming

        init(method: String, target: HTTP1RequestTarget, version: HTTPVersion, framing: HTTP1BodyFraming) {
            self.method = method
            self.target = target
            self.version = version
            self.framing = framing
        }
    }

    private var line: Line

    /// The method, case-sensitive as RFC 9110 §9.1 says (`GET`, `CONNECT`, ...).
    public var method: String {
        _read { yield line.method }
        set { line = Line(method: newValue, target: line.target, version: line.version, framing: line.framing) }
    }

    public var target: HTTP1RequestTarget {
        _read { yield line.target }
        set { line = Line(method: line.method, target: newValue, version: line.version, framing: line.framing) }
    }

    public var version: HTTPVersion {
        _read { yield line.version }
        set { line = Line(method: line.method, target: line.target, version: newValue, framing: line.framing) }
    }

    /// Field lines in order, with their case and duplicates.
    public var headers: HTTPHeaders

    /// How the body that follows is delimited; the parser sets it from the headers.
    public var framing: HTTP1BodyFraming {
        _read { yield line.framing }
        set { line = Line(method: line.method, target: line.target, version: line.version, framing: newValue) }
    }

    public init(
        method: String, target: HTTP1RequestTarget, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(), framing: HTTP1BodyFraming = .none
    ) {
        line = Line(method: method, target: target, version: version, framing: framing)
        self.headers = headers
    }

    public static func == (lhs: HTTP1RequestHead, rhs: HTTP1RequestHead) -> Bool {
        (lhs.line === rhs.line
            || (lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version && lhs.framing == rhs.framing))
            && lhs.headers == rhs.headers
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(target)
        hasher.combine(version)
        hasher.combine(headers)
        hasher.combine(framing)
    }

    /// Whether the connection stays open after this exchange, as far as the client is concerned:
    /// HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool { HTTP1Semantics.keepAlive(version: version, headers: headers) }

    /// Whether the client waits for `100 Continue` before sending the body.
    public var expectsContinue: Bool {
        version == .http1_1 && headers.containsToken(.expect, "100-continue")
    }

    /// The protocols named in `Upgrade` when `Connection` also lists `upgrade`, else empty.
    public var upgradeProtocols: [String] {
        guard headers.containsToken(.connection, "upgrade") else { return [] }
        return headers["Upgrade"].flatMap { $0.split(separator: ",").map { $0.trimmingHTTPWhitespace() } }
            .filter { !$0.isEmpty }
    }

    /// Whether this request asks to switch protocols (WebSocket, h2c, ...):
    /// whether ``upgradeProtocols`` is non-empty, answered without building it.
    public var requestsUpgrade: Bool {
        guard headers.containsToken(.connection, "upgrade") else { return false }
        // An element survives trimming exactly when the value has a scalar
        // other than comma, space and tab; non-ASCII bytes are such scalars.
        var index = headers.firstIndex(.upgrade)
        while let found = index {
            if headers.fields[found].value.utf8.contains(where: { $0 != Byte.comma && $0 != Byte.space && $0 != Byte.tab }) {
                return true
            }
            index = headers.firstIndex(.upgrade, from: found + 1)
        }
        return false
    }

    public var isConnect: Bool { method == "CONNECT" }
}

/// The head of a response: status line and header fields.
public struct HTTP1ResponseHead: Hashable, Sendable {
    public var version: HTTPVersion
    public var status: Int
    /// The reason phrase as received (may be empty).
    public var reason: String
    public var headers: HTTPHeaders
    /// How the body that follows is delimited; the parser sets it from the status, the request method and the headers.
    public var framing: HTTP1BodyFraming

    public init(
        version: HTTPVersion = .http1_1, status: Int, reason: String? = nil,
        headers: HTTPHeaders = HTTPHeaders(), framing: HTTP1BodyFraming = .none
    ) {
        self.version = version
        self.status = status
        self.reason = reason ?? HTTP1Response.reasonPhrase(for: status)
        self.headers = headers
        self.framing = framing
    }

    /// Whether the server keeps the connection open after this response.
    /// A response delimited by closing the connection never keeps it.
    public var keepAlive: Bool {
        framing != .untilClose && HTTP1Semantics.keepAlive(version: version, headers: headers)
    }

    /// A 1xx interim response; the final response is still to come (except after 101).
    public var isInformational: Bool { (100..<200).contains(status) }
}

enum HTTP1Semantics {
    static func keepAlive(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        if headers.containsToken(.connection, "close") { return false }
        if version == .http1_1 { return true }
        return headers.containsToken(.connection, "keep-alive")
    }
}
