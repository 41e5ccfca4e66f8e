import PinproxyCertificates
import PinproxyTLS

/// Why an upstream could not be used.
struct UpstreamFailure: Error, Sendable {
    /// A whole sentence, for the 502 body.
    var reason: String
    /// Whether the upstream certificate failed verification.
    var verificationFailed: Bool
    /// The verifier's own words, when verification failed.
    var verifierReason: String? = nil
    /// The upstream refused with a fatal alert, so connecting again would not help.
    var isRefusal = false
    /// The connection reached pinproxy itself (see ``OwnAddresses``).
    var selfAddressed: OwnAddresses.Endpoint? = nil
    /// The connection ended before it was ready (a reset during the TLS handshake, say).
    var endedWhileConnecting: TransportEnd? = nil
    /// The upstream refused the protocols offered by ALPN (alert
    /// `no_application_protocol`): offering others may help.
    var refusedApplicationProtocol = false
    /// The status the client is answered with, when not the usual one.
    var answerStatus: Int? = nil

    /// The status the client is answered with: 403 when the connection
    /// reached pinproxy itself, else 502 unless said otherwise.
    var status: Int { answerStatus ?? (selfAddressed == nil ? 502 : 403) }
}

extension UpstreamFailure {
    /// The two ways forward when an upstream certificate cannot be verified
    /// (a local or staging origin, usually), for the 502 body and the log line.
    static let verificationHint = "trust its CA with --upstream-ca FILE, or skip verification with --upstream-insecure"

    /// The way forward for what the verifier said: a certificate for other names is not
    /// fixed by trusting its CA, so a name mismatch gets its own hint.
    static func verificationHint(for why: String) -> String {
        let lower = why.lowercased()
        if lower.contains("mismatch") || lower.contains("does not match") {
            return "the certificate does not name the host the client asked for: ask for a name it carries, mapping that name to "
                + "the address with --resolve when DNS does not know it, or skip verification with --upstream-insecure; in reverse "
                + "mode the name asked of the origin is the one the client sent as SNI"
        }
        return verificationHint
    }

    /// Why an upstream connection ended before (or instead of) answering, in
    /// one sentence: the alert it sent and what that alert usually means.
    static func ended(_ end: TransportEnd, target: UpstreamTarget, tls: TLSConnection?, when: String = "before responding") -> UpstreamFailure {
        let name = "the upstream \(target.host.uriHost):\(target.port)"
        var alert: TLSAlert?
        switch end {
        case .tlsFailed(let failure): alert = failure.receivedAlert ?? tls?.receivedAlert
        default: alert = tls?.receivedAlert
        }
        if let alert, alert.isFatal {
            var reason = "\(name) sent alert \(alert.name)"
            if alert.code == 116 || tls?.clientCertificateRequested == true {
                reason += ": it asks for a client certificate (pass one with --upstream-client-cert)"
            } else if alert.rejectsCertificate {
                reason += ": it refused the client certificate"
            }
            return UpstreamFailure(reason: reason, verificationFailed: false, isRefusal: true,
                                   refusedApplicationProtocol: alert.code == 120)
        }
        switch end {
        case .closed: return UpstreamFailure(reason: "\(name) closed the connection \(when)", verificationFailed: false)
        case .reset: return UpstreamFailure(reason: "\(name) reset the connection \(when)", verificationFailed: false)
        case .failed(let why): return UpstreamFailure(reason: "\(name) failed \(when): \(why)", verificationFailed: false)
        case .tlsFailed(let failure): return UpstreamFailure(reason: "\(name) failed \(when): \(failure.reason)", verificationFailed: false)
        }
    }
}
