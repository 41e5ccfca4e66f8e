import Foundation
import PinproxyCertificates
@testable import PinproxyPinning

/// A small public-key infrastructure generated once per test run: a "public" root
/// trusted by the device, an intermediate, the genuine server, and the chains
/// an intercepting proxy shows.
final class PKI: Sendable {
    static let shared = try! PKI()

    let now = Date()
    let host = try! HostName(validating: "api.example.com")
    let otherHost = try! HostName(validating: "other.example.com")

    let rootKey: PrivateKey
    let root: Certificate
    let intermediateKey: PrivateKey
    let intermediate: Certificate
    /// The genuine server key and certificate for `api.example.com`.
    let serverKey: PrivateKey
    let leaf: Certificate
    /// A valid certificate for `other.example.com` from the same intermediate.
    let otherLeaf: Certificate
    /// An expired certificate for `api.example.com` with the genuine key.
    let expiredLeaf: Certificate
    /// A self-signed certificate for `api.example.com`.
    let selfSignedKey: PrivateKey
    let selfSigned: Certificate
    /// The intercepting proxy's CA and its forged leaf for `api.example.com`.
    let proxyCA: CertificateAuthority
    let forgedLeaf: Certificate
    /// A second root and a leaf it issued for `api.example.com` (a misissuing CA).
    let otherRootKey: PrivateKey
    let otherRoot: Certificate
    let misissuedLeaf: Certificate

    init() throws {
        let day: TimeInterval = 86_400
        let caStart = now.addingTimeInterval(-500 * day)
        let start = now.addingTimeInterval(-30 * day)
        let end = now.addingTimeInterval(365 * day)

        rootKey = try PrivateKey.generate(.ecP256)
        root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Example Public Root", organization: "Example Trust"),
                                  notBefore: caStart, notAfter: end.addingTimeInterval(3650 * day)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        intermediateKey = try PrivateKey.generate(.ecP256)
        intermediate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Example Issuing CA 1", organization: "Example Trust"),
                                  notBefore: caStart, notAfter: end.addingTimeInterval(365 * day), pathLength: 0),
            subjectKey: intermediateKey, signer: .authority(root, rootKey))
        serverKey = try PrivateKey.generate(.ecP256)
        leaf = try Certificate.issue(.serverLeaf(names: [host], notBefore: start, notAfter: end),
                                     subjectKey: serverKey, signer: .authority(intermediate, intermediateKey))
        otherLeaf = try Certificate.issue(.serverLeaf(names: [otherHost], notBefore: start, notAfter: end),
                                          subjectKey: try PrivateKey.generate(.ecP256),
                                          signer: .authority(intermediate, intermediateKey))
        expiredLeaf = try Certificate.issue(
            .serverLeaf(names: [host], notBefore: now.addingTimeInterval(-400 * day), notAfter: now.addingTimeInterval(-35 * day)),
            subjectKey: serverKey, signer: .authority(intermediate, intermediateKey))
        selfSignedKey = try PrivateKey.generate(.ecP256)
        selfSigned = try Certificate.issue(.serverLeaf(names: [host], notBefore: start, notAfter: end),
                                           subjectKey: selfSignedKey, signer: .selfSigned(selfSignedKey))
        proxyCA = try CertificateAuthority.create()
        forgedLeaf = try LeafForger(authority: proxyCA).forge(LeafRequest(host)).certificate
        otherRootKey = try PrivateKey.generate(.ecP256)
        otherRoot = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Other Public Root", organization: "Other Trust"),
                                  notBefore: caStart, notAfter: end.addingTimeInterval(3650 * day)),
            subjectKey: otherRootKey, signer: .selfSigned(otherRootKey))
        misissuedLeaf = try Certificate.issue(.serverLeaf(names: [host], notBefore: start, notAfter: end),
                                              subjectKey: try PrivateKey.generate(.ecP256),
                                              signer: .authority(otherRoot, otherRootKey))
    }

    /// The device: the public roots in the system store, the proxy CA installed by the user when `proxyCAInstalled`.
    func store(proxyCAInstalled: Bool = false) -> TrustStore {
        TrustStore(systemAnchors: [root, otherRoot], userAnchors: proxyCAInstalled ? [proxyCA.certificate] : [])
    }

    func trust(_ chain: [Certificate], host: HostName? = nil, proxyCAInstalled: Bool = false, at time: Date? = nil) -> ServerTrust {
        ServerTrust(presentedChain: chain, host: host ?? self.host, time: time ?? now, store: store(proxyCAInstalled: proxyCAInstalled))
    }
}

