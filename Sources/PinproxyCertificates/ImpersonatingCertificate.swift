internal import COpenSSL
internal import CPinproxyShims
import Foundation

extension Certificate {
    /// A CA certificate that carries `genuine`'s public key, subject and
    /// validity, but that the holder of that key never signed: `signingKey`
    /// signs it, naming `parent` (or itself, when nil) as its issuer.
    ///
    /// Chains of these stand in for a genuine chain whose private keys the
    /// proxy does not have: every name and key identifier links up, so a
    /// client that walks the chain by name, or looks for a pinned key anywhere
    /// in it, finds the genuine keys — and no signature on the way verifies.
    ///
    /// - `extraSubjectAttribute` is appended to the copied subject, to keep the
    ///   name apart from a certificate that already bears it (a forged leaf
    ///   imitating the genuine one).
    /// - The subject key identifier is the genuine one (or, without one, the
    ///   RFC 5280 method-1 identifier of the key); the authority key
    ///   identifier is the parent's.
    /// - Pass a `signingKey` of the parent's key type: OpenSSL links a
    ///   certificate to an issuer only when the signature algorithm matches
    ///   the issuer's key type.
    public static func impersonating(
        _ genuine: Certificate, extraSubjectAttribute: DistinguishedName.Attribute? = nil,
        issuedBy parent: Certificate?, signingKey: PrivateKey
    ) throws -> Certificate {
        ERR_clear_error()
        guard let genuineKey = X509_get0_pubkey(genuine.pointer) else {
            throw OpenSSL.error("the certificate \(genuine.subject) has a public key OpenSSL cannot read")
        }
        guard let x = X509_new() else { throw OpenSSL.error("X509_new failed") }
        let certificate = Certificate(underConstruction: x)
        try OpenSSL.check(X509_set_version(x, 2), "cannot set the version")
        let serial = try Certificate.randomSerial()
        try OpenSSL.check(pp_x509_set_serial(x, serial, Int32(serial.count)), "cannot set the serial number")
        try OpenSSL.check(X509_set1_notBefore(x, X509_get0_notBefore(genuine.pointer)), "cannot set notBefore")
        try OpenSSL.check(X509_set1_notAfter(x, X509_get0_notAfter(genuine.pointer)), "cannot set notAfter")

        guard let subject = X509_NAME_dup(X509_get_subject_name(genuine.pointer)) else { throw OpenSSL.error("cannot copy the subject") }
        defer { X509_NAME_free(subject) }
        if let extraSubjectAttribute { try DistinguishedName([extraSubjectAttribute]).add(to: subject) }
        try OpenSSL.check(X509_set_subject_name(x, subject), "cannot set the subject")
        try OpenSSL.check(X509_set_issuer_name(x, parent.map { X509_get_subject_name($0.pointer) } ?? subject), "cannot set the issuer")

        // A legacy-backed copy of the key: OpenSSL 3 otherwise runs its
        // encoder and decoder on a provider key (~270 µs a certificate).
        let legacy = pp_pkey_legacy_copy(genuineKey)
        defer { if let legacy { EVP_PKEY_free(legacy) } }
        try OpenSSL.check(X509_set_pubkey(x, legacy ?? genuineKey), "cannot set the public key")

        try certificate.addConfiguredExtension(NID_basic_constraints, "critical,CA:TRUE")
        try certificate.addConfiguredExtension(NID_key_usage, "critical,keyCertSign,cRLSign")
        let ownID = genuine.subjectKeyIdentifier ?? certificate.keyIdentifierOfOwnKey()
        try certificate.addExtension(pp_x509_ext_subject_key_id(ownID, Int32(ownID.count)), "subjectKeyIdentifier")
        let issuerID = parent.map { $0.subjectKeyIdentifier ?? $0.keyIdentifierOfOwnKey() } ?? ownID
        try certificate.addExtension(pp_x509_ext_authority_key_id(issuerID, Int32(issuerID.count)), "authorityKeyIdentifier")
        try certificate.sign(with: signingKey)
        return certificate
    }

    /// Whether the certificate's key is RSA (else EC or EdDSA).
    public var hasRSAKey: Bool {
        guard let key = X509_get0_pubkey(pointer) else { return false }
        return EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA
    }
}

extension PrivateKey {
    /// A new key of `algorithm` backed by a legacy key object, the fastest to
    /// sign certificates with under OpenSSL 3.
    public static func generateForSigning(_ algorithm: Algorithm) throws -> PrivateKey {
        try generate(algorithm).fastSigningCopy()
    }
}
