import Foundation
import PinproxyCertificates

/// Reads a file holding a public key or a certificate and yields its SPKI pin.
public enum KeyFile {
    /// What a key file holds.
    public enum Contents: Sendable {
        case certificates([Certificate])
        case publicKey(PublicKey)
        /// The public half of a private key; the private key itself is not kept.
        case publicHalfOfPrivateKey(PublicKey)
    }

    /// Reads PEM certificates, a PEM public key, a DER certificate or a DER SubjectPublicKeyInfo;
    /// with `allowingPrivateKeys`, also an unencrypted private key (PEM or DER), of which only
    /// the public half is returned.
    public static func read(contentsOf path: String, allowingPrivateKeys: Bool = false) throws -> Contents {
        let bytes = try FileIO.read(path)
        let derive = "write its public key with: openssl pkey -in \((path as NSString).lastPathComponent) -pubout -out key.pem"
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            if text.contains("-----BEGIN CERTIFICATE-----") {
                return .certificates(try Certificate.load(contentsOf: path))
            }
            if text.contains("-----BEGIN PUBLIC KEY-----") {
                do { return .publicKey(try PublicKey(pemEncoded: text)) } catch let error as PinproxyError {
                    throw PinproxyError(.decoding, "\(path): \(error.reason)", openSSLErrors: error.openSSLErrors)
                }
            }
            if text.contains("PRIVATE KEY-----") {
                guard allowingPrivateKeys else {
                    throw PinproxyError(.decoding, "\(path) is a private key; name a public key or a certificate instead: \(derive)")
                }
                // Checked first: OpenSSL would prompt on the terminal for the passphrase.
                if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
                    throw PinproxyError(.decoding, "\(path) is an encrypted private key; pinproxy does not ask for passphrases: \(derive)")
                }
                do {
                    return .publicHalfOfPrivateKey(try PublicKey(of: PrivateKey(pemEncoded: text)))
                } catch let error as PinproxyError {
                    throw PinproxyError(.decoding, "\(path): not a readable private key (\(error.reason))")
                }
            }
            throw PinproxyError(.decoding, "\(path): holds neither a CERTIFICATE nor a PUBLIC KEY\(allowingPrivateKeys ? " nor a PRIVATE KEY" : "") PEM block")
        }
        if let certificate = try? Certificate(derEncoded: bytes) { return .certificates([certificate]) }
        if let key = try? PublicKey(derEncoded: bytes) { return .publicKey(key) }
        if let key = try? PrivateKey(derEncoded: bytes) {
            guard allowingPrivateKeys else {
                throw PinproxyError(.decoding, "\(path) is a private key; name a public key or a certificate instead: \(derive)")
            }
            return .publicHalfOfPrivateKey(try PublicKey(of: key))
        }
        throw PinproxyError(.decoding, "\(path): neither a certificate nor a \(allowingPrivateKeys ? "public or private" : "public") key (PEM or DER)")
    }

    /// The SPKI pin of the key (or of the first certificate) in `path`.
    public static func pin(contentsOf path: String) throws -> SPKIPin {
        switch try read(contentsOf: path) {
        case .publicKey(let key), .publicHalfOfPrivateKey(let key): return key.spkiPin
        case .certificates(let certificates):
            guard let first = certificates.first else { throw PinproxyError(.decoding, "\(path): no certificate") }
            return first.spkiPin
        }
    }
}
