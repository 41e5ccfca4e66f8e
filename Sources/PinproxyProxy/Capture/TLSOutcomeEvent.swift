import Foundation

/// What happened when a client met the proxy's TLS: it trusted the forged
/// certificate, or how it refused.
///
/// Refusals are classified the way clients show them, in two grades:
/// definite — an alert (`unknown_ca`, `bad_certificate`, ...), a close or
/// reset during the handshake — and suspected: the handshake completed and
/// the client left without a request, which is how pinning checked after the
/// handshake looks (OkHttp, curl `--pinnedpubkey`), but also how a probe
/// such as `openssl s_client` looks. ``message`` turns each into a
/// plain-words log line that names the attack profile.
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
        /// The handshake completed but the client closed without a request: a
        /// suspected refusal (pinning after the handshake, or only a probe).
        public static let closedAfterHandshakeWithoutRequest = Kind("closed-after-handshake-without-request")
        /// The client did not complete the handshake in time.
        public static let handshakeTimeout = Kind("handshake-timeout")
        /// Client and proxy share no protocol version or cipher suite.
        public static let noSharedProtocolOrCipher = Kind("no-shared-protocol-or-cipher")
        /// The genuine upstream certificate failed verification (see ``TLSOutcomeEvent/reason``).
        public static let upstreamVerificationFailed = Kind("upstream-verification-failed")
        /// The host was tunnelled without interception.
        public static let passthrough = Kind("passthrough")

        /// A definite refusal: the client sent an alert or broke off the handshake.
        public var isDefiniteRefusal: Bool { [.clientAlert, .closedDuringHandshake, .reset].contains(self) }
        /// A suspected refusal: the handshake completed and no request came.
        public var isSuspectedRefusal: Bool { self == .closedAfterHandshakeWithoutRequest }
        /// Whether this outcome means the client refused the certificate, definitely or by suspicion.
        public var isClientRejection: Bool { isDefiniteRefusal || isSuspectedRefusal }
    }

    /// How sure the proxy is that a client refused what it was shown.
    public enum Refusal: String, Sendable, Codable {
        /// An alert, or a handshake the client broke off.
        case definite
        /// A completed handshake and then silence: pinning after the handshake, or a probe.
        case suspected
    }

    struct Fields: Hashable, Sendable {
        var kind: Kind
        var host: String
        var port: Int?
        var clientAddress: String
        var time: Date
        var alert: String?
        var reason: String?
        var profile: String?
    }

    /// Every flow of a connection carries a copy of its outcome: the fields
    /// live in one shared box (``SharedFields``), so a copy is one retain.
    private(set) var shared: SharedFields<Fields>

    public var kind: Kind {
        _read { yield shared.fields.kind }
        _modify { yield &shared.fields.kind }
    }
    /// The host the client wanted (SNI, else the CONNECT host).
    public var host: String {
        _read { yield shared.fields.host }
        _modify { yield &shared.fields.host }
    }
    public var port: Int? {
        _read { yield shared.fields.port }
        _modify { yield &shared.fields.port }
    }
    /// `address:port` of the client.
    public var clientAddress: String {
        _read { yield shared.fields.clientAddress }
        _modify { yield &shared.fields.clientAddress }
    }
    public var time: Date {
        _read { yield shared.fields.time }
        _modify { yield &shared.fields.time }
    }
    /// The TLS alert name for ``Kind/clientAlert`` (`unknown_ca`, `bad_certificate`, ...).
    public var alert: String? {
        _read { yield shared.fields.alert }
        _modify { yield &shared.fields.alert }
    }
    /// More detail: the verifier's reason, the OpenSSL error.
    public var reason: String? {
        _read { yield shared.fields.reason }
        _modify { yield &shared.fields.reason }
    }
    /// The attack profile that served the connection (`forge`, `expired`, ...);
    /// nil when none was chosen yet (before the ClientHello).
    public var profile: String? {
        _read { yield shared.fields.profile }
        _modify { yield &shared.fields.profile }
    }

    public init(
        kind: Kind, host: String, port: Int? = nil, clientAddress: String, time: Date = Date(),
        alert: String? = nil, reason: String? = nil, profile: String? = nil
    ) {
        shared = SharedFields(Fields(kind: kind, host: host, port: port, clientAddress: clientAddress, time: time,
                                     alert: alert, reason: reason, profile: profile))
    }

    /// Whether this outcome is a refusal, and how sure it is.
    public var refusal: Refusal? {
        kind.isDefiniteRefusal ? .definite : kind.isSuspectedRefusal ? .suspected : nil
    }

    /// Alerts a client sends when it does not accept the certificate it was shown.
    public static let certificateAlerts: Set<String> = [
        "unknown_ca", "bad_certificate", "certificate_unknown", "unsupported_certificate",
        "certificate_revoked", "certificate_expired", "access_denied", "bad_certificate_status_response",
    ]

    /// One plain-words sentence for a log line, ending with the profile.
    public var message: String {
        let detail = reason.map { ": \($0)" } ?? ""
        let shown = AttackProfile(profile ?? AttackProfile.forge.name).certificatePhrase
        return sentence(detail: detail, shown: shown) + (profile.map { " (profile \($0))" } ?? "")
    }

    private func sentence(detail: String, shown: String) -> String {
        switch kind {
        case .intercepted:
            return "client accepted the \(shown) for \(host) and sent a request"
        case .clientAlert:
            let name = alert ?? "unknown alert"
            if Self.certificateAlerts.contains(name) {
                return "client refused the \(shown) for \(host) (alert \(name))\(likelyCause)"
            }
            return "client aborted the handshake for \(host) (alert \(name))\(detail)"
        case .closedDuringHandshake:
            return "client closed the connection during the handshake for \(host) without an alert — it refused the \(shown)\(likelyCause)"
        case .reset:
            return "client reset the connection during the handshake for \(host) — it refused the \(shown)\(likelyCause)"
        case .closedAfterHandshakeWithoutRequest:
            return "client finished the handshake for \(host) but closed without sending a request — it may have refused the \(shown) (pinning checked after the handshake, as OkHttp's CertificatePinner and curl --pinnedpubkey do), or was only probing"
        case .handshakeTimeout:
            return "client did not complete the handshake for \(host) in time"
        case .noSharedProtocolOrCipher:
            return "client and proxy share no TLS version or cipher suite for \(host)\(detail)"
        case .upstreamVerificationFailed:
            return "the certificate of upstream \(host) failed verification\(detail); the client was answered 502 (\(UpstreamFailure.verificationHint(for: detail)))"
        case .passthrough:
            return "\(host) is passed through without interception"
        case .selfAddressed:
            return "refused a request for \(host) addressed to pinproxy itself\(detail)"
        default:
            return "\(kind) for \(host)\(detail)"
        }
    }

    /// Why a client refuses a chain that is valid for whoever trusts its CA;
    /// empty for profiles whose certificate is invalid by construction.
    private var likelyCause: String {
        switch profile {
        case nil, AttackProfile.forge.name?, AttackProfile.stuff.name?: return " — it does not trust the proxy CA or it pins"
        case AttackProfile.misissued.name?: return " — it does not trust the misissuing CA or it pins"
        case let name? where AttackProfile(name).isRotation:
            return " — the app would go offline on this change: an outage to come, not an attack stopped"
        default: return ""
        }
    }

    private enum CodingKeys: String, CodingKey {
        case kind, host, port, clientAddress, time, alert, reason, profile, refusal, message
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(kind: try container.decode(Kind.self, forKey: .kind),
                  host: try container.decode(String.self, forKey: .host),
                  port: try container.decodeIfPresent(Int.self, forKey: .port),
                  clientAddress: try container.decode(String.self, forKey: .clientAddress),
                  time: try container.decode(Date.self, forKey: .time),
                  alert: try container.decodeIfPresent(String.self, forKey: .alert),
                  reason: try container.decodeIfPresent(String.self, forKey: .reason),
                  profile: try container.decodeIfPresent(String.self, forKey: .profile))
    }

    /// Encodes the fields and, for readers of the JSON, the ``refusal`` grade and the ``message``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(host, forKey: .host)
        try container.encodeIfPresent(port, forKey: .port)
        try container.encode(clientAddress, forKey: .clientAddress)
        try container.encode(time, forKey: .time)
        try container.encodeIfPresent(alert, forKey: .alert)
        try container.encodeIfPresent(reason, forKey: .reason)
        try container.encodeIfPresent(profile, forKey: .profile)
        try container.encodeIfPresent(refusal, forKey: .refusal)
        try container.encode(message, forKey: .message)
    }
}
