internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// A public key, owning an OpenSSL `EVP_PKEY` without its private half.
// Sendable: immutable after creation.
public final class PublicKey: @unchecked Sendable, Hashable {
    package let pointer: OpaquePointer
    /// The SubjectPublicKeyInfo as it was read, for a key read from DER
    /// (a certificate's among them); nil: encoded by OpenSSL when asked.
    private let encoding: [UInt8]?

    package init(takingOwnership pointer: OpaquePointer) {
        self.pointer = pointer
        encoding = nil
    }

    private init(takingOwnership pointer: OpaquePointer, encoding: [UInt8]) {
        self.pointer = pointer
        self.encoding = encoding
    }

    deinit { EVP_PKEY_free(pointer) }

    /// Parses a DER SubjectPublicKeyInfo. The key keeps those bytes: its
    /// ``derEncoded`` and ``spkiPin`` are those of the SPKI as written, as a
    /// certificate's are (RFC 7469 §2.4 hashes the SPKI the certificate
    /// carries). OpenSSL's own encoding of the key can differ from them: it
    /// writes RSA's algorithm parameters as NULL whatever the input had there.
    public convenience init(derEncoded der: [UInt8]) throws {
        ERR_clear_error()
        var consumed = 0
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PUBKEY(nil, &p, buffer.count)
            if let start = buffer.baseAddress, let p { consumed = p - start }
            return key
        }
        guard let key else { throw OpenSSL.error("input is not a DER SubjectPublicKeyInfo", code: .decoding) }
        self.init(takingOwnership: key, encoding: Array(der.prefix(consumed)))
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

    /// DER SubjectPublicKeyInfo: as read, for a key read from DER.
    public var derEncoded: [UInt8] {
        if let encoding, !encoding.isEmpty { return encoding }
        return (try? OpenSSL.encode("public key") { i2d_PUBKEY(pointer, $0) }) ?? []
    }

    /// SHA-256 pin of the SubjectPublicKeyInfo.
    public var spkiPin: SPKIPin { SPKIPin(subjectPublicKeyInfo: derEncoded) }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }
}
