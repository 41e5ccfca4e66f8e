internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// A root CA: its certificate and private key, checked to belong together.
public final class CertificateAuthority: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey

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
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// Creates a new self-signed root CA, valid from one day ago.
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
            notAfter: notBefore.addingTimeInterval(TimeInterval(options.validityDays) * 86_400),
            nameConstraints: options.nameConstraints)
        let certificate = try Certificate.issue(spec, subjectKey: key, signer: .selfSigned(key))
        return try CertificateAuthority(certificate: certificate, privateKey: key)
    }

    /// Reads a CA from PEM text holding both the certificate and the key
    /// (mitmproxy's `mitmproxy-ca.pem` layout), or from separate texts.
    public static func parse(certificatePEM: String, keyPEM: String? = nil) throws -> CertificateAuthority {
        let certificates = try Certificate.all(pemEncoded: certificatePEM)
        guard let certificate = certificates.first else {
            throw PinproxyError(.decoding, "no certificate found")
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pemEncoded: keyPEM ?? certificatePEM)
        } catch {
            throw PinproxyError(.decoding, keyPEM == nil
                ? "no private key found next to the certificate; pass the key file with --key"
                : "the key file holds no readable private key")
        }
        return try CertificateAuthority(certificate: certificate, privateKey: key)
    }

    /// Whether a leaf for `name` satisfies the CA's name constraints (true if it has none).
    public func permits(_ names: [HostName]) -> Bool {
        guard let leaf = try? Certificate.issue(
            .serverLeaf(names: names, notBefore: certificate.notBefore, notAfter: certificate.notAfter),
            subjectKey: privateKey, signer: .authority(certificate, privateKey)) else { return false }
        return pp_x509_check_name_constraints(certificate.pointer, leaf.pointer) == X509_V_OK
    }

    /// The name constraints as `openssl x509 -text` prints them, or nil if unconstrained.
    public var nameConstraintsText: String? {
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
