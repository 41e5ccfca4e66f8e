/// Why a byte stream is not acceptable HTTP/1.1, and the status to answer with.
///
/// Errors are compared by ``code``; ``status`` is what the proxy sends back
/// (with ``HTTP1Response/error(status:reason:)``) before it closes the
/// connection, and ``reason`` says in plain words what was wrong.
public struct HTTP1Error: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is; new codes are added as `static let`s.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }
    }

    public var code: Code
    /// The HTTP status to answer with (400, 414, 431, 501, 505, ...).
    public var status: Int
    /// A plain-words explanation, suitable for a log line and a response body.
    public var reason: String
    public var file: String
    public var line: Int

    public init(_ code: Code, status: Int, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.status = status
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String { "\(status) \(HTTP1Response.reasonPhrase(for: status)): \(reason)" }

    public static func == (lhs: HTTP1Error, rhs: HTTP1Error) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension HTTP1Error.Code {
    /// The bytes are not an HTTP/1.x message at all (400).
    public static let malformed = Self("malformed")
    /// A TLS record arrived on a plain-text HTTP port (400).
    public static let tlsOnPlainPort = Self("tls-on-plain-port")
    /// The request target is longer than the request-line limit (414).
    public static let uriTooLong = Self("uri-too-long")
    /// A header line, the header block or the header count is over its limit (431).
    public static let headerTooLarge = Self("header-too-large")
    /// The message is framed ambiguously: conflicting Content-Length, or
    /// Content-Length together with Transfer-Encoding (400, RFC 9112 §6.3).
    public static let ambiguousFraming = Self("ambiguous-framing")
    /// A transfer coding other than `chunked` (501).
    public static let unsupportedTransferCoding = Self("unsupported-transfer-coding")
    /// An HTTP version other than 1.0 or 1.1 (505).
    public static let unsupportedVersion = Self("unsupported-version")
    /// A chunk-size line or chunk delimiter is malformed (400).
    public static let badChunk = Self("bad-chunk")
    /// The request target does not fit the method (bad CONNECT authority, bad URL) (400).
    public static let badTarget = Self("bad-target")
    /// The peer closed the connection in the middle of a message (no status is sent).
    public static let truncated = Self("truncated")
    /// Bytes were fed after the parser stopped (after an upgrade or an error).
    public static let stopped = Self("stopped")
}

extension HTTP1Error {
    package static func malformed(_ reason: String, file: String = #fileID, line: Int = #line) -> HTTP1Error {
        HTTP1Error(.malformed, status: 400, reason, file: file, line: line)
    }
}
