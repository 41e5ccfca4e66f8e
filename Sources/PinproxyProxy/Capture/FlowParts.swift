import Foundation
import PinproxyHTTP1
import Synchronization

/// Flow identifiers: UUID-shaped, unique in the process and, through a
/// random per-process half, across runs.
///
/// `UUID()` reads /dev/urandom on every call on Linux (open, read, close):
/// three system calls per exchange on the proxy's hot path.
public enum FlowID {
    private static let base: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    private static let counter = Atomic<UInt64>(0)
    private static let digits: StaticString = "0123456789ABCDEF"

    /// `XXXXXXXX-XXXX-4XXX-`: the first eight bytes of every identifier, from
    /// the high half of ``base`` (low byte first), formatted once.
    private static let prefix: [UInt8] = {
        var text: [UInt8] = []
        for i in 0..<8 {
            if i == 4 || i == 6 { text.append(UInt8(ascii: "-")) }
            var byte = UInt8(truncatingIfNeeded: base.0 >> (8 * i))
            if i == 6 { byte = byte & 0x0f | 0x40 }  // version 4
            text.append(digits.utf8Start[Int(byte >> 4)])
            text.append(digits.utf8Start[Int(byte & 0x0f)])
        }
        text.append(UInt8(ascii: "-"))
        return text
    }()

    /// A new identifier.
    public static func next() -> String {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let mixed = base.1 ^ n
        // Formatted by hand: UUID's own formatting went through snprintf and
        // showed up in the proxy's per-request profile. The first half is
        // the same for every identifier and copied (formatting it each time
        // was ~250 instructions per flow).
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = prefix.withUnsafeBufferPointer { _ = out.initialize(fromContentsOf: $0); return $0.count }
            // The last eight bytes, from `mixed`, high byte first.
            for i in 0..<8 {
                if i == 2 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                var byte = UInt8(truncatingIfNeeded: mixed >> (8 * (7 - i)))
                if i == 0 { byte = byte & 0x3f | 0x80 }  // RFC 4122 variant
                out[o] = digits.utf8Start[Int(byte >> 4)]
                out[o + 1] = digits.utf8Start[Int(byte & 0x0f)]
                o += 2
            }
            return o
        }
    }
}

/// A header field as captured: the parsed field itself, so a flow shares the
/// head's field list instead of copying it for every exchange.
public typealias FlowHeader = HTTPHeaders.Field

extension HTTPHeaders.Field: Codable {
    private enum CodingKeys: String, CodingKey { case name, value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try container.decode(String.self, forKey: .name), value: try container.decode(String.self, forKey: .value))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(value, forKey: .value)
    }
}

extension Array where Element == FlowHeader {
    /// The fields of `headers`, in order.
    public init(_ headers: HTTPHeaders) { self = headers.fields }
}

/// What the two sides of a flow have alike after their start lines: the version, the header
/// fields, the sizes and the captured body. The exports write these once for either side.
public protocol FlowMessage: Hashable, Sendable {
    /// `HTTP/1.1`, `HTTP/2`.
    var httpVersion: String { get }
    var headers: [FlowHeader] { get }
    /// The size of the head in bytes, -1 when unknown.
    var headersSize: Int { get }
    /// Bytes of body (after removing chunked framing).
    var bodySize: Int { get }
    /// The first bytes of the body, when body capture is on.
    var body: CapturedBody? { get }
}

extension FlowMessage {
    /// The first value of the field `name` (case-insensitive), or empty.
    public func firstValue(of name: String) -> String {
        headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value ?? ""
    }

    /// The `Content-Type` field's value, or empty.
    public var mimeType: String { firstValue(of: "Content-Type") }
}

/// The request side of a flow.
public struct FlowRequest: FlowMessage, Codable {
    public var method: String
    /// The absolute URL, `https://host/path?query`.
    public var url: String
    /// `HTTP/1.1`, `HTTP/2`.
    public var httpVersion: String
    public var headers: [FlowHeader]
    /// The size of the head in bytes, -1 when unknown.
    public var headersSize: Int
    /// Bytes of body (after removing chunked framing).
    public var bodySize: Int
    /// The first bytes of the body, when body capture is on.
    public var body: CapturedBody?

