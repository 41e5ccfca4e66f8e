import Foundation
import PinproxyCertificates

/// When a client library refuses a server, and so what the other end sees. Each
/// ``PinningPolicy`` says where its library refuses (``PinningPolicy/refusalPoint(for:)``).
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

    /// Where a library that validates the chain inside the handshake, without the host name,
    /// and checks the rest after it (OkHttp's trust manager, curl's `SSL_connect`) refuses
    /// `trust`: in the handshake when the chain itself fails for TLS server use under
    /// `platform`'s rules and `anchors`, after it otherwise.
    static func splitting(_ trust: ServerTrust, platform: TrustPlatform, anchors: TrustAnchors) -> DecisionPoint {
        let chain = trust.evaluate(.ssl(host: nil, platform: platform), anchors: anchors)
        return chain.isValid ? .afterHandshake : .handshake
    }
}
