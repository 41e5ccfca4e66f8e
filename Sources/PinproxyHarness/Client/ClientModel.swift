import Foundation
import PinproxyCertificates
import PinproxyPinning

/// When a client library refuses a server, and so what the other end sees.
public enum DecisionPoint: String, Sendable, Codable {
    /// Inside the handshake: NSURLSession's server-trust challenge (AFNetworking,
    /// Alamofire, custom anchors, TrustKit), Android's trust manager with its pin
    /// set, and every platform's chain validation. A refusal aborts the handshake
    /// with an alert.
    case handshake
    /// After a completed handshake, before any request: OkHttp's
    /// `CertificatePinner.check` and curl's `--pinnedpubkey`. A refusal closes the
    /// connection without a request.
    case afterHandshake = "after-handshake"
}

/// What the emulated client does with what it received.
public struct ClientDecision: Sendable {
    /// The policy's verdict on the presented chain.
    public var verdict: Verdict
    /// Where a refusal happens; nil when the client proceeds.
    public var refusal: DecisionPoint?
    /// Whether the client goes on and sends its request (ACCEPT or REPORT-ONLY).
    public var proceeds: Bool { refusal == nil }
}

/// The timing model of each family: which part of its decision is taken in the
/// handshake and which after it.
///
/// OkHttp validates the chain in the platform trust manager during the handshake
/// and checks pins after it; curl verifies the peer in the handshake and compares
/// `--pinnedpubkey` right after it. To tell which part refused, the same policy is
/// evaluated once more without its pins (OkHttp: an empty pinner; curl: a pin that
/// is the presented leaf's own key), which leaves exactly the handshake's part.
/// Every other family decides wholly inside the handshake.
public enum ClientModel {
    public static func decide(_ policy: any PinningPolicy, trust: ServerTrust) -> ClientDecision {
        let verdict = policy.evaluate(trust)
        guard !verdict.connectionProceeds else { return ClientDecision(verdict: verdict, refusal: nil) }
        return ClientDecision(verdict: verdict, refusal: refusalPoint(policy, trust: trust))
    }

    /// Where `policy` refuses `trust`, given that it does.
    static func refusalPoint(_ policy: any PinningPolicy, trust: ServerTrust) -> DecisionPoint {
        switch policy {
        case let okhttp as OkHttpPolicy:
            let platform = OkHttpPolicy(pins: [], profile: okhttp.checkedChain).evaluate(trust)
            return platform.connectionProceeds ? .afterHandshake : .handshake
        case let curl as CurlPolicy:
            guard let leaf = trust.presentedChain.first else { return .handshake }
            let peer = CurlPolicy(pinnedPublicKeys: [leaf.spkiPin], insecure: curl.insecure, caBundle: curl.caBundle).evaluate(trust)
            return peer.connectionProceeds ? .afterHandshake : .handshake
        default:
            return .handshake
        }
    }
}
