internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// An X.509 certificate, owning an OpenSSL `X509`.
// Sendable: a Certificate is never mutated after construction, and OpenSSL
// permits concurrent reads of one X509 once its extensions are cached (done
// in init by X509_check_ca).
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    package let pointer: OpaquePointer

    package init(takingOwnership pointer: OpaquePointer) {
        self.pointer = pointer
        // Populate OpenSSL's extension cache now so later reads never write.
        _ = X509_check_ca(pointer)
    }

    /// Wraps a certificate under construction: OpenSSL caches extension
    /// flags on first read, so nothing may read it before it is signed.
    init(underConstruction pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Wraps `pointer` after taking a new reference to it.
    package init(borrowing pointer: OpaquePointer) {
        X509_up_ref(pointer)
        self.pointer = pointer
        _ = X509_check_ca(pointer)
    }

    deinit { X509_free(pointer) }

    /// Parses one DER certificate.
    public convenience init(derEncoded der: [UInt8]) throws {
        ERR_clear_error()
        let x: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &p, buffer.count)
        }
        guard let x else { throw OpenSSL.error("input is not a DER certificate", code: .decoding) }
        self.init(takingOwnership: x)
    }

    /// Parses the first certificate of a PEM text.
    public convenience init(pemEncoded pem: String) throws {
        let all = try Certificate.all(pemEncoded: pem)
        guard let first = all.first else {
            throw PinproxyError(.decoding, "no certificate found in PEM input")
        }
        self.init(borrowing: first.pointer)
    }

    /// Every certificate of a PEM text, in order. Other PEM blocks (keys) are skipped.
    public static func all(pemEncoded pem: String) throws -> [Certificate] {
        ERR_clear_error()
        return try OpenSSL.withReadBIO(Array(pem.utf8)) { bio in
            var out: [Certificate] = []
            // Never PEM_read_bio_X509 without a callback: OpenSSL would ask for
            // the pass phrase of a block that says it is encrypted on the terminal.
            while let x = pp_pem_read_x509(bio) {
                out.append(Certificate(takingOwnership: x))
            }
            // The loop ends with a "no start line" error at end of input.
            ERR_clear_error()
            return out
        }
    }

    /// Loads every certificate of a file holding PEM (any number) or one DER certificate: the one
    /// reader of certificate files, so every command words a damaged file the same way.
    public static func load(contentsOf path: String) throws -> [Certificate] {
        let bytes = try FileIO.read(path)
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }) {
            throw PinproxyError(.decoding, "\(path) is empty; expected PEM certificates or one DER certificate")
        }
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            let certs = try all(pemEncoded: text)
            // The reader stops at the first block that does not decode; a file cut short or
            // edited by hand would otherwise lose its later certificates without a word.
            let blocks = ["-----BEGIN CERTIFICATE-----", "-----BEGIN X509 CERTIFICATE-----"]
                .map { text.components(separatedBy: $0).count - 1 }.reduce(0, +)
            if certs.count < blocks {
                throw PinproxyError(.decoding, "\(path): CERTIFICATE block \(certs.count + 1) of \(blocks) is damaged: its base64 between the BEGIN and END lines does not decode to a certificate")
            }
            if certs.isEmpty { throw PinproxyError(.decoding, "\(path): holds no CERTIFICATE PEM block") }
            return certs
        }
        do {
            return [try Certificate(derEncoded: bytes)]
        } catch let error as PinproxyError {
            throw PinproxyError(.decoding, "\(path): neither PEM nor a DER certificate", openSSLErrors: error.openSSLErrors)
        }
    }

    /// DER encoding.
    public var derEncoded: [UInt8] {
        // Encoding an already-parsed certificate cannot fail short of memory exhaustion.
        (try? OpenSSL.encode("certificate") { i2d_X509(pointer, $0) }) ?? []
    }

    /// PEM encoding (one `CERTIFICATE` block with a trailing newline).
    public var pemEncoded: String {
        let bytes = (try? OpenSSL.withMemoryBIO { bio in
            try OpenSSL.check(PEM_write_bio_X509(bio, pointer), "could not encode the certificate")
        }) ?? []
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Subject as an RFC 2253 string.
    public var subject: String { Certificate.format(name: X509_get_subject_name(pointer)) }
    /// Issuer as an RFC 2253 string.
    public var issuer: String { Certificate.format(name: X509_get_issuer_name(pointer)) }
    /// The subject's commonName, if any.
    public var subjectCommonName: String? { Certificate.entry(NID_commonName, of: X509_get_subject_name(pointer)) }
    /// The subject's organizationName, if any.
    public var subjectOrganization: String? { Certificate.entry(NID_organizationName, of: X509_get_subject_name(pointer)) }
    /// The subject's attribute types in DER order (OpenSSL short names: `O`, `CN`, ...).
    var subjectAttributeTypes: [String] {
        guard let name = X509_get_subject_name(pointer) else { return [] }
        return (0..<X509_NAME_entry_count(name)).compactMap { index in
            guard let entry = X509_NAME_get_entry(name, index),
                  let short = OBJ_nid2sn(OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))) else { return nil }
            return String(validatingCString: short)
        }
    }

    public var notBefore: Date { OpenSSL.date(X509_get0_notBefore(pointer)) }
    public var notAfter: Date { OpenSSL.date(X509_get0_notAfter(pointer)) }

    /// Serial number in hex.
    public var serialNumberHex: String {
        guard let serial = X509_get0_serialNumber(pointer), let bn = ASN1_INTEGER_to_BN(serial, nil) else { return "" }
        defer { BN_free(bn) }
        guard let hex = BN_bn2hex(bn) else { return "" }
        defer { pp_OPENSSL_free(hex) }
        return String(cString: hex).lowercased()
    }

    /// Whether the serial number is positive (RFC 5280 requires it).
    public var hasPositiveSerial: Bool {
        guard let serial = X509_get0_serialNumber(pointer), let bn = ASN1_INTEGER_to_BN(serial, nil) else { return false }
        defer { BN_free(bn) }
        return BN_is_negative(bn) == 0 && BN_is_zero(bn) == 0
    }

    /// SHA-256 of the DER encoding.
    public var sha256Fingerprint: [UInt8] { OpenSSL.sha256(derEncoded) }

    /// `AB:CD:...`, the form browsers and `openssl x509 -fingerprint` show.
    public var sha256FingerprintText: String { sha256Fingerprint.hexString(separator: ":").uppercased() }

    /// DER SubjectPublicKeyInfo.
    public var publicKeyDER: [UInt8] {
        guard let pub = X509_get_X509_PUBKEY(pointer) else { return [] }
        return (try? OpenSSL.encode("public key") { i2d_X509_PUBKEY(pub, $0) }) ?? []
    }

    /// The public key's algorithm and size: `EC P-256`, `RSA 2048`, ...
    public var publicKeyAlgorithmDescription: String {
        X509_get0_pubkey(pointer).map { PrivateKey.algorithmDescription(of: $0) } ?? "no readable public key"
    }

    /// SHA-256 pin of the SubjectPublicKeyInfo.
    public var spkiPin: SPKIPin { SPKIPin(subjectPublicKeyInfo: publicKeyDER) }

    /// DNS names and IP addresses from the subjectAltName extension.
    public var subjectAlternativeNames: [SubjectAlternativeName] {
        var out: [SubjectAlternativeName] = []
        forEachSubjectAltName { type, bytes in
            switch type {
            case 1: out.append(.dns(String(decoding: bytes, as: UTF8.self)))
            case 2: out.append(.ipAddress(bytes))
            default: break
            }
        }
        return out
    }

    /// The subjectAltName's URI and email (rfc822Name) entries, their IA5 bytes as written.
    public var subjectAlternativeURIsAndEmails: (uris: [[UInt8]], emails: [[UInt8]]) {
        var uris: [[UInt8]] = [], emails: [[UInt8]] = []
        forEachSubjectAltName { type, bytes in
            if type == 3 { uris.append(bytes) } else if type == 4 { emails.append(bytes) }
        }
        return (uris, emails)
    }

    /// Each subjectAltName entry the shim reads: 1 DNS, 2 IP address, 3 URI, 4 email; 0 another kind.
    private func forEachSubjectAltName(_ body: (Int32, [UInt8]) -> Void) {
        guard let names = pp_x509_get_sans(pointer) else { return }
        defer { pp_general_names_free(names) }
        for i in 0..<pp_general_names_count(names) {
            var type: Int32 = 0
            var data: UnsafePointer<UInt8>? = nil
            var length: Int32 = 0
            guard pp_general_names_get(names, i, &type, &data, &length) == 1, let data else { continue }
            body(type, Array(UnsafeBufferPointer(start: data, count: Int(length))))
        }
    }

    /// Whether basicConstraints marks this certificate as a CA.
    public var isCA: Bool { (X509_get_extension_flags(pointer) & UInt32(EXFLAG_CA)) != 0 }

    /// Whether subject and issuer are the same name and the signature verifies with its own key.
    public var isSelfSigned: Bool { X509_self_signed(pointer, 1) == 1 }

    /// Subject key identifier bytes, if present.
    public var subjectKeyIdentifier: [UInt8]? {
        guard let id = X509_get0_subject_key_id(pointer) else { return nil }
        return Certificate.bytes(of: id)
    }

    /// Authority key identifier keyid bytes, if present.
    public var authorityKeyIdentifier: [UInt8]? {
        guard let id = X509_get0_authority_key_id(pointer) else { return nil }
        return Certificate.bytes(of: id)
    }

    /// OpenSSL's pre-1.0 subject hash, the file name Android's system store uses.
    public var subjectHashOld: UInt32 { UInt32(truncatingIfNeeded: X509_subject_name_hash_old(pointer)) }

    /// `PUBLIC KEY` PEM of the certificate's key.
    public var publicKeyPEM: String {
        let der = publicKeyDER
        let b64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PUBLIC KEY-----\n\(b64)\n-----END PUBLIC KEY-----\n"
    }

    /// Whether `issuer` could have issued this certificate: names chain and the signature verifies.
    public func isIssued(by issuer: Certificate) -> Bool {
        ERR_clear_error()
        defer { ERR_clear_error() }
        guard X509_check_issued(issuer.pointer, pointer) == X509_V_OK,
              let key = X509_get0_pubkey(issuer.pointer) else { return false }
        return X509_verify(pointer, key) == 1
    }

    public var description: String { "Certificate(\(subject))" }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool {
        lhs.pointer == rhs.pointer || X509_cmp(lhs.pointer, rhs.pointer) == 0
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(sha256Fingerprint) }

    // MARK: - helpers

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(string))
        guard let data = ASN1_STRING_get0_data(string), length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    static func format(name: OpaquePointer?) -> String {
        guard let name else { return "" }
        let bytes = (try? OpenSSL.withMemoryBIO { bio in
            _ = pp_x509_name_print_rfc2253(bio, name)
        }) ?? []
        return String(decoding: bytes, as: UTF8.self)
    }

    static func entry(_ nid: Int32, of name: OpaquePointer?) -> String? {
        guard let name else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index),
              let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { pp_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }
}

/// One entry of a subjectAltName extension that pinproxy understands.
public enum SubjectAlternativeName: Hashable, Sendable, CustomStringConvertible {
    case dns(String)
    case ipAddress([UInt8])

    public var description: String {
        switch self {
        case .dns(let name): return "DNS:\(name)"
        case .ipAddress(let bytes): return "IP:\(HostName.format(address: bytes))"
        }
    }
}