    // Not inlined: a request or response is a dozen words, and one built
    // inline was first made on the stack, then copied into the flow and the
    // original destroyed (~250 instructions per flow); an initialiser that
    // is called writes it where it goes.
    @inline(never)
    public init(
        method: String, url: String, httpVersion: String = "HTTP/1.1", headers: [FlowHeader] = [],
        headersSize: Int = -1, bodySize: Int = 0, body: CapturedBody? = nil
    ) {
        self.method = method
        self.url = url
        self.httpVersion = httpVersion
        self.headers = headers
        self.headersSize = headersSize
        self.bodySize = bodySize
        self.body = body
    }
}

/// The response side of a flow.
public struct FlowResponse: FlowMessage, Codable {
    public var status: Int
    public var reason: String
    public var httpVersion: String
    public var headers: [FlowHeader]
    public var headersSize: Int
    public var bodySize: Int
    public var body: CapturedBody?

    // Not inlined, as ``FlowRequest/init(method:url:httpVersion:headers:headersSize:bodySize:body:)``.
    @inline(never)
    public init(
        status: Int, reason: String, httpVersion: String = "HTTP/1.1", headers: [FlowHeader] = [],
        headersSize: Int = -1, bodySize: Int = 0, body: CapturedBody? = nil
    ) {
        self.status = status
        self.reason = reason
        self.httpVersion = httpVersion
        self.headers = headers
        self.headersSize = headersSize
        self.bodySize = bodySize
        self.body = body
    }

    /// This response with its body's size and first bytes (the exchange
    /// keeps the head while the body passes; its flow gets this).
    func withBody(size: Int, captured: CapturedBody?) -> FlowResponse {
        // Made by the initialiser: a changed copy of `self` was copied twice more.
        FlowResponse(status: status, reason: reason, httpVersion: httpVersion, headers: headers, headersSize: headersSize,
                     bodySize: size, body: captured)
    }
}

/// Phases of an exchange in milliseconds, with HAR's meaning; -1 when a phase
/// did not happen (a reused connection has no connect or TLS time).
public struct FlowTimings: Hashable, Sendable, Codable {
    /// Waiting for a connection to become available.
    public var blocked: Double
    /// Resolving the upstream host name.
    public var dns: Double
    /// Opening the upstream TCP connection (HAR includes ``ssl`` in it).
    public var connect: Double
    /// The upstream TLS handshake.
    public var ssl: Double
    /// Sending the request upstream.
    public var send: Double
    /// Waiting for the first byte of the response.
    public var wait: Double
    /// Reading the response.
    public var receive: Double

    public init(
        blocked: Double = -1, dns: Double = -1, connect: Double = -1, ssl: Double = -1,
        send: Double = 0, wait: Double = 0, receive: Double = 0
    ) {
        self.blocked = blocked
        self.dns = dns
        self.connect = connect
        self.ssl = ssl
        self.send = send
        self.wait = wait
        self.receive = receive
    }

    /// The whole exchange: the sum of the phases that happened (ssl is within connect).
    public var total: Double {
        max(0, blocked) + max(0, dns) + max(0, connect) + max(0, send) + max(0, wait) + max(0, receive)
    }
}

/// The first bytes of a body, kept for the exports.
public struct CapturedBody: Hashable, Sendable, Codable {
    /// At most the capture limit's worth of bytes (base64 in JSON).
    public var data: Data
    /// Whether the body was longer than what was kept.
    public var truncated: Bool

    public init(data: Data, truncated: Bool) {
        self.data = data
        self.truncated = truncated
    }

    /// The bytes as UTF-8 text, or nil when they are not valid UTF-8.
    public var text: String? { String(validating: data, as: UTF8.self) }
}

/// Counts a streamed body and keeps its first `limit` bytes.
///
/// Feed it every body slice as it passes; memory stays bounded by the limit
/// however large the body is.
public struct BodyCapture: Hashable, Sendable {
    /// The most bytes kept; 0 turns capture off (sizes are still counted).
    public let limit: Int
    /// Every byte seen so far.
    public private(set) var size = 0
    private var prefix: [UInt8] = []

    public init(limit: Int) { self.limit = max(0, limit) }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        size += bytes.count
        let room = limit - prefix.count
        if room > 0 { prefix.append(contentsOf: bytes.prefix(room)) }
    }

    /// What was kept, or nil when capture is off or the body was empty.
    public var captured: CapturedBody? {
        guard limit > 0, size > 0 else { return nil }
        return CapturedBody(data: Data(prefix), truncated: size > prefix.count)
    }
}
