/// A TLS alert as it crossed the wire: its level and its description code.
///
/// ``name`` uses the RFC 8446 spelling (`unknown_ca`, `bad_certificate`), the
/// form peers such as mitmproxy and Wireshark print and users search for.
public struct TLSAlert: Hashable, Sendable, CustomStringConvertible {
    /// The alert description code (RFC 8446 §6).
    public let code: UInt8
    /// Whether the alert was fatal (a warning otherwise).
    public let isFatal: Bool

    public init(code: UInt8, isFatal: Bool = true) {
        self.code = code
        self.isFatal = isFatal
    }

    public static let closeNotify = TLSAlert(code: 0, isFatal: false)
    public static let handshakeFailure = TLSAlert(code: 40)
    public static let badCertificate = TLSAlert(code: 42)
    public static let certificateUnknown = TLSAlert(code: 46)
    public static let unknownCA = TLSAlert(code: 48)
    public static let internalError = TLSAlert(code: 80)
    public static let unrecognizedName = TLSAlert(code: 112)

    /// The RFC 8446 name, or `alert_<code>` for codes this table does not know.
    public var name: String { TLSAlert.names[code] ?? "alert_\(code)" }

    public var description: String { name }

    /// Whether this alert says the peer did not accept the certificate it was shown.
    public var rejectsCertificate: Bool {
        [42, 43, 44, 45, 46, 48, 49, 116].contains(code)
    }

    private static let names: [UInt8: String] = [
        0: "close_notify", 10: "unexpected_message", 20: "bad_record_mac", 22: "record_overflow",
        40: "handshake_failure", 42: "bad_certificate", 43: "unsupported_certificate",
        44: "certificate_revoked", 45: "certificate_expired", 46: "certificate_unknown",
        47: "illegal_parameter", 48: "unknown_ca", 49: "access_denied", 50: "decode_error",
        51: "decrypt_error", 70: "protocol_version", 71: "insufficient_security", 80: "internal_error",
        86: "inappropriate_fallback", 90: "user_canceled", 100: "no_renegotiation",
        109: "missing_extension", 110: "unsupported_extension", 112: "unrecognized_name",
        113: "bad_certificate_status_response", 115: "unknown_psk_identity",
        116: "certificate_required", 120: "no_application_protocol",
    ]
}
