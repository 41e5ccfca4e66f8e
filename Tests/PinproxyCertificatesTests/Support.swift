import Foundation
import PinproxyTestSupport
import Testing
@testable import PinproxyCertificates

/// `openssl x509 -text -noout` of a certificate.
func opensslText(_ certificate: Certificate) throws -> String {
    try run(["openssl", "x509", "-text", "-noout"], input: certificate.pemEncoded).stdout
}

/// Verifies `leaf` (plus intermediates) against `ca` with the openssl CLI the strict way.
func opensslVerify(leaf: Certificate, untrusted: [Certificate] = [], ca: Certificate, hostname: String? = nil,
                   ip: String? = nil, extra: [String] = []) throws -> ProcessResult {
    let dir = try TemporaryDirectory()
    let caPath = try dir.write(ca.pemEncoded, to: "ca.pem")
    let leafPath = try dir.write(leaf.pemEncoded, to: "leaf.pem")
    var args = ["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", caPath]
    if !untrusted.isEmpty {
        args += ["-untrusted", try dir.write(untrusted.map(\.pemEncoded).joined(), to: "untrusted.pem")]
    }
    if let hostname { args += ["-verify_hostname", hostname] }
    if let ip { args += ["-verify_ip", ip] }
    args += extra
    args.append(leafPath)
    return try run(args)
}

/// One CA shared by tests that only need some CA (creating one is cheap, but this keeps runs short).
let sharedAuthority: CertificateAuthority = try! CertificateAuthority.create()

/// The subject key identifier `openssl req` computes (`subjectKeyIdentifier=hash`, RFC 5280
/// method 1) for `key`, read from a throwaway self-signed certificate it makes.
func opensslKeyIdentifier(of key: PrivateKey) throws -> [UInt8] {
    let dir = try TemporaryDirectory()
    let keyPath = try dir.write(try key.pemEncoded(), to: "key.pem")
    let certificatePath = dir.file("ski.pem")
    let made = try run(["openssl", "req", "-x509", "-new", "-key", keyPath, "-subj", "/CN=ski", "-days", "1",
                        "-addext", "subjectKeyIdentifier=hash", "-out", certificatePath])
    guard made.status == 0 else { throw PinproxyError(.io, "openssl req failed: \(made.output)") }
    let text = try run(["openssl", "x509", "-in", certificatePath, "-noout", "-ext", "subjectKeyIdentifier"]).stdout
    let hex = text.split(separator: "\n").dropFirst().joined().filter(\.isHexDigit)
    return stride(from: 0, to: hex.count, by: 2).map { i in
        let start = hex.index(hex.startIndex, offsetBy: i)
        return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
    }
}
