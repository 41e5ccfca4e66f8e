import Foundation

/// A SHA-256 pin of a DER SubjectPublicKeyInfo, the common currency of
/// OkHttp, TrustKit, Android, HPKP and curl.
public struct SPKIPin: Hashable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let sha256: [UInt8]

    public init(sha256: [UInt8]) throws {
        guard sha256.count == 32 else {
            throw PinproxyError(.decoding, "a SHA-256 pin has 32 bytes, this one has \(sha256.count)")
        }
        self.sha256 = sha256
    }

    /// The pin of a DER-encoded SubjectPublicKeyInfo.
    public init(subjectPublicKeyInfo der: [UInt8]) {
        self.sha256 = OpenSSL.sha256(der)
    }

    /// Parses any common notation: `sha256/B64`, `sha256//B64`,
    /// `pin-sha256="B64"`, or bare base64.
    public init(parsing text: String) throws {
        var body = text.trimmingCharacters(in: .whitespaces)
        if body.hasPrefix("pin-sha256=") {
            body = String(body.dropFirst("pin-sha256=".count))
            if body.hasPrefix("\""), body.hasSuffix("\""), body.count >= 2 { body = String(body.dropFirst().dropLast()) }
        } else if body.hasPrefix("sha256//") {
            // curl's `sha256//B64`, or OkHttp's `sha256/B64` whose base64 starts with '/'
            // (one key in 64): only one reading decodes to 32 bytes.
            let curlReading = String(body.dropFirst("sha256//".count))
            body = Data(base64Encoded: curlReading)?.count == 32 ? curlReading : String(body.dropFirst("sha256/".count))
        } else if body.hasPrefix("sha256/") {
            body = String(body.dropFirst("sha256/".count))
        } else if body.hasPrefix("sha1/") {
            throw PinproxyError(.decoding, "'\(text)' is a SHA-1 pin; only SHA-256 SPKI pins are supported here")
        }
        guard let data = Data(base64Encoded: body) else {
            throw PinproxyError(.decoding, "pin '\(text)' is not valid base64")
        }
        guard data.count == 32 else {
            throw PinproxyError(.decoding, "pin '\(text)' decodes to \(data.count) bytes, a SHA-256 pin has 32")
        }
        self.sha256 = Array(data)
    }

    /// Bare base64, as TrustKit and Android's `<pin>` element take it.
    public var base64: String { sha256.base64 }
    /// OkHttp `CertificatePinner` notation.
    public var okhttp: String { "sha256/" + base64 }
    /// curl `--pinnedpubkey` notation.
    public var curl: String { "sha256//" + base64 }
    /// HTTP Public Key Pinning (RFC 7469) directive.
    public var hpkp: String { "pin-sha256=\"\(base64)\"" }
    /// Android Network Security Config element.
    public var androidXML: String { "<pin digest=\"SHA-256\">\(base64)</pin>" }

    public var description: String { okhttp }
}
