internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// Who signs a certificate being issued.
public enum CertificateSigner: Sendable {
    /// The subject's own key signs; issuer name = subject name.
    case selfSigned(PrivateKey)
    /// A CA certificate and its key.
    case authority(Certificate, PrivateKey)
    /// An issuer known only by name and key, with no certificate of its own
    /// (used to build chains whose parent is forged).
    case named(DistinguishedName, PrivateKey)
}

extension Certificate {
    /// Issues a certificate for `subjectKey` as `spec` describes, signed by `signer`.
    public static func issue(_ spec: CertificateSpec, subjectKey: PublicKey, signer: CertificateSigner) throws -> Certificate {
        try issue(spec, subjectKeyPointer: subjectKey.pointer, isRSA: EVP_PKEY_get_base_id(subjectKey.pointer) == EVP_PKEY_RSA, signer: signer)
    }

    /// Issues a certificate for the public half of `subjectKey`.
    public static func issue(_ spec: CertificateSpec, subjectKey: PrivateKey, signer: CertificateSigner) throws -> Certificate {
        try issue(spec, subjectKeyPointer: subjectKey.pointer, isRSA: subjectKey.isRSA, signer: signer)
    }

    private static func issue(_ spec: CertificateSpec, subjectKeyPointer: OpaquePointer, isRSA: Bool, signer: CertificateSigner) throws -> Certificate {
        ERR_clear_error()
        guard let x = X509_new() else { throw OpenSSL.error("X509_new failed") }
        let certificate = Certificate(underConstruction: x)
        try OpenSSL.check(X509_set_version(x, 2), "cannot set the version")
        let serial = try spec.serialNumber ?? Certificate.randomSerial()
        try OpenSSL.check(pp_x509_set_serial(x, serial, Int32(serial.count)), "cannot set the serial number")
        try OpenSSL.check(
            pp_x509_set_validity(x, Int64(spec.notBefore.timeIntervalSince1970), Int64(spec.notAfter.timeIntervalSince1970)),
            "cannot set the validity")

        let subject = try spec.subject.makeX509Name()
        defer { X509_NAME_free(subject) }
        try OpenSSL.check(X509_set_subject_name(x, subject), "cannot set the subject")
        try OpenSSL.check(X509_set_pubkey(x, subjectKeyPointer), "cannot set the public key")

        let signingKey: PrivateKey
        let issuerKeyID: [UInt8]?
        switch signer {
        case .selfSigned(let key):
            signingKey = key
            try OpenSSL.check(X509_set_issuer_name(x, subject), "cannot set the issuer")
            issuerKeyID = nil
        case .authority(let ca, let key):
            signingKey = key
            try OpenSSL.check(X509_set_issuer_name(x, X509_get_subject_name(ca.pointer)), "cannot set the issuer")
            issuerKeyID = ca.subjectKeyIdentifier ?? Certificate.keyIdentifier(ofKey: key)
        case .named(let name, let key):
            signingKey = key
            let issuerName = try name.makeX509Name()
            defer { X509_NAME_free(issuerName) }
            try OpenSSL.check(X509_set_issuer_name(x, issuerName), "cannot set the issuer")
            issuerKeyID = Certificate.keyIdentifier(ofKey: key)
        }

        var basic = spec.isCA ? "critical,CA:TRUE" : "critical,CA:FALSE"
        if spec.isCA, let pathLength = spec.pathLength { basic += ",pathlen:\(max(0, pathLength))" }
        try certificate.addConfiguredExtension(NID_basic_constraints, basic)
        var usage = spec.keyUsage
        if !isRSA { usage.remove(.keyEncipherment) }
        if !usage.isEmpty {
            try certificate.addConfiguredExtension(NID_key_usage, "critical," + usage.configurationWords.joined(separator: ","))
        }
        if !spec.extendedKeyUsage.isEmpty {
            try certificate.addConfiguredExtension(NID_ext_key_usage, spec.extendedKeyUsage.map(\.rawValue).joined(separator: ","))
        }
        if spec.includeKeyIdentifiers {
            let ski = certificate.keyIdentifierOfOwnKey()
            try certificate.addExtension(pp_x509_ext_subject_key_id(ski, Int32(ski.count)), "subjectKeyIdentifier")
            let aki = issuerKeyID ?? ski
            try certificate.addExtension(pp_x509_ext_authority_key_id(aki, Int32(aki.count)), "authorityKeyIdentifier")
        }
        if !spec.subjectAlternativeNames.isEmpty {
            // An empty subject makes the SAN the only identity: RFC 5280 then requires it critical.
            try certificate.addSubjectAlternativeNames(spec.subjectAlternativeNames, critical: spec.subject.isEmpty)
        }
        if let constraints = spec.nameConstraints, !constraints.isEmpty {
            try certificate.addNameConstraints(constraints)
        }
        try certificate.sign(with: signingKey)
        return certificate
    }

