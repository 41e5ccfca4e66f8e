import Foundation
import PinproxyProxy

/// What the client did with a connection, as the other end can tell it apart.
enum ClientBehaviour: Equatable {
    /// Sent a request (and read the answer).
    case requested
    /// Aborted the handshake.
    case refusedInHandshake
    /// Completed the handshake, then closed without a request.
    case closedAfterHandshake

    var text: String {
        switch self {
        case .requested: return "sent its request"
        case .refusedInHandshake: return "refused during the handshake"
        case .closedAfterHandshake: return "closed after the handshake without a request"
        }
    }
}

/// The cross-check between the client's behaviour and the proxy's event for that connection.
enum ProxyObservation {
    /// Outcomes in which the client broke off the handshake.
    static let definiteRefusals: Set<TLSOutcomeEvent.Kind> = [.clientAlert, .closedDuringHandshake, .reset]
    /// The outcome of a completed handshake followed by silence.
    static let suspectedRefusals: Set<TLSOutcomeEvent.Kind> = [.closedAfterHandshakeWithoutRequest]

    /// `client-alert (bad_certificate)`, `intercepted`, ...
    static func describe(_ event: TLSOutcomeEvent) -> String {
        event.alert.map { "\(event.kind) (\($0))" } ?? event.kind.rawValue
    }

    /// Nil when the proxy saw what the client did; otherwise why they disagree.
    ///
    /// A passed-through connection is only tunnelled, so the proxy records
    /// `passthrough` whatever the client decides; the origin's record decides there.
    static func mismatch(_ behaviour: ClientBehaviour, event: TLSOutcomeEvent?, passthrough: Bool) -> String? {
        guard let event else { return "the proxy recorded no outcome for this connection" }
        let agrees: Bool
        if passthrough {
            agrees = event.kind == .passthrough
        } else {
            switch behaviour {
            case .requested: agrees = event.kind == .intercepted
            case .refusedInHandshake: agrees = definiteRefusals.contains(event.kind)
            case .closedAfterHandshake: agrees = suspectedRefusals.contains(event.kind)
            }
        }
        if agrees { return nil }
        var text = "the client \(behaviour.text), but the proxy recorded \(describe(event))"
        if event.kind == .upstreamVerificationFailed || event.kind == .upstreamFailed { text += " — " + upstreamHint(event) }
        return text
    }

    /// Why no client verdict can be read from a connection the proxy could not open upstream, and the fix.
    static func upstreamHint(_ event: TLSOutcomeEvent) -> String {
        guard event.kind == .upstreamVerificationFailed else {
            return "the proxy could not reach the origin (\(event.reason ?? "no reason"))"
        }
        return "the proxy could not verify the origin (\(event.reason ?? "no reason")); start the daemon with --upstream-ca naming the origin's root (with --origin-chain), or --upstream-insecure for a generated world, whose root is new on every run"
    }
}
