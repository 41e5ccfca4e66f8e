internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// A private key (and so its public half), owning an OpenSSL `EVP_PKEY`.
// Sendable: the key is never mutated after creation; OpenSSL allows
// concurrent read-only use (signing, encoding) of one EVP_PKEY.
public final class PrivateKey: @unchecked Sendable {
    /// Key types pinproxy can generate.
    public enum Algorithm: String, CaseIterable, Sendable, CustomStringConvertible {
        case ecP256 = "ec-p256"
        case rsa2048 = "rsa-2048"
        case rsa3072 = "rsa-3072"
        case rsa4096 = "rsa-4096"

        public var description: String { rawValue }

        var rsaBits: UInt32? {
            switch self {
            case .ecP256: return nil
            case .rsa2048: return 2048
            case .rsa3072: return 3072
            case .rsa4096: return 4096
            }
        }
    }

    package let pointer: OpaquePointer

    package init(takingOwnership pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// Generates a new key.
    public static func generate(_ algorithm: Algorithm) throws -> PrivateKey {
        ERR_clear_error()
        if let bits = algorithm.rsaBits {
            guard let key = pp_rsa_generate(bits) else { throw OpenSSL.error("could not generate an RSA-\(bits) key") }
            return PrivateKey(takingOwnership: key)
        }
        return try generateFastP256()
    }

    /// A P-256 key backed by a legacy `EC_KEY`, which OpenSSL 3 sets into
    /// certificates several times faster than a provider key.
    package static func generateFastP256() throws -> PrivateKey {
        guard let key = pp_ec_p256_legacy_generate() else { throw OpenSSL.error("could not generate a P-256 key") }
        return PrivateKey(takingOwnership: key)
    }

    /// Parses a PEM private key (PKCS#8, traditional RSA or EC), decrypting it
    /// with `password` when it is encrypted. Never prompts on a terminal.
    public convenience init(pemEncoded pem: String, password: String? = nil) throws {
        ERR_clear_error()
        let key = try OpenSSL.withReadBIO(Array(pem.utf8)) { bio in
            pp_pem_read_private_key(bio, password)
        }
        guard let key else {
            if pem.contains("ENCRYPTED") {
                throw OpenSSL.error(password == nil
                    ? "the private key is encrypted; give its password, or decrypt it with 'openssl pkey -in KEY -out plain-key.pem'"
                    : "the private key is encrypted and the password does not open it", code: .decoding)
            }
            throw OpenSSL.error("no private key found in PEM input", code: .decoding)
        }
        self.init(takingOwnership: key)
    }

    /// Parses a DER private key (PKCS#8 or traditional).
    public convenience init(derEncoded der: [UInt8]) throws {
        ERR_clear_error()
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &p, buffer.count)
        }
        guard let key else { throw OpenSSL.error("input is not a DER private key", code: .decoding) }
        self.init(takingOwnership: key)
    }

    /// PKCS#8 PEM, unencrypted. Write it only to files with mode 0600.
    public func pemEncoded() throws -> String {
        ERR_clear_error()
        let bytes = try OpenSSL.withMemoryBIO { bio in
            try OpenSSL.check(PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil), "could not encode the private key")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// DER SubjectPublicKeyInfo of the public half.
    public func publicKeyDER() throws -> [UInt8] {
        try OpenSSL.encode("public key") { i2d_PUBKEY(pointer, $0) }
    }

    /// PEM `PUBLIC KEY` of the public half.
    public func publicKeyPEM() throws -> String {
        let bytes = try OpenSSL.withMemoryBIO { bio in
            try OpenSSL.check(PEM_write_bio_PUBKEY(bio, pointer), "could not encode the public key")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The SPKI SHA-256 pin of the public half.
    public func spkiPin() throws -> SPKIPin {
        SPKIPin(subjectPublicKeyInfo: try publicKeyDER())
    }

    /// `EC P-256`, `RSA 2048`, ...
    public var algorithmDescription: String { Self.algorithmDescription(of: pointer) }

    /// `EC P-256`, `RSA 2048`, ... of the key (public or private) at `pointer`.
    static func algorithmDescription(of pointer: OpaquePointer) -> String {
        let bits = EVP_PKEY_get_bits(pointer)
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_EC: return bits == 256 ? "EC P-256" : "EC \(bits)"
        case EVP_PKEY_RSA: return "RSA \(bits)"
        case EVP_PKEY_ED25519: return "Ed25519"
        default: return "key of \(bits) bits"
        }
    }

    package var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }
    package var isEC: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC }

    /// Whether this key is the private half of `certificate`'s public key.
    ///
    /// Two checks. `X509_check_private_key` compares the certificate's public key with the
    /// key's public half — but a PKCS#8 file may carry that public half beside the private
    /// scalar, and OpenSSL takes it as written: a file whose scalar was altered still passes,
    /// and every signature made with it then fails to verify. So the key also signs a fresh
    /// random message that must verify under the certificate's public key (a pairwise test,
    /// as FIPS 140 asks of a new key pair), which only the real private half can do.
    public func matches(_ certificate: Certificate) -> Bool {
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard X509_check_private_key(certificate.pointer, pointer) == 1,
              let publicKey = X509_get0_pubkey(certificate.pointer) else { return false }
        var message = [UInt8](repeating: 0, count: 32)
        guard RAND_bytes(&message, Int32(message.count)) == 1,
              let signature = sign(message) else { return false }
        return Self.verify(signature, of: message, with: publicKey)
    }

    /// One-shot signature of `message`: SHA-256 for RSA and EC keys, none for EdDSA, which hashes
    /// its own input.
    private func sign(_ message: [UInt8]) -> [UInt8]? {
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, Self.digest(for: pointer), nil, pointer) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return nil }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { return nil }
        return Array(signature.prefix(length))
    }

    private static func verify(_ signature: [UInt8], of message: [UInt8], with publicKey: OpaquePointer) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest(for: publicKey), nil, publicKey) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }

    private static func digest(for key: OpaquePointer) -> OpaquePointer? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_ED25519, EVP_PKEY_ED448: return nil
        default: return EVP_sha256()
        }
    }

    /// A copy of an EC key backed by a legacy `EC_KEY` (faster to use as a
    /// certificate's public key and for signing under OpenSSL 3); self for
    /// other key types.
    package func fastSigningCopy() -> PrivateKey {
        guard isEC, let copy = pp_ec_legacy_copy(pointer) else { return self }
        return PrivateKey(takingOwnership: copy)
    }

    /// The raw ECDSA signature of a 32-byte `digest`, DER, at the start of `signature` (made
    /// 80 bytes once, then reused, so a timed loop allocates nothing): the one operation
    /// forging a leaf cannot avoid, which `pinproxy bench forge` measures forging against.
    /// The signature's length, or nil for a key that is not EC or a failed signature.
    package func signDigest(_ digest: [UInt8], into signature: inout [UInt8]) -> Int? {
        if signature.count != 80 { signature = [UInt8](repeating: 0, count: 80) }
        var length: UInt32 = 80
        guard pp_ecdsa_sign_digest(pointer, digest, Int32(digest.count), &signature, &length) == 1 else { return nil }
        return Int(length)
    }
}
