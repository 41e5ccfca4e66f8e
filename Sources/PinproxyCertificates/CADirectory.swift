import Foundation

/// The files of a CA on disk, in one directory.
///
/// | file | content |
/// |---|---|
/// | `pinproxy-ca.pem` | certificate, PEM |
/// | `pinproxy-ca.cer` | certificate, DER (iOS, macOS, Windows) |
/// | `pinproxy-ca-key.pem` | private key, PKCS#8 PEM, mode 0600 |
/// | `<subject_hash_old>.0` | certificate, PEM, named for Android's system store |
/// | `pinproxy-ca.p12` | certificate only, PKCS#12, empty password |
public struct CADirectory: Sendable {
    public let path: String

    /// The environment variable that overrides the default directory.
    public static let environmentVariable = "PINPROXY_CA_DIR"
    public static let defaultPath = "certs"

    public init(path: String) { self.path = path }

    /// `explicit` if given, else `$PINPROXY_CA_DIR`, else `certs`.
    public static func resolve(_ explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> CADirectory {
        if let explicit, !explicit.isEmpty { return CADirectory(path: explicit) }
        if let fromEnvironment = environment[environmentVariable], !fromEnvironment.isEmpty {
            return CADirectory(path: fromEnvironment)
        }
        return CADirectory(path: defaultPath)
    }

    public var certificatePEMPath: String { join("pinproxy-ca.pem") }
    public var certificateDERPath: String { join("pinproxy-ca.cer") }
    public var privateKeyPath: String { join("pinproxy-ca-key.pem") }
    public var pkcs12Path: String { join("pinproxy-ca.p12") }
    public func androidPath(for certificate: Certificate) -> String {
        join(CADirectory.androidFileName(for: certificate))
    }
    public static func androidFileName(for certificate: Certificate) -> String {
        String(format: "%08x.0", certificate.subjectHashOld)
    }

    /// Whether a CA (certificate or key) is already stored here.
    public var exists: Bool {
        FileManager.default.fileExists(atPath: certificatePEMPath) || FileManager.default.fileExists(atPath: privateKeyPath)
    }

    /// Loads the stored CA.
    public func load() throws -> CertificateAuthority {
        guard FileManager.default.fileExists(atPath: certificatePEMPath) else {
            throw PinproxyError(.caMissing, "no CA in \(path) (expected \(certificatePEMPath)); run 'pinproxy ca init --dir \(path)' first")
        }
        let certificate = String(decoding: try FileIO.read(certificatePEMPath), as: UTF8.self)
        let key = String(decoding: try FileIO.read(privateKeyPath), as: UTF8.self)
        do {
            return try CertificateAuthority.parse(certificatePEM: certificate, keyPEM: key)
        } catch let error as PinproxyError {
            throw PinproxyError(error.code, "CA in \(path): \(error.reason)", openSSLErrors: error.openSSLErrors)
        }
    }

    /// Loads the stored CA, creating one first if there is none.
    public func loadOrCreate(_ options: CertificateAuthority.Options = .init()) throws -> (CertificateAuthority, created: Bool) {
        if exists { return (try load(), false) }
        let ca = try CertificateAuthority.create(options)
        try store(ca, overwrite: false)
        return (ca, true)
    }

    /// Writes every file; refuses to replace an existing CA unless `overwrite`.
    /// The key is written first with mode 0600 and never wider.
    @discardableResult
    public func store(_ ca: CertificateAuthority, overwrite: Bool) throws -> [String] {
        if exists && !overwrite {
            throw PinproxyError(.caExists, "a CA already exists in \(path); pass --force to replace it (clients that trust the old one will stop trusting the proxy)")
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw PinproxyError(.io, "cannot create directory \(path): \(error.localizedDescription)")
        }
        // Remove Android files of a replaced CA, whose hash names differ.
        if let old = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in old where name.count == 10 && name.hasSuffix(".0") && name.dropLast(2).allSatisfy(\.isHexDigit) {
                try? FileManager.default.removeItem(atPath: join(name))
            }
        }
        let pem = Array(ca.certificate.pemEncoded.utf8)
        try FileIO.write(Array(try ca.privateKey.pemEncoded().utf8), to: privateKeyPath, mode: 0o600)
        try FileIO.write(pem, to: certificatePEMPath, mode: 0o644)
        try FileIO.write(ca.certificate.derEncoded, to: certificateDERPath, mode: 0o644)
        try FileIO.write(pem, to: androidPath(for: ca.certificate), mode: 0o644)
        try FileIO.write(try ca.pkcs12CertificateOnly(), to: pkcs12Path, mode: 0o644)
        return files(for: ca)
    }

    /// Every path this directory holds for `ca`.
    public func files(for ca: CertificateAuthority) -> [String] {
        [certificatePEMPath, certificateDERPath, privateKeyPath, androidPath(for: ca.certificate), pkcs12Path]
    }

    private func join(_ name: String) -> String {
        (path as NSString).appendingPathComponent(name)
    }
}