/// The chains of the decision table, each with what the app pins when it pins.
enum Scenario: String, CaseIterable, Sendable, CustomStringConvertible {
    /// leaf ← intermediate ← trusted root; the app pins the genuine leaf.
    case genuine
    /// A self-signed server certificate; the app pins it.
    case selfSigned = "self-signed"
    /// Leaf forged by the proxy CA, which the device's user installed; the app pins the genuine leaf.
    case forged = "forged, CA installed"
    /// The forged chain with the genuine leaf and intermediate appended; proxy CA installed.
    case stuffed
    /// A valid chain from the trusted root for other.example.com.
    case wrongHost = "wrong host"
    /// The genuine key in a certificate that expired 35 days ago, from the trusted intermediate.
    case expired

    var description: String { rawValue }

    func chain(_ pki: PKI) -> [Certificate] {
        switch self {
        case .genuine: return [pki.leaf, pki.intermediate]
        case .selfSigned: return [pki.selfSigned]
        case .forged: return [pki.forgedLeaf, pki.proxyCA.certificate]
        case .stuffed: return [pki.forgedLeaf, pki.proxyCA.certificate, pki.leaf, pki.intermediate]
        case .wrongHost: return [pki.otherLeaf, pki.intermediate]
        case .expired: return [pki.expiredLeaf, pki.intermediate]
        }
    }

    var proxyCAInstalled: Bool { self == .forged || self == .stuffed }

    func pinned(_ pki: PKI) -> [Certificate] {
        self == .selfSigned ? [pki.selfSigned] : [pki.leaf]
    }

    func trust(_ pki: PKI) -> ServerTrust { pki.trust(chain(pki), proxyCAInstalled: proxyCAInstalled) }
}

/// A scratch directory removed when the value goes away.
final class TemporaryDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "pinproxy-pinning-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = (path as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let file = (path as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }
}

/// Runs a program and returns its exit status and output.
func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    if input == nil { process.standardInput = FileHandle.nullDevice }
    try process.run()
    // Read both pipes to the end before waiting, so a chatty child never blocks.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// Certificates pinproxy's own issuer does not make (SHA-1 signatures, RSA-1024 keys,
/// partial-label wildcards), issued at test time by the `openssl` command.
///
/// `openssl x509 -req` starts the validity at the moment of signing, so evaluate these
/// at `Date()` (or later), not at `PKI.now`.
enum OpenSSLIssued {
    /// A leaf for `subject` with the given extension lines, signed by `issuer` with `digest`.
    /// `keyAlgorithm` is `ec` (P-256), `ec:CURVE` (`ec:P-224`) or `rsa:BITS`.
    static func leaf(subject: String, extensions: [String], issuer: Certificate, issuerKey: PrivateKey,
                     digest: String = "sha256", keyAlgorithm: String = "ec") throws -> Certificate {
        try leafWithKey(subject: subject, extensions: extensions, issuer: issuer, issuerKey: issuerKey,
                        digest: digest, keyAlgorithm: keyAlgorithm).certificate
    }

