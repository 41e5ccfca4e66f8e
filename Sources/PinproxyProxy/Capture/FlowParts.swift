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

    /// A new identifier.
    public static func next() -> String {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let (high, low) = base
        let mixed = low ^ n
        // Byte i of the UUID: the first eight from `high` (low byte first),
        // the last eight from `mixed` (high byte first).
        func byte(_ i: Int) -> UInt8 {
            let value = i < 8 ? UInt8(truncatingIfNeeded: high >> (8 * i)) : UInt8(truncatingIfNeeded: mixed >> (8 * (15 - i)))
            switch i {
            case 6: return value & 0x0f | 0x40  // version 4
            case 8: return value & 0x3f | 0x80  // RFC 4122 variant
            default: return value
            }
        }
        // Formatted by hand: UUID's own formatting went through snprintf and
        // showed up in the proxy's per-request profile.
        let digits: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o += 1
                }
                let b = byte(i)
                out[o] = digits.utf8Start[Int(b >> 4)]
                out[o + 1] = digits.utf8Start[Int(b & 0x0f)]
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

/// The TLS connection between client and proxy.
public struct ClientTLSDetails: Hashable, Sendable, Codable {
    /// The server name the client sent, if any.
    public var sni: String?
    /// `TLSv1.3`.
    public var version: String?
    public var cipher: String?
    public var alpn: String?
    /// The SPKI pin (`sha256/...`) of the forged leaf shown to the client.
    public var forgedLeafPin: String?
    /// The forged leaf's serial number in hex.
    public var forgedLeafSerial: String?
    /// The attack profile that served the client (`forge`, `passthrough`, ...).
    public var profile: String?

    public init(
        sni: String? = nil, version: String? = nil, cipher: String? = nil, alpn: String? = nil,
        forgedLeafPin: String? = nil, forgedLeafSerial: String? = nil, profile: String? = nil
    ) {
        self.sni = sni
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.forgedLeafPin = forgedLeafPin
        self.forgedLeafSerial = forgedLeafSerial
        self.profile = profile
    }
}

/// The TLS connection between proxy and origin.
public struct UpstreamTLSDetails: Hashable, Sendable, Codable {
    public var version: String?
    public var cipher: String?
    public var alpn: String?
    /// Whether the chain and host name verified against the upstream trust store.
    public var verified: Bool
    /// The verifier's reason when ``verified`` is false (or why verification was skipped).
    public var verifierReason: String?
    /// The chain the origin sent, leaf first.
    public var chain: [CertificateSummary]
    /// Whether the handshake resumed an earlier session: the chain and the
    /// verification are those of the full handshake that made it (absent in
    /// captures written before resumption was recorded).
    public var resumed: Bool?

    public init(
        version: String? = nil, cipher: String? = nil, alpn: String? = nil, verified: Bool,
        verifierReason: String? = nil, chain: [CertificateSummary] = [], resumed: Bool? = nil
    ) {
        self.version = version
        self.cipher = cipher
        self.alpn = alpn
        self.verified = verified
        self.verifierReason = verifierReason
        self.chain = chain
        self.resumed = resumed
    }
}

/// The parts of a certificate worth showing in a capture.
public struct CertificateSummary: Hashable, Sendable, Codable {
    public var subject: String
    public var issuer: String
    /// Hex serial number.
    public var serial: String
    public var notBefore: Date?
    public var notAfter: Date?
    /// Subject alternative names as `DNS:...` / `IP:...`.
    public var subjectAlternativeNames: [String]
    /// `sha256/...` of the SubjectPublicKeyInfo.
    public var spkiPin: String?

    public init(
        subject: String, issuer: String, serial: String, notBefore: Date? = nil, notAfter: Date? = nil,
        subjectAlternativeNames: [String] = [], spkiPin: String? = nil
    ) {
        self.subject = subject
        self.issuer = issuer
        self.serial = serial
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectAlternativeNames = subjectAlternativeNames
        self.spkiPin = spkiPin
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
