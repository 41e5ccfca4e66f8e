import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// Certificates for attack tests: a genuine root → intermediate → leaf chain
/// (leaf for localhost and 127.0.0.1), the proxy CA, and a misissuing CA,
/// with their files.
struct AttackWorld {
    let base: Fixtures
    let root: CertificateAuthority
    let intermediate: CertificateAuthority
    let genuineLeaf: Certificate
    let misissuing: CertificateAuthority
    var directory: TemporaryDirectory { base.directory }
    var proxyCA: CertificateAuthority { base.proxyCA }

    var rootPath: String { directory.file("genuine-root.pem") }
    /// Leaf then intermediate, as the origin sends them.
    var genuineChainPath: String { directory.file("genuine-chain.pem") }
    var genuineKeyPath: String { directory.file("genuine-key.pem") }
    var misissuingPath: String { directory.file("misissuing-ca.pem") }
    /// What the origin presents.
    var presented: [Certificate] { [genuineLeaf, intermediate.certificate] }
    /// The whole genuine chain, up to the root.
    var genuine: [Certificate] { [genuineLeaf, intermediate.certificate, root.certificate] }

    init() throws {
        base = try Fixtures()
        var options = CertificateAuthority.Options()
        options.commonName = "Genuine Root"
        root = try CertificateAuthority.create(options)
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let spec = CertificateSpec.certificateAuthority(
            subject: DistinguishedName(commonName: "Genuine Intermediate", organization: "Genuine"),
            notBefore: Date().addingTimeInterval(-86_400), notAfter: Date().addingTimeInterval(365 * 86_400), pathLength: 0)
        let intermediateCertificate = try Certificate.issue(spec, subjectKey: intermediateKey, signer: .authority(root.certificate, root.privateKey))
        intermediate = try CertificateAuthority(certificate: intermediateCertificate, privateKey: intermediateKey)
        let leaf = try LeafForger(authority: intermediate, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost", "127.0.0.1"])
        genuineLeaf = leaf.certificate
        options.commonName = "Misissuing Public CA"
        misissuing = try CertificateAuthority.create(options)
        try FileIO.write(Array(root.certificate.pemEncoded.utf8), to: rootPath, mode: 0o644)
        try FileIO.write(Array((genuineLeaf.pemEncoded + intermediateCertificate.pemEncoded).utf8), to: genuineChainPath, mode: 0o644)
        try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: genuineKeyPath, mode: 0o600)
        try FileIO.write(Array(misissuing.certificate.pemEncoded.utf8), to: misissuingPath, mode: 0o644)
    }

    /// A proxy in this process with the genuine root as upstream trust and the misissuing CA configured.
    func proxy(default profile: AttackProfile = .forge, admin: Bool = false,
               configure: (inout ProxyConfiguration) -> Void = { _ in }) throws -> RunningProxy {
        let rootPath = rootPath, misissuing = misissuing
        return try RunningProxy(base, configure: { c in
            c.upstreamTrust = .file(rootPath)
            c.misissuingAuthority = misissuing
            c.rules.defaultProfile = profile
            configure(&c)
        }, admin: admin)
    }

    /// Writes certificates as one PEM file and returns its path.
    func write(_ certificates: [Certificate], _ name: String) throws -> String {
        let path = directory.file(name)
        try FileIO.write(Array(certificates.map(\.pemEncoded).joined().utf8), to: path, mode: 0o644)
        return path
    }
}

/// The chain a real client receives through the proxy: `openssl s_client -proxy … -showcerts`,
/// which completes the handshake and leaves without a request.
func receivedChain(proxyPort: Int, host: String = "localhost", originPort: Int) throws -> [Certificate] {
    try receivedHandshake(proxyPort: proxyPort, host: host, originPort: originPort).chain
}

/// The chain, and the application protocol agreed (nil when none was), for an
/// `openssl s_client` through the proxy that offers `alpn`.
func receivedHandshake(proxyPort: Int, host: String = "localhost", originPort: Int,
                       alpn: String? = nil) throws -> (chain: [Certificate], alpn: String?) {
    var arguments = ["openssl", "s_client", "-proxy", "127.0.0.1:\(proxyPort)",
                     "-connect", "\(host):\(originPort)", "-servername", host, "-showcerts"]
    if let alpn { arguments += ["-alpn", alpn] }
    let r = try runProcess("/usr/bin/env", arguments, input: [], timeout: 30)
    let chain = try Certificate.all(pemEncoded: r.stdout)
    if chain.isEmpty { throw HarnessError("s_client received no certificate: \(r.stdout.prefix(300)) \(r.stderr.prefix(300))") }
    let agreed = r.stdout.split(separator: "\n").first { $0.hasPrefix("ALPN protocol: ") }.map { String($0.dropFirst(15)) }
    return (chain, agreed)
}

/// What `openssl verify -x509_strict -purpose sslserver` says about `chain` (leaf first, the rest
/// offered as untrusted) when `trusted` are the anchors: the error codes it printed, empty when it verified.
func opensslErrors(_ chain: [Certificate], trusting trusted: [Certificate], host: String?, in world: AttackWorld,
                   extra: [String] = []) throws -> [Int] {
    let name = UUID().uuidString
    var arguments = ["openssl", "verify", "-x509_strict", "-purpose", "sslserver",
                     "-CAfile", try world.write(trusted, "\(name)-trusted.pem")]
    if chain.count > 1 { arguments += ["-untrusted", try world.write(Array(chain.dropFirst()), "\(name)-untrusted.pem")] }
    if let host { arguments += host.first!.isNumber ? ["-verify_ip", host] : ["-verify_hostname", host] }
    arguments += extra + [try world.write([chain[0]], "\(name)-leaf.pem")]
    let r = try runProcess("/usr/bin/env", arguments, timeout: 20)
    let codes = (r.stdout + r.stderr).split(separator: "\n").compactMap { line -> Int? in
        guard let range = line.range(of: "error ") else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }
    if r.status == 0 { return codes }
    return codes.isEmpty ? [-1] : codes
}

/// The deliberately naive pin check: does a certificate with this key appear anywhere in the chain?
func naivePinCheck(_ chain: [Certificate], pin: SPKIPin) -> Bool {
    chain.contains { $0.spkiPin == pin }
}
