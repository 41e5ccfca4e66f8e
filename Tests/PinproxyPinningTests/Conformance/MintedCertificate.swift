import Foundation
import PinproxyCertificates
@testable import PinproxyPinning

/// A certificate and its key, minted at test time by the `openssl ca` command.
///
/// The libraries' own suites ship certificates with shapes pinproxy's issuer does not make
/// (no key identifiers, a root whose only EKU is anyExtendedKeyUsage, URI subjectAltNames,
/// version-1 certificates without extensions) and with validity windows in the past. `openssl ca`
/// writes exactly the extensions asked for (key identifiers only when listed) between explicit
/// dates, so a ported case gets a fixture of the same shape, generated for this run.
struct Minted: Sendable {
    let certificate: Certificate
    let key: PrivateKey

    /// Issues a certificate for `subject` (`/CN=…/O=…`) signed by `issuer` (nil: self-signed),
    /// with these extension lines (none: a version-1 certificate), valid between the two dates.
    /// `key` reuses a subject key (a re-issued certificate); otherwise a P-256 key is drawn.
    static func issue(_ subject: String, extensions: [String] = [], from notBefore: Date, to notAfter: Date,
                      issuer: Minted? = nil, key: PrivateKey? = nil) throws -> Minted {
        let dir = try TemporaryDirectory()
        let subjectKey = try key ?? PrivateKey.generate(.ecP256)
        let keyFile = try dir.write("subject.key", try subjectKey.pemEncoded())
        let csr = (dir.path as NSString).appendingPathComponent("subject.csr")
        try openssl(["req", "-new", "-key", keyFile, "-subj", subject, "-out", csr])
        try dir.write("index.txt", "")
        try dir.write("serial", String(format: "%016llX\n", UInt64.random(in: 1...UInt64(Int64.max))))
        let config = try dir.write("ca.cnf", """
            [ ca ]
            default_ca = minted
            [ minted ]
            database = \(dir.path)/index.txt
            new_certs_dir = \(dir.path)
            serial = \(dir.path)/serial
            default_md = sha256
            policy = anything
            unique_subject = no
            [ anything ]
            commonName = optional

            """)
        let out = (dir.path as NSString).appendingPathComponent("subject.pem")
        var arguments = ["ca", "-batch", "-config", config, "-in", csr, "-out", out, "-notext", "-preserveDN",
                         "-startdate", stamp(notBefore), "-enddate", stamp(notAfter)]
        if !extensions.isEmpty {
            // Key identifiers only when the case lists them: `openssl ca` adds them otherwise.
            var lines = extensions
            if !lines.contains(where: { $0.hasPrefix("subjectKeyIdentifier") }) { lines.append("subjectKeyIdentifier=none") }
            if !lines.contains(where: { $0.hasPrefix("authorityKeyIdentifier") }) { lines.append("authorityKeyIdentifier=none") }
            arguments += ["-extfile", try dir.write("ext.cnf", lines.joined(separator: "\n") + "\n")]
        }
        if let issuer {
            let issuerFile = try dir.write("issuer.pem", issuer.certificate.pemEncoded)
            let issuerKey = try dir.write("issuer.key", try issuer.key.pemEncoded())
            arguments += ["-cert", issuerFile, "-keyfile", issuerKey]
        } else {
            arguments += ["-selfsign", "-keyfile", keyFile]
        }
        try openssl(arguments)
        return Minted(certificate: try Certificate.load(contentsOf: out)[0], key: subjectKey)
    }

    /// A certificate with the same subject, key and extensions signed by another issuer
    /// (a cross-certificate), valid between the two dates.
    func crossSigned(_ subject: String, extensions: [String], by issuer: Minted, from notBefore: Date, to notAfter: Date) throws -> Certificate {
        try Minted.issue(subject, extensions: extensions, from: notBefore, to: notAfter, issuer: issuer, key: key).certificate
    }

    private static func stamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try run("/usr/bin/openssl", arguments)
        guard result.status == 0 else {
            throw PinproxyError(.io, "openssl \(arguments.first ?? "") failed: \(result.stderr)")
        }
    }
}

/// A UTC instant written `2016-01-22T00:00:00Z`, for the dates the suites evaluate at.
func utc(_ text: String) throws -> Date {
    guard let date = ISO8601DateFormatter().date(from: text) else { throw PinproxyError(.invalidArgument, "bad test date \(text)") }
    return date
}

/// Extension lines of a CA certificate in a public PKI (key identifiers included).
func caExtensions(pathLength: Int? = nil, selfSigned: Bool = false) -> [String] {
    ["basicConstraints=critical,CA:TRUE" + (pathLength.map { ",pathlen:\($0)" } ?? ""),
     "keyUsage=critical,keyCertSign,cRLSign", "subjectKeyIdentifier=hash"]
        + (selfSigned ? [] : ["authorityKeyIdentifier=keyid:always"])
}

/// Extension lines of a TLS server leaf in a public PKI with these DNS names.
func leafExtensions(_ names: [String]) -> [String] {
    ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
     "extendedKeyUsage=serverAuth", "subjectAltName=" + names.map { "DNS:" + $0 }.joined(separator: ","),
     "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid:always"]
}