    /// 16 random bytes made a serial number (``serialNumber(fromRandom:)``).
    static func randomSerial() throws -> [UInt8] {
        serialNumber(fromRandom: try OpenSSL.randomBytes(16))
    }

    /// Random bytes made a positive serial number of the same length: the top
    /// bit cleared (a set one would make the INTEGER negative), and a first
    /// byte that comes out zero made 0x01, since DER drops leading zero bytes
    /// and the serial would be shorter than promised. 16 bytes keep 127 bits
    /// of entropy, under RFC 5280's 20-octet limit.
    static func serialNumber(fromRandom random: some Collection<UInt8>) -> [UInt8] {
        var bytes = Array(random)
        guard !bytes.isEmpty else { return [0x01] }
        bytes[0] &= 0x7f
        if bytes[0] == 0 { bytes[0] = 0x01 }
        return bytes
    }

    /// RFC 5280 method 1 key identifier: SHA-1 of the subjectPublicKey bits.
    func keyIdentifierOfOwnKey() -> [UInt8] {
        var data: UnsafePointer<UInt8>? = nil
        var length: Int32 = 0
        guard pp_x509_public_key_bits(pointer, &data, &length) == 1, let data else { return [] }
        return OpenSSL.sha1(Array(UnsafeBufferPointer(start: data, count: Int(length))))
    }

    static func keyIdentifier(ofKey key: PrivateKey) -> [UInt8] {
        // The key bits are the SPKI's BIT STRING; derive them through a scratch certificate-free path.
        guard let der = try? key.publicKeyDER(), let bits = SubjectPublicKeyInfo.keyBits(der) else { return [] }
        return OpenSSL.sha1(bits)
    }

    func addConfiguredExtension(_ nid: Int32, _ value: String) throws {
        try addExtension(pp_x509_ext_from_conf(nid, value, nil, nil), "extension \(value)")
    }

    func addExtension(_ ext: OpaquePointer?, _ what: String) throws {
        guard let ext else { throw OpenSSL.error("cannot build \(what)") }
        defer { X509_EXTENSION_free(ext) }
        try OpenSSL.check(X509_add_ext(pointer, ext, -1), "cannot add \(what)")
    }

    func addSubjectAlternativeNames(_ names: [HostName], critical: Bool) throws {
        var dns: [String] = []
        var ips: [[UInt8]] = []
        for name in names {
            if let bytes = name.addressBytes { ips.append(bytes) } else { dns.append(name.description) }
        }
        let dnsPointers = dns.map { strdup($0) }
        defer { dnsPointers.forEach { free($0) } }
        let ipPointers: [UnsafeMutablePointer<UInt8>] = ips.map { bytes in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
            p.initialize(from: bytes, count: bytes.count)
            return p
        }
        defer { ipPointers.forEach { $0.deallocate() } }
        let ipLengths = ips.map { Int32($0.count) }
        let ok = dnsPointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { dnsBuffer in
            ipPointers.map { UnsafePointer($0) }.withUnsafeBufferPointer { ipBuffer in
                pp_x509_add_san(pointer, dnsBuffer.baseAddress, Int32(dns.count),
                                ipBuffer.baseAddress, ipLengths, Int32(ips.count), critical ? 1 : 0)
            }
        }
        try OpenSSL.check(ok, "cannot add subjectAltName")
    }

