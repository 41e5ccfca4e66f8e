import Foundation
import PinproxyCertificates

/// Whose validator judges a chain: each platform has its own ``VerifierProfile`` — how it
/// finds issuers, whether an anchor's validity counts, which algorithms are too weak, how host
/// names are matched (docs/policies.md, "Chain validation per platform").
public enum TrustPlatform: String, Sendable, Hashable, CaseIterable {
    /// Security.framework, iOS 13+ (AFNetworking, Alamofire, TrustKit, custom anchors):
    /// subjectAltName only; Apple's algorithm floors (SecPolicy.c, SecPolicyServer.c).
    case apple
    /// Android 7+ with Conscrypt (network security config, OkHttp on Android): subjectAltName
    /// only; trust anchors' validity not checked; Conscrypt's ChainStrengthAnalyzer floor.
    case android
    /// The JDK's PKIX validator behind SunJSSE (OkHttp on the JVM): issuers by name and
    /// signature, trust anchors' validity not checked, `jdk.certpath.disabledAlgorithms`.
    case jvm
    /// curl on OpenSSL 3: OpenSSL's own verification as curl configures it; the subject CN
    /// when there is no DNS or IP subjectAltName at all (Curl_ossl_verifyhost); libssl's default security level.
    case curl

    /// The validator's name in verdicts: "the JDK's PKIX".
    var validatorName: String {
        switch self {
        case .apple: return "Apple's SecTrust"
        case .android: return "Android's Conscrypt"
        case .jvm: return "the JDK's PKIX"
        case .curl: return "OpenSSL"
        }
    }
}

/// What one trust evaluation checks: one of Apple's two policy kinds, the host name, and the
/// platform whose name rules and algorithm floor apply.
///
/// - ``Kind/ssl``: `SecPolicyCreateSSL(true, host)`. The leaf must be valid for TLS server
///   authentication (extended key usage serverAuth when the extension is present), with or
///   without a host name; the host, when given, is matched as the platform matches it.
/// - ``Kind/basicX509``: `SecPolicyCreateBasicX509()`. Validity, basic constraints, key usage
///   of the issuers, path building and signatures; no extended key usage and no name.
public struct TrustPolicy: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case ssl
        case basicX509
    }

    public let kind: Kind
    /// The host checked; always nil for basic X.509.
    public let host: HostName?
    public let platform: TrustPlatform

    /// The SSL policy for `host` (nil: no name check, the extended key usage still counts).
    public static func ssl(host: HostName?, platform: TrustPlatform) -> TrustPolicy {
        TrustPolicy(kind: .ssl, host: host, platform: platform)
    }

    /// The basic X.509 policy: no extended key usage, no name.
    public static func basicX509(platform: TrustPlatform) -> TrustPolicy {
        TrustPolicy(kind: .basicX509, host: nil, platform: platform)
    }

    /// "SSL policy for api.example.com", "SSL policy without a host name",
    /// "basic X.509 policy (no host name, no EKU check)".
    public var description: String {
        switch kind {
        case .basicX509: return "basic X.509 policy (no host name, no EKU check)"
        case .ssl: return host.map { "SSL policy for \($0)" } ?? "SSL policy without a host name"
        }
    }
}
