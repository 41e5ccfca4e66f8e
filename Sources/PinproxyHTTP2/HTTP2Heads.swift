import PinproxyHTTP1

/// The identifier of one HTTP/2 stream: odd when the client opened it.
public struct HTTP2StreamID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Stream 0: the connection itself.
    public static let connection = HTTP2StreamID(0)

    public static func < (lhs: HTTP2StreamID, rhs: HTTP2StreamID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}

/// The head of an HTTP/2 request: its pseudo-header fields and its regular fields.
///
/// A CONNECT request has only ``method`` and ``authority`` (RFC 9113 §8.5);
/// every other request has a ``scheme`` and a ``path``. Regular field names
/// are lower case on the wire; received heads have been validated by nghttp2
/// (RFC 9113 §8.2, §8.3).
public struct HTTP2RequestHead: Hashable, Sendable {
    /// `:method`.
    public var method: String
    /// `:scheme` (`https`, `http`); nil for CONNECT.
    public var scheme: String?
    /// `:authority`; HTTP/1.1's `Host` in HTTP/2 (RFC 9113 §8.3.1).
    public var authority: String?
    /// `:path`: origin form, or `*` for `OPTIONS *`; nil for CONNECT.
    public var path: String?
    /// Regular fields in order, names lower case.
    public var headers: HTTPHeaders { didSet { receivedFields.areChecked = false } }
    /// Whether ``headers`` are as nghttp2 received and checked them.
    var receivedFields = HTTP2ReceivedFields()

    public init(method: String, scheme: String?, authority: String?, path: String?, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.headers = headers
    }

    /// A head of fields nghttp2 received and checked (``HTTP2ReceivedFields``),
    /// marked so as it is made: made first and marked after, the head was
    /// copied and the copy destroyed, for every request received.
    init(method: String, scheme: String?, authority: String?, path: String?, receivedHeaders: HTTPHeaders) {
        self.init(method: method, scheme: scheme, authority: authority, path: path, headers: receivedHeaders)
        receivedFields.areChecked = true
    }

    /// Pseudo-header fields first, then the regular ones, as sent on the wire.
    var wireFields: [(name: String, value: String)] {
        // One allocation: this runs for every relayed request.
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(4 + headers.count)
        fields.append((":method", method))
        if let scheme { fields.append((":scheme", scheme)) }
        if let authority { fields.append((":authority", authority)) }
        if let path { fields.append((":path", path)) }
        for field in headers.fields { fields.append((field.name, field.value)) }
        return fields
    }

    /// The fields to send: a received head's as they are (``HTTP2ReceivedFields``),
    /// laid out at once; any other head's checked first.
    /// `authority` replaces the head's own `:authority` (a relay names the
    /// origin): the head is sent as it is, not copied to be changed first.
    func fieldList(authority replacement: String? = nil) throws(HTTP2Error) -> HTTP2FieldList {
        guard receivedFields.areChecked else {
            guard let replacement else { return try HTTP2FieldList(sending: wireFields) }
            var head = self
            head.authority = replacement
            return try HTTP2FieldList(sending: head.wireFields)
        }
        // Taken out one by one: a closure that used the head's own would
        // copy the whole head (its fields' storage with it) and destroy the copy.
        let method = method, scheme = scheme, path = path
        let authority = replacement ?? authority
        let fields = headers.fields
        var size = 7 + method.utf8.count + HTTP2FieldList.byteCount(fields)
        if let scheme { size += 7 + scheme.utf8.count }
        if let authority { size += 10 + authority.utf8.count }
        if let path { size += 5 + path.utf8.count }
        return HTTP2FieldList(count: 4 + fields.count, byteCount: size) { list in
            list.add(name: ":method", value: method)
            if let scheme { list.add(name: ":scheme", value: scheme) }
            if let authority { list.add(name: ":authority", value: authority) }
            if let path { list.add(name: ":path", value: path) }
            list.add(fields)
        }
    }

}