    func addNameConstraints(_ constraints: NameConstraints) throws {
        guard let nc = pp_name_constraints_new() else { throw OpenSSL.error("cannot build name constraints") }
        defer { pp_name_constraints_free(nc) }
        for (permitted, names) in [(Int32(1), constraints.permittedDNS), (0, constraints.excludedDNS)] {
            for dns in names {
                try OpenSSL.check(pp_name_constraints_add_dns(nc, permitted, dns), "cannot add the DNS name constraint \(dns)")
            }
        }
        for (permitted, networks) in [(Int32(1), constraints.permittedIP), (0, constraints.excludedIP)] {
            for network in networks {
                let bytes = network.address + network.mask
                try OpenSSL.check(pp_name_constraints_add_ip(nc, permitted, bytes, Int32(bytes.count)), "cannot add the IP name constraint \(network)")
            }
        }
        try OpenSSL.check(pp_x509_add_name_constraints(pointer, nc), "cannot add name constraints")
    }

    /// The name constraints this certificate carries, if any.
    public var nameConstraints: NameConstraints? {
        guard let nc = pp_x509_get_name_constraints(pointer) else { return nil }
        defer { pp_name_constraints_free(nc) }
        var lists: [(dns: [String], ip: [IPNetwork])] = []
        for permitted in [Int32(1), 0] {
            var dns: [String] = [], ip: [IPNetwork] = []
            for i in 0..<pp_name_constraints_count(nc, permitted) {
                var type: Int32 = 0
                var data: UnsafePointer<UInt8>? = nil
                var length: Int32 = 0
                guard pp_name_constraints_get(nc, permitted, i, &type, &data, &length) == 1 else { continue }
                let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
                if type == 1 { dns.append(String(decoding: bytes, as: UTF8.self)) }
                if type == 2, let network = IPNetwork(addressAndMask: bytes) { ip.append(network) }
            }
            lists.append((dns, ip))
        }
        return NameConstraints(permittedDNS: lists[0].dns, permittedIP: lists[0].ip,
                               excludedDNS: lists[1].dns, excludedIP: lists[1].ip)
    }

    /// Signs with SHA-256 (none for EdDSA keys). `digest` may be a pre-fetched
    /// SHA-256: OpenSSL 3 otherwise looks the algorithm up on every signature.
    func sign(with key: PrivateKey, digest fetched: OpaquePointer? = nil) throws {
        let base = EVP_PKEY_get_base_id(key.pointer)
        let digest = (base == EVP_PKEY_ED25519 || base == EVP_PKEY_ED448) ? nil : (fetched ?? EVP_sha256())
        guard X509_sign(pointer, key.pointer, digest) > 0 else { throw OpenSSL.error("cannot sign the certificate") }
        _ = X509_check_ca(pointer)
    }
}

/// Minimal DER walking for SubjectPublicKeyInfo.
enum SubjectPublicKeyInfo {
    /// The contents of the subjectPublicKey BIT STRING (without the unused-bits byte).
    static func keyBits(_ der: [UInt8]) -> [UInt8]? {
        // SEQUENCE { SEQUENCE algorithm, BIT STRING key }
        guard let (outerStart, outerEnd) = element(der, at: 0, tag: 0x30),
              let (_, algorithmEnd) = element(der, at: outerStart, tag: 0x30),
              let (bitsStart, bitsEnd) = element(der, at: algorithmEnd, tag: 0x03),
              bitsEnd <= outerEnd, bitsStart < bitsEnd else { return nil }
        return Array(der[(bitsStart + 1)..<bitsEnd])
    }

    /// Returns (contentStart, contentEnd) of the element at `offset` with `tag`.
    private static func element(_ der: [UInt8], at offset: Int, tag: UInt8) -> (Int, Int)? {
        guard offset + 2 <= der.count, der[offset] == tag else { return nil }
        var index = offset + 1
        var length = Int(der[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard count >= 1, count <= 4, index + count <= der.count else { return nil }
            length = 0
            for _ in 0..<count { length = (length << 8) | Int(der[index]); index += 1 }
        }
        guard index + length <= der.count else { return nil }
        return (index, index + length)
    }
}
