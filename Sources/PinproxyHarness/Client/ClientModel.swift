import Foundation
import PinproxyCertificates
import PinproxyPinning

/// What the emulated client does with what it received.
public struct ClientDecision: Sendable {
    /// The policy's verdict on the presented chain.
    public var verdict: Verdict
    /// Where a refusal happens; nil when the client proceeds.
    public var refusal: DecisionPoint?
    /// Whether the client goes on and sends its request (ACCEPT or REPORT-ONLY).
    public var proceeds: Bool { refusal == nil }
}

/// The emulated client: what it offers by ALPN, and what it does with what it received, at
/// the moment its library decides (``PinningPolicy/refusalPoint(for:)``).
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
        return ClientDecision(verdict: verdict, refusal: policy.refusalPoint(for: trust))
    }
}
