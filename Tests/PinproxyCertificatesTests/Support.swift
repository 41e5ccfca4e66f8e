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