/// The head of an HTTP/2 response: `:status` and the regular fields.
public struct HTTP2ResponseHead: Hashable, Sendable {
    /// `:status`.
    public var status: Int
    /// Regular fields in order, names lower case.
    public var headers: HTTPHeaders { didSet { receivedFields.areChecked = false } }
    /// Whether ``headers`` are as nghttp2 received and checked them.
    var receivedFields = HTTP2ReceivedFields()

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
    }

    /// A head of fields nghttp2 received and checked, marked so as it is
    /// made (see ``HTTP2RequestHead/init(method:scheme:authority:path:receivedHeaders:)``).
    init(status: Int, receivedHeaders: HTTPHeaders) {
        self.init(status: status, headers: receivedHeaders)
        receivedFields.areChecked = true
    }

    /// A 1xx interim response; the final response is still to come.
    public var isInformational: Bool { (100..<200).contains(status) }

    var wireFields: [(name: String, value: String)] {
        // One allocation: this runs for every relayed response.
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(1 + headers.count)
        fields.append((":status", String(status)))
        for field in headers.fields { fields.append((field.name, field.value)) }
        return fields
    }

    /// The fields to send, as ``HTTP2RequestHead/fieldList()``; the status
    /// is 100 to 999 (checked by the caller).
    func fieldList() throws(HTTP2Error) -> HTTP2FieldList {
        guard receivedFields.areChecked else { return try HTTP2FieldList(sending: wireFields) }
        // Not the head's own in the closure, which would copy the head.
        let status = status, fields = headers.fields
        return HTTP2FieldList(count: 1 + fields.count, byteCount: 10 + HTTP2FieldList.byteCount(fields)) { list in
            list.add(status: status)
            list.add(fields)
        }
    }

    /// Three digits, the first not zero (100 to 999), as HTTP/1.1's status line has them.
    static func status(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        guard digits.count == 3, digits.allSatisfy({ (0x30...0x39).contains($0) }), digits[0] != 0x30 else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }
}

/// Whether a head's regular fields are the ones nghttp2 received: it checked
/// them then as RFC 9113 §8.2 asks (lower-case token names, no CR, LF or
/// NUL in values, no connection-specific field), which is what sending
/// checks again (``HTTP2FieldList/init(sending:)``); a relayed head skips
/// that second look (~3,400 instructions per relayed request), and is
/// wire-safe as HTTP/1 means it without looking at its bytes. A response
/// translated from a wire-safe HTTP/1.1 head (``HTTP2ResponseHead/init(http1:)``:
/// token names lower-cased, values without CR, LF or NUL, the hop-by-hop fields
/// dropped) is as good and is marked so too. Any change to the fields clears
/// it. Not part of the head's value: always equal.
struct HTTP2ReceivedFields: Hashable, Sendable {
    var areChecked = false
    static func == (lhs: Self, rhs: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// What a session reports after it was fed bytes or asked for output.
public enum HTTP2Event: Hashable, Sendable {
    /// A request head arrived (server session); `endStream`: no body follows.
    case request(HTTP2StreamID, HTTP2RequestHead, endStream: Bool)
    /// A response head arrived (client session); 1xx heads come before the final one.
    case response(HTTP2StreamID, HTTP2ResponseHead, endStream: Bool)
    /// Body bytes of one DATA frame. They count against the receive windows
    /// until the application calls ``HTTP2Session/consume(_:on:)``.
    case data(HTTP2StreamID, [UInt8], endStream: Bool)
    /// Trailer fields arrived; they end the stream.
    case trailers(HTTP2StreamID, HTTPHeaders)
    /// This many body bytes given to ``HTTP2Session/sendData(_:on:endStream:)``
    /// left the session's buffer for the wire: a relay may release as much on
    /// the other leg.
    case dataWritten(HTTP2StreamID, count: Int)
    /// The peer reset the stream (RST_STREAM).
    case reset(HTTP2StreamID, HTTP2ErrorCode)
    /// The stream is over, in both directions; `NO_ERROR` when it ended
    /// normally, else the code of the reset that ended it (sent or received).
    case streamClosed(HTTP2StreamID, HTTP2ErrorCode)
    /// The peer sent GOAWAY: streams above `lastStreamID` were not processed.
    case goAway(lastStreamID: HTTP2StreamID, HTTP2ErrorCode, debugData: [UInt8])
    /// The session ended the connection for the peer's misbehaviour: a GOAWAY
    /// with ``HTTP2Error/wireCode`` is on its way out, and nothing more is read.
    case connectionError(HTTP2Error)
}

extension HTTPVersion {
    /// HTTP/2, written `HTTP/2.0` as HAR files name it.
    public static let http2 = HTTPVersion(major: 2, minor: 0)
}