    /// ``leaf(subject:extensions:issuer:issuerKey:digest:keyAlgorithm:)`` with the leaf's key.
    static func leafWithKey(subject: String, extensions: [String], issuer: Certificate, issuerKey: PrivateKey,
                            digest: String = "sha256", keyAlgorithm: String = "ec") throws -> (certificate: Certificate, key: PrivateKey) {
        let dir = try TemporaryDirectory()
        let caFile = try dir.write("ca.pem", issuer.pemEncoded)
        let caKeyFile = try dir.write("ca.key", try issuerKey.pemEncoded())
        let keyFile = (dir.path as NSString).appendingPathComponent("leaf.key")
        try generateKey(keyAlgorithm, to: keyFile)
        let csrFile = (dir.path as NSString).appendingPathComponent("leaf.csr")
        try openssl(["req", "-new", "-key", keyFile, "-subj", subject, "-out", csrFile])
        let extFile = try dir.write("ext.cnf", extensions.joined(separator: "\n") + "\n")
        let outFile = (dir.path as NSString).appendingPathComponent("leaf.pem")
        try openssl(["x509", "-req", "-in", csrFile, "-CA", caFile, "-CAkey", caKeyFile, "-days", "30",
                     "-set_serial", String(Int.random(in: 1_000...1_000_000_000)), "-\(digest)",
                     "-extfile", extFile, "-out", outFile])
        let key = try PrivateKey(pemEncoded: try String(contentsOfFile: keyFile, encoding: .utf8))
        return (try Certificate.load(contentsOf: outFile)[0], key)
    }

    /// A self-signed CA certificate whose own signature uses `digest`, with its key.
    static func root(commonName: String, digest: String, keyAlgorithm: String = "ec", extensions: [String] = []) throws -> (Certificate, PrivateKey) {
        try selfSigned(subject: "/CN=\(commonName)", digest: digest, keyAlgorithm: keyAlgorithm,
                       extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"] + extensions)
    }

    /// A self-signed certificate with exactly these extension lines, with its key.
    static func selfSigned(subject: String, digest: String = "sha256", keyAlgorithm: String = "ec", extensions: [String]) throws -> (Certificate, PrivateKey) {
        let dir = try TemporaryDirectory()
        let keyFile = (dir.path as NSString).appendingPathComponent("self.key")
        try generateKey(keyAlgorithm, to: keyFile)
        let key = try PrivateKey(pemEncoded: try String(contentsOfFile: keyFile, encoding: .utf8))
        let outFile = (dir.path as NSString).appendingPathComponent("self.pem")
        try openssl(["req", "-x509", "-new", "-key", keyFile, "-subj", subject, "-days", "30", "-\(digest)"]
                     + extensions.flatMap { ["-addext", $0] } + ["-out", outFile])
        return (try Certificate.load(contentsOf: outFile)[0], key)
    }

    /// The extension lines of a TLS server leaf with these subjectAltName entries (none: no SAN at all).
    static func serverExtensions(san: [String], eku: String = "serverAuth") -> [String] {
        var lines = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", "extendedKeyUsage=\(eku)"]
        if !san.isEmpty { lines.append("subjectAltName=" + san.joined(separator: ",")) }
        return lines
    }

    /// Writes a new key to `file`: `rsa:BITS`, `ec:CURVE`, `ed25519`, `rsa-pss`, `dsa:BITS`, else P-256.
    private static func generateKey(_ algorithm: String, to file: String) throws {
        if algorithm.hasPrefix("rsa:") {
            return try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(algorithm.dropFirst(4))", "-out", file])
        }
        if algorithm.hasPrefix("ec:") {
            return try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(algorithm.dropFirst(3))", "-out", file])
        }
        if algorithm.hasPrefix("dsa:") {
            // OpenSSL 3 makes DSA parameters first, then the key from them.
            try openssl(["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:\(algorithm.dropFirst(4))", "-out", file + ".param"])
            return try openssl(["genpkey", "-paramfile", file + ".param", "-out", file])
        }
        if algorithm == "ed25519" { return try openssl(["genpkey", "-algorithm", "ED25519", "-out", file]) }
        if algorithm == "rsa-pss" { return try openssl(["genpkey", "-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048", "-out", file]) }
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file])
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try run("/usr/bin/openssl", arguments)
        guard result.status == 0 else {
            throw PinproxyError(.io, "openssl \(arguments.first ?? "") failed: \(result.stderr)")
        }
    }
}

/// `json` written as `policies/policy.json` in a new temporary directory, beside `files`
/// (paths relative to it), and loaded as a policy file; the directory lives as long as the result.
func loadPolicyFile(_ json: String, files: [String: String] = [:]) throws -> (any PinningPolicy, TemporaryDirectory) {
    let dir = try TemporaryDirectory()
    for (name, text) in files { try dir.write(name, text) }
    let path = try dir.write("policies/policy.json", json)
    return (try PolicyFile.load(contentsOf: path), dir)
}
