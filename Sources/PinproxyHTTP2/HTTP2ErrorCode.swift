/// An HTTP/2 error code, as carried by RST_STREAM and GOAWAY (RFC 9113 §7).
///
/// A struct rather than an enum: a peer may send any 32-bit value, and an
/// unknown code must be relayed and logged as it is (§7: "unknown or
/// unsupported error codes MUST NOT trigger any special behavior").
public struct HTTP2ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// Graceful end: no error.
    public static let noError = Self(0x0)
    /// The peer broke the protocol.
    public static let protocolError = Self(0x1)
    /// The endpoint failed on its own account.
    public static let internalError = Self(0x2)
    /// The peer sent more than a flow-control window allowed.
    public static let flowControlError = Self(0x3)
    /// SETTINGS were not acknowledged in time.
    public static let settingsTimeout = Self(0x4)
    /// A frame arrived on a half-closed stream.
    public static let streamClosed = Self(0x5)
    /// A frame had an invalid size (larger than SETTINGS_MAX_FRAME_SIZE, say).
    public static let frameSizeError = Self(0x6)
    /// The stream was refused before any processing: it may be retried.
    public static let refusedStream = Self(0x7)
    /// The stream is no longer needed.
    public static let cancel = Self(0x8)
    /// The HPACK state can no longer be kept.
    public static let compressionError = Self(0x9)
    /// The tunnel of a CONNECT request failed.
    public static let connectError = Self(0xa)
    /// The peer behaves in a way that may be abuse (floods, header bombs).
    public static let enhanceYourCalm = Self(0xb)
    /// The transport does not meet the security requirements.
    public static let inadequateSecurity = Self(0xc)
    /// The request must be made over HTTP/1.1.
    public static let http11Required = Self(0xd)

    private static let names: [UInt32: String] = [
        0x0: "NO_ERROR", 0x1: "PROTOCOL_ERROR", 0x2: "INTERNAL_ERROR", 0x3: "FLOW_CONTROL_ERROR",
        0x4: "SETTINGS_TIMEOUT", 0x5: "STREAM_CLOSED", 0x6: "FRAME_SIZE_ERROR", 0x7: "REFUSED_STREAM",
        0x8: "CANCEL", 0x9: "COMPRESSION_ERROR", 0xa: "CONNECT_ERROR", 0xb: "ENHANCE_YOUR_CALM",
        0xc: "INADEQUATE_SECURITY", 0xd: "HTTP_1_1_REQUIRED",
    ]

    /// The RFC's name (`PROTOCOL_ERROR`), or the number in hex for an unknown code.
    public var description: String {
        Self.names[rawValue] ?? "0x" + String(rawValue, radix: 16)
    }
}

/// Why an HTTP/2 session failed or refused a call.
///
/// Compared by ``code`` only, like `PinproxyError`; ``wireCode`` is the
/// HTTP/2 error code sent to the peer when the failure ended the connection
/// or a stream, and ``reason`` says in plain words what happened.
public struct HTTP2Error: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is; new codes are added as `static let`s.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }
    }

    public var code: Code
    /// The error code sent in GOAWAY or RST_STREAM, if the failure sent one.
    public var wireCode: HTTP2ErrorCode?
    public var reason: String
    public var file: String
    public var line: Int

    public init(
        _ code: Code, wireCode: HTTP2ErrorCode? = nil, _ reason: String, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.wireCode = wireCode
        self.reason = reason
        self.file = file
        self.line = line
    }

    public var description: String {
        guard let wireCode else { return reason }
        return "\(reason) (\(wireCode))"
    }

    public static func == (lhs: HTTP2Error, rhs: HTTP2Error) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension HTTP2Error.Code {
    /// The client did not start with the HTTP/2 connection preface.
    public static let badPreface = Self("bad-preface")
    /// The peer broke the protocol (a connection error nghttp2 detected).
    public static let protocolViolation = Self("protocol-violation")
    /// The peer flooded the connection (control frames, resets, CONTINUATION frames).
    public static let flooded = Self("flooded")
    /// A header list was over the size or count limit.
    public static let headerListTooLarge = Self("header-list-too-large")
    /// The header block could not be decompressed.
    public static let headerCompression = Self("header-compression")
    /// A call names a stream that does not exist or is closed.
    public static let noSuchStream = Self("no-such-stream")
    /// A call does not fit the stream's state (a body after its end, a second response).
    public static let invalidState = Self("invalid-state")
    /// No new stream can be opened: GOAWAY was sent or received, or stream IDs ran out.
    public static let streamsExhausted = Self("streams-exhausted")
    /// A head cannot be sent or translated as it is (a missing pseudo-header, an invalid field).
    public static let invalidHead = Self("invalid-head")
    /// nghttp2 failed (memory, internal state); the connection is over.
    public static let library = Self("library")
}
