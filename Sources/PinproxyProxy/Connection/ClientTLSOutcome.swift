import PinproxyTLS

/// How the client took the certificate the proxy showed it, recorded once
/// per connection as a ``TLSOutcomeEvent``: `intercepted` at its first
/// request, or how it refused (an alert, a broken-off handshake, silence).
///
/// The TLS layer classifies the handshake; the application layer (HTTP/1
/// today) reports the first request or a close without one.
struct ClientTLSOutcome {
    let connectionRecord: ConnectionRecord
    /// The host the client asked for (its server name, or the CONNECT target).
    var host: String
    var port: Int
    var profile: AttackProfile?
    /// The upstream failed: that was the outcome, and every request is answered with its error.
    var upstreamFailed = false

    func record(_ kind: TLSOutcomeEvent.Kind, alert: String? = nil, reason: String?) {
        connectionRecord.recordOutcome(kind, host: host, port: port, alert: alert, reason: reason, profile: profile)
    }

    /// The client's socket ended during the handshake.
    func endedDuringHandshake(_ end: TransportEnd) {
        switch end {
        case .reset: record(.reset, reason: nil)
        case .tlsFailed(let failure): handshakeFailed(failure, tls: nil)
        default: record(.closedDuringHandshake, reason: nil)
        }
    }

    /// The handshake failed: an alert from the client names its refusal.
    func handshakeFailed(_ failure: TLSFailure, tls: TLSConnection?) {
        if let alert = failure.receivedAlert ?? tls?.receivedAlert {
            record(.clientAlert, alert: alert.name, reason: failure.reason)
            return
        }
        switch failure.kind {
        case .noSharedParameters: record(.noSharedProtocolOrCipher, reason: failure.reason)
        case .notTLS: record(.notTLS, reason: failure.reason)
        case .transport: record(.reset, reason: failure.reason)
        default:
            if connectionRecord.outcomeRecorded { return }
            record(.handshakeFailed, reason: failure.reason)
        }
    }

    /// The first request arrived over the forged chain.
    func firstRequest() {
        if !upstreamFailed { record(.intercepted, reason: nil) }
    }

    /// The connection ended after the handshake without a single request:
    /// an alert then is a refusal; silence is only suspicious.
    func closedWithoutRequest(_ end: TransportEnd?, tls: TLSConnection) {
        guard !upstreamFailed else { return }
        if case .tlsFailed(let failure) = end, let alert = failure.receivedAlert {
            record(.clientAlert, alert: alert.name, reason: "after the handshake")
        } else if let alert = tls.receivedAlert, alert.isFatal {
            record(.clientAlert, alert: alert.name, reason: "after the handshake")
        } else if end != nil {
            record(.closedAfterHandshakeWithoutRequest, reason: nil)
        }
    }
}

extension TLSOutcomeEvent.Kind {
    /// The server name the client sent was refused (NUL, commas, over-long, ...).
    public static let invalidServerName = Self("invalid-server-name")
    /// The upstream could not be reached or its TLS failed for a reason other than verification.
    public static let upstreamFailed = Self("upstream-failed")
    /// The client sent something that is not TLS where TLS was expected.
    public static let notTLS = Self("not-tls")
    /// The handshake failed for another reason (see the event's reason).
    public static let handshakeFailed = Self("handshake-failed")
}
