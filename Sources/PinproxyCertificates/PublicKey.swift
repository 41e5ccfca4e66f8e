internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// A public key, owning an OpenSSL `EVP_PKEY` without its private half.
// Sendable: immutable after creation.
public final class PublicKey: @unchecked Sendable, Hashable {
    package let pointer: OpaquePointer

    package init(takingOwnership pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// Parses a DER SubjectPublicKeyInfo.
    public convenience init(derEncoded der: [UInt8]) throws {
        ERR_clear_error()
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &p, buffer.count)
        }
        guard let key else { throw OpenSSL.error("input is not a DER SubjectPublicKeyInfo", code: .decoding) }
        self.init(takingOwnership: key)
    }

    /// Parses a PEM `PUBLIC KEY` block.
    public convenience init(pemEncoded pem: String) throws {
        ERR_clear_error()
        let key = try OpenSSL.withReadBIO(Array(pem.utf8)) { pp_pem_read_public_key($0) }
        guard let key else { throw OpenSSL.error("no public key found in PEM input", code: .decoding) }
        self.init(takingOwnership: key)
    }

    /// The public key of a certificate.
    public convenience init(of certificate: Certificate) throws {
        try self.init(derEncoded: certificate.publicKeyDER)
    }

    /// The public half of a private key.
    public convenience init(of key: PrivateKey) throws {
        try self.init(derEncoded: key.publicKeyDER())
    }

    /// DER SubjectPublicKeyInfo.
    public var derEncoded: [UInt8] {
        (try? OpenSSL.encode("public key") { i2d_PUBKEY(pointer, $0) }) ?? []
    }

    /// SHA-256 pin of the SubjectPublicKeyInfo.
    public var spkiPin: SPKIPin { SPKIPin(subjectPublicKeyInfo: derEncoded) }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }
}
