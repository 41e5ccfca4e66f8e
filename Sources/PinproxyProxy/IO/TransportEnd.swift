import PinproxyTLS

/// Why a transport stopped delivering bytes.
enum TransportEnd: Sendable, Equatable {
    /// The peer closed its side (TCP FIN, or close_notify / EOF under TLS).
    case closed
    /// The peer reset the connection.
    case reset
    /// A socket or TLS error.
    case failed(String)
    /// A TLS failure with its details.
    case tlsFailed(TLSFailure)
}
