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
/// OkHttp's trust manager (`X509TrustManager.checkServerTrusted`) validates the
/// chain inside the handshake, with no host name; `RealConnection.connectTls`
/// then runs the hostname verifier and `CertificatePinner.check` once
/// `startHandshake()` returned. curl verifies the peer's chain inside
/// `SSL_connect` and checks the host name and `--pinnedpubkey` after it
/// (lib/vtls/openssl.c, `servercert`). Both therefore refuse in the handshake
/// only when the chain itself fails; a wrong host or a pin mismatch closes the
/// connection after it. Every other family decides wholly inside the handshake.
/// The real-client tests hold this against OkHttp 3.13.1 and curl themselves.
public enum ClientModel {
    /// What every emulated library offers by ALPN, HTTP/2 first: NSURLSession (under
    /// AFNetworking, Alamofire, TrustKit and custom anchors), OkHttp (and the Android apps
    /// whose network security config it obeys) and curl built with nghttp2 all do. The
    /// server's choice comes after every trust decision the libraries take in or right
    /// after the handshake, so it does not move a refusal.
    public static let applicationProtocols = ["h2", "http/1.1"]

    /// ``applicationProtocols``, or `http/1.1` alone with HTTP/2 turned off (`check --http2 off`).
    public static func applicationProtocols(http2: Bool) -> [String] {
        http2 ? applicationProtocols : ["http/1.1"]
    }

    public static func decide(_ policy: any PinningPolicy, trust: ServerTrust) -> ClientDecision {
        let verdict = policy.evaluate(trust)
        guard !verdict.connectionProceeds else { return ClientDecision(verdict: verdict, refusal: nil) }
        return ClientDecision(verdict: verdict, refusal: refusalPoint(policy, trust: trust))
    }

    /// Where `policy` refuses `trust`, given that it does.
    static func refusalPoint(_ policy: any PinningPolicy, trust: ServerTrust) -> DecisionPoint {
        let anchors: TrustAnchors
        let platform: TrustPlatform
        switch policy {
        case let okhttp as OkHttpPolicy:
            anchors = .device(trust.store)
            platform = okhttp.platform.trustPlatform
        case let curl as CurlPolicy:
            if curl.insecure { return .afterHandshake }
            anchors = curl.caBundle.map { TrustAnchors(system: $0) } ?? .device(trust.store)
            platform = .curl
        default:
            return .handshake
        }
        // The handshake's part: the chain for TLS server use, without the host name.
        let chain = TrustEvaluator.evaluate(trust.presentedChain, policy: .ssl(host: nil, platform: platform), at: trust.time, anchors: anchors)
        return chain.isValid ? .afterHandshake : .handshake
    }
}
