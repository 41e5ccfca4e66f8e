import Foundation

/// What happened when a client met the proxy's TLS: it trusted the forged
/// certificate, or how it refused.
///
/// Rejections are classified the way clients show them: an alert
/// (`unknown_ca`, `bad_certificate`, ...), a close or reset during the
/// handshake, or — typical of pinning checked after the handshake — a close
/// without any request. ``message`` turns each into a plain-words log line.
public struct TLSOutcomeEvent: Hashable, Sendable, Codable {
    /// The kind of outcome; new kinds are added as `static let`s.
    public struct Kind: Hashable, Sendable, Codable, RawRepresentable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        /// The client trusted the forged certificate and sent a request.
        public static let intercepted = Kind("intercepted")
        /// The client sent a TLS alert during the handshake (see ``TLSOutcomeEvent/alert``).
        public static let clientAlert = Kind("client-alert")
        /// The client closed the connection during the handshake without an alert.
        public static let closedDuringHandshake = Kind("closed-during-handshake")
        /// The client reset the connection during the handshake.
        public static let reset = Kind("reset")
        /// The handshake completed but the client closed without a request: likely pinning.
        public static let closedAfterHandshakeWithoutRequest = Kind("closed-after-handshake-without-request")
        /// The client did not complete the handshake in time.
        public static let handshakeTimeout = Kind("handshake-timeout")
        /// Client and proxy share no protocol version or cipher suite.
        public static let noSharedProtocolOrCipher = Kind("no-shared-protocol-or-cipher")
        /// The genuine upstream certificate failed verification (see ``TLSOutcomeEvent/reason``).
        public static let upstreamVerificationFailed = Kind("upstream-verification-failed")
        /// The host was tunnelled without interception.
        public static let passthrough = Kind("passthrough")

        /// Whether this outcome means the client refused the forged certificate (or probably did).
        public var isClientRejection: Bool {
            [.clientAlert, .closedDuringHandshake, .reset, .closedAfterHandshakeWithoutRequest].contains(self)
        }
    }

    public var kind: Kind
    /// The host the client wanted (SNI, else the CONNECT host).
    public var host: String
    public var port: Int?
    /// `address:port` of the client.
    public var clientAddress: String
    public var time: Date
    /// The TLS alert name for ``Kind/clientAlert`` (`unknown_ca`, `bad_certificate`, ...).
    public var alert: String?
    /// More detail: the verifier's reason, the OpenSSL error, the attack profile used.
    public var reason: String?

    public init(
        kind: Kind, host: String, port: Int? = nil, clientAddress: String, time: Date = Date(),
        alert: String? = nil, reason: String? = nil
    ) {
        self.kind = kind
        self.host = host
        self.port = port
        self.clientAddress = clientAddress
        self.time = time
        self.alert = alert
        self.reason = reason
    }

    /// Alerts a client sends when it does not accept the certificate it was shown.
    public static let certificateAlerts: Set<String> = [
        "unknown_ca", "bad_certificate", "certificate_unknown", "unsupported_certificate",
        "certificate_revoked", "certificate_expired", "access_denied", "bad_certificate_status_response",
    ]

    /// One plain-words sentence for a log line.
    public var message: String {
        let detail = reason.map { ": \($0)" } ?? ""
        switch kind {
        case .intercepted:
            return "client accepted the forged certificate for \(host) and sent a request"
        case .clientAlert:
            let name = alert ?? "unknown alert"
            if Self.certificateAlerts.contains(name) {
                return "client refused the forged certificate for \(host) (alert \(name)) — it does not trust the proxy CA or it pins"
            }
            return "client aborted the handshake for \(host) (alert \(name))\(detail)"
        case .closedDuringHandshake:
            return "client closed the connection during the handshake for \(host) without an alert — it probably refused the forged certificate (untrusted proxy CA or pinning)"
        case .reset:
            return "client reset the connection during the handshake for \(host) — it probably refused the forged certificate (untrusted proxy CA or pinning)"
        case .closedAfterHandshakeWithoutRequest:
            return "client finished the handshake for \(host) but closed without sending a request — likely a pinning rejection checked after the handshake"
        case .handshakeTimeout:
            return "client did not complete the handshake for \(host) in time"
        case .noSharedProtocolOrCipher:
            return "client and proxy share no TLS version or cipher suite for \(host)\(detail)"
        case .upstreamVerificationFailed:
            return "the certificate of upstream \(host) failed verification\(detail); the client was answered 502 (\(UpstreamFailure.verificationHint))"
        case .passthrough:
            return "\(host) is passed through without interception"
        case .selfAddressed:
            return "refused a request for \(host) addressed to pinproxy itself\(detail)"
        default:
            return "\(kind) for \(host)\(detail)"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, host, port, clientAddress, time, alert, reason, message
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        kind = try container.decode(Kind.self, forKey: .kind)
        host = try container.decode(String.self, forKey: .host)
        port = try container.decodeIfPresent(Int.self, forKey: .port)
        clientAddress = try container.decode(String.self, forKey: .clientAddress)
        time = try container.decode(Date.self, forKey: .time)
        alert = try container.decodeIfPresent(String.self, forKey: .alert)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
    }

    /// Encodes the fields and, for readers of the JSON, the ``message``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(host, forKey: .host)
        try container.encodeIfPresent(port, forKey: .port)
        try container.encode(clientAddress, forKey: .clientAddress)
        try container.encode(time, forKey: .time)
        try container.encodeIfPresent(alert, forKey: .alert)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encode(message, forKey: .message)
    }
}
