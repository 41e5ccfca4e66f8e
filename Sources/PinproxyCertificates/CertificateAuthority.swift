internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// A root CA: its certificate and private key, checked to belong together.
public final class CertificateAuthority: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey
    /// The CA's X.509 name constraints, nil when it may sign for any name.
    public let nameConstraints: NameConstraints?

    /// Settings for a new root CA.
    public struct Options: Sendable {
        public var keyAlgorithm: PrivateKey.Algorithm = .ecP256
        public var commonName: String = CertificateAuthority.defaultCommonName
        public var organization: String = "pinproxy"
        public var validityDays: Int = 3650
        public var nameConstraints: NameConstraints? = nil
        public init() {}
    }

    public static let defaultCommonName = "pinproxy testing CA - DO NOT TRUST outside tests"

    /// Pairs a certificate with its key after checking that they match and that the certificate is a CA.
    public init(certificate: Certificate, privateKey: PrivateKey) throws {
        guard privateKey.matches(certificate) else {
            throw PinproxyError(.keyMismatch, "the private key does not belong to the certificate \(certificate.subject)")
        }
        guard certificate.isCA else {
            throw PinproxyError(.invalidArgument, "\(certificate.subject) is not a CA certificate (basicConstraints CA:TRUE is missing)")
        }
        let usage = X509_get_key_usage(certificate.pointer)
        if usage != UInt32.max && (usage & UInt32(KU_KEY_CERT_SIGN)) == 0 {
            throw PinproxyError(.invalidArgument, "\(certificate.subject) may not sign certificates (its keyUsage lacks keyCertSign); verifiers would refuse every leaf")
        }
        self.certificate = certificate
        self.privateKey = privateKey
        self.nameConstraints = certificate.nameConstraints
    }

    /// Why the CA cannot sign usable leaves at `date` (expired, not yet valid), or nil.
    public func validityProblem(at date: Date = Date()) -> String? {
        Self.validityProblem(of: certificate, at: date)
    }

    /// Why a CA with `certificate` cannot sign usable leaves at `date`, or nil.
    public static func validityProblem(of certificate: Certificate, at date: Date = Date()) -> String? {
        let iso = ISO8601DateFormatter()
        if certificate.notAfter <= date { return "the CA expired on \(iso.string(from: certificate.notAfter))" }
        if certificate.notBefore > date { return "the CA is not valid before \(iso.string(from: certificate.notBefore))" }
        return nil
    }

    /// Fails when the CA cannot sign usable leaves at `date`.
    public func checkValidity(at date: Date = Date()) throws {
        if let problem = validityProblem(at: date) {
            throw PinproxyError(.invalidArgument, "\(problem); create a new CA with 'pinproxy ca init --force' or import a valid one")
        }
    }

    /// Creates a new self-signed root CA, valid from one day ago (a client whose clock is behind
    /// still takes it) until `validityDays` days from now: `--days 1` is a CA for the next day,
    /// not one whose day was used up by the backdating.
    public static func create(_ options: Options = Options(), now: Date = Date()) throws -> CertificateAuthority {
        guard (1...36500).contains(options.validityDays) else {
            throw PinproxyError(.invalidArgument, "CA validity must be 1–36500 days, not \(options.validityDays)")
        }
        guard !options.commonName.isEmpty, options.commonName.utf8.count <= 64 else {
            throw PinproxyError(.invalidArgument, "the CA name must be 1–64 characters")
        }
        let key = try PrivateKey.generate(options.keyAlgorithm)
        let notBefore = now.addingTimeInterval(-86_400)
        let spec = CertificateSpec.certificateAuthority(
            subject: DistinguishedName(commonName: options.commonName, organization: options.organization),
            notBefore: notBefore,
            notAfter: now.addingTimeInterval(TimeInterval(options.validityDays) * 86_400),
            nameConstraints: options.nameConstraints)
        let certificate = try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
        return try CertificateAuthority(certificate: certificate, privateKey: key)
    }

    /// Reads a CA from PEM text holding both the certificate and the key
    /// (mitmproxy's `mitmproxy-ca.pem` layout), or from separate texts.
    public static func parse(certificatePEM: String, keyPEM: String? = nil, password: String? = nil) throws -> CertificateAuthority {
        let certificates = try Certificate.all(pemEncoded: certificatePEM)
        guard let certificate = certificates.first else {
            throw PinproxyError(.decoding, "no certificate found")
        }
        let keyText = keyPEM ?? certificatePEM
        guard keyText.contains("PRIVATE KEY") else {
            throw PinproxyError(.decoding, keyPEM == nil
                ? "no private key found next to the certificate; pass the key file with --key"
                : "the key file holds no PEM private key")
        }
        let key = try PrivateKey(pemEncoded: keyText, password: password)
        return try CertificateAuthority(certificate: certificate, privateKey: key)
    }

    /// Whether leaves for all of `names` satisfy the CA's name constraints (true if it has none).
    public func permits(_ names: [HostName]) -> Bool {
        guard let nameConstraints else { return true }
        return names.allSatisfy(nameConstraints.permits)
    }

    /// The name constraints as `openssl x509 -text` prints them, or nil if unconstrained.
    public var nameConstraintsText: String? { Self.nameConstraintsText(of: certificate) }

    /// `certificate`'s name constraints as `openssl x509 -text` prints them, or nil if unconstrained.
    public static func nameConstraintsText(of certificate: Certificate) -> String? {
        let bytes = (try? OpenSSL.withMemoryBIO { bio in
            if pp_x509_print_ext(bio, certificate.pointer, NID_name_constraints) != 1 {
                throw PinproxyError(.decoding, "no name constraints")
            }
        }) ?? []
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// A PKCS#12 bundle holding the CA certificate only (no key), empty password.
    public func pkcs12CertificateOnly() throws -> [UInt8] {
        ERR_clear_error()
        guard let p12 = pp_pkcs12_cert_only(certificate.pointer, "pinproxy CA") else {
            throw OpenSSL.error("cannot build the PKCS#12 bundle")
        }
        defer { PKCS12_free(p12) }
        return try OpenSSL.encode("PKCS#12") { i2d_PKCS12(p12, $0) }
    }
}
