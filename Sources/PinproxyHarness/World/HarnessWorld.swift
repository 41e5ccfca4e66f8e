import Foundation
import PinproxyCertificates
import PinproxyPinning

/// The small PKI a policy is checked in: a "public" root and intermediate that
/// play the device's system trust store, the genuine chain of the host, and a
/// second, misissuing CA that the device also trusts (a compromised public CA).
///
/// A generated world also keeps its CA keys to rotate its own chain (``rotations``): the
/// legitimate changes a policy must survive, with a second public CA the device trusts.
/// Generated in memory for each run, or built around a user's own chain and key
/// so their real pins apply (such a world has no rotations: its CA keys are not ours). Public certificates are written to a temporary
/// directory for the proxy and for external clients; private keys never are.
public final class HarnessWorld: Sendable {
    /// The host the genuine origin serves.
    public let host: HostName
    /// The root the device trusts as part of its system store.
    public let root: Certificate
    /// The intermediate between root and leaf, when the chain has one.
    public let intermediate: Certificate?
    /// The genuine leaf.
    public let leaf: Certificate
    /// The chain the origin presents, leaf first.
    public let originChain: [Certificate]
    let originKey: PrivateKey
    /// The second "public" CA the device trusts, whose leaves the `misissued` attack presents.
    public let misissuer: Certificate
    /// The misissuer with its key, when this world made it; nil when a running daemon holds
    /// the key (``adopting(misissuer:)``).
    public let misissuingAuthority: CertificateAuthority?
    /// The temporary directory holding the world's public files.
    public let directory: String
    /// Where the chain came from, for reports: "generated" or the chain file.
    public let source: String
    /// The instant the world's certificates were issued around (`check --at`).
    public let time: Date
    /// The legitimate changes of the genuine chain, in ``Rotation/names`` order; empty for a
    /// world around a user's chain.
    public var rotations: [Rotation] { rotationSet?.rotations ?? [] }
    let rotationSet: RotationSet?

    /// The root (PEM), as a proxy verifies the origin.
    public var rootPath: String { (directory as NSString).appendingPathComponent("world-root.pem") }
    /// The device's system store (PEM): the root and the misissuing CA, an external client's `{ca}`.
    public var systemStorePath: String { (directory as NSString).appendingPathComponent("world-system-store.pem") }

    private init(host: HostName, root: Certificate, intermediate: Certificate?, leaf: Certificate, originChain: [Certificate],
                 originKey: PrivateKey, misissuer: Certificate, misissuingAuthority: CertificateAuthority?, source: String,
                 time: Date, rotationSet: RotationSet?, directory: String? = nil) throws {
        self.host = host
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.originChain = originChain
        self.originKey = originKey
        self.misissuer = misissuer
        self.misissuingAuthority = misissuingAuthority
        self.source = source
        self.time = time
        self.rotationSet = rotationSet
        let base = FileManager.default.temporaryDirectory.path
        self.directory = directory ?? (base as NSString).appendingPathComponent("pinproxy-world-\(UUID().uuidString.prefix(8).lowercased())")
        do {
            try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw PinproxyError(.io, "cannot create the world's directory \(self.directory): \(error.localizedDescription)")
        }
        try FileIO.write(Array(root.pemEncoded.utf8), to: rootPath, mode: 0o644)
        try FileIO.write(Array(misissuer.pemEncoded.utf8),
                         to: (self.directory as NSString).appendingPathComponent("world-misissuer.pem"), mode: 0o644)
        let store = [root, misissuer] + (rotationSet.map { [$0.secondRoot] } ?? [])
        try FileIO.write(Array(store.map(\.pemEncoded).joined().utf8), to: systemStorePath, mode: 0o644)
    }

    private convenience init(host: HostName, root: Certificate, intermediate: Certificate?, leaf: Certificate, originChain: [Certificate],
                             originKey: PrivateKey, misissuer: CertificateAuthority, source: String, time: Date,
                             rotationSet: RotationSet? = nil) throws {
        try self.init(host: host, root: root, intermediate: intermediate, leaf: leaf, originChain: originChain, originKey: originKey,
                      misissuer: misissuer.certificate, misissuingAuthority: misissuer, source: source, time: time, rotationSet: rotationSet)
    }

    /// This world with `certificate` as its misissuer: the CA of a running daemon's `misissued`
    /// profile, whose key only the daemon holds. The device trusts it instead of the generated
    /// one, and `world:misissuer` names it. The files are rewritten in the same directory.
    public func adopting(misissuer certificate: Certificate) throws -> HarnessWorld {
        try HarnessWorld(host: host, root: root, intermediate: intermediate, leaf: leaf, originChain: originChain, originKey: originKey,
                         misissuer: certificate, misissuingAuthority: nil, source: source, time: time, rotationSet: rotationSet,
                         directory: directory)
    }

    /// A fresh world for `host`: root → intermediate → leaf, a misissuing root, and the
    /// rotations of that chain; every certificate is valid around `now`.
    public static func generate(host: HostName, now: Date = Date()) throws -> HarnessWorld {
        var rootOptions = CertificateAuthority.Options()
        rootOptions.commonName = "pinproxy world Public Root CA"
        rootOptions.organization = "pinproxy world"
        let root = try CertificateAuthority.create(rootOptions, now: now)
        let intermediateKey = try PrivateKey.generate(.ecP256)
        let start = now.addingTimeInterval(-86_400)
        let intermediate = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "pinproxy world Public Intermediate CA", organization: "pinproxy world"),
                                  notBefore: start, notAfter: start.addingTimeInterval(5 * 365 * 86_400), pathLength: 0),
            subjectKey: intermediateKey, signer: .authority(root.certificate, root.privateKey))
        let leafKey = try PrivateKey.generate(.ecP256)
        let leaf = try Certificate.issue(
            .serverLeaf(names: [host], notBefore: start, notAfter: start.addingTimeInterval(90 * 86_400), organization: "pinproxy world origin"),
            subjectKey: leafKey, signer: .authority(intermediate, intermediateKey))
        let authorities = WorldAuthorities(root: root, intermediate: intermediate, intermediateKey: intermediateKey, leaf: leaf, leafKey: leafKey)
        return try HarnessWorld(
            host: host, root: root.certificate, intermediate: intermediate, leaf: leaf, originChain: [leaf, intermediate],
            originKey: leafKey, misissuer: try misissuingCA(now: now), source: "generated", time: now,
            rotationSet: try RotationSet.make(host: host, authorities: authorities, now: now))
    }

    /// A world around the user's chain (leaf first) and key. The root is the chain's
    /// self-signed last certificate, or the system store's issuer of its last certificate.
    public static func load(chainPath: String, keyPath: String, host: HostName?, now: Date = Date()) throws -> HarnessWorld {
        let chain = try Certificate.load(contentsOf: chainPath)
        guard let leaf = chain.first else { throw PinproxyError(.chain, "\(chainPath): no certificate") }
        let key: PrivateKey
        let keyText = String(decoding: try FileIO.read(keyPath), as: UTF8.self)
        do {
            key = try PrivateKey(pemEncoded: keyText)
        } catch let error as PinproxyError {
            throw PinproxyError(error.code, "\(keyPath): \(error.reason)")
        }
        guard key.matches(leaf) else {
            throw PinproxyError(.keyMismatch, "\(keyPath) is not the private key of the first certificate of \(chainPath) (\(leaf.subject))")
        }
        let name: HostName
        if let host { name = host } else {
            guard case .dns(let first)? = leaf.subjectAlternativeNames.first, let parsed = try? HostName(validating: first) else {
                throw PinproxyError(.invalidArgument, "\(chainPath): the leaf names no DNS host; pass --host")
            }
            name = parsed
        }
        let last = chain[chain.count - 1]
        let root: Certificate
        if chain.count > 1 && last.isSelfSigned {
            root = last
        } else if let issuer = (try? TrustStore.system())?.systemAnchors.first(where: { last.isIssued(by: $0) }) {
            root = issuer
        } else {
            throw PinproxyError(.chain, "\(chainPath): the chain does not end at a root and no root of the system store issued its last certificate (\(last.issuer)); append the root CA to the file")
        }
        let middle = chain.dropFirst().filter { $0 != root }
        return try HarnessWorld(
            host: name, root: root, intermediate: middle.first, leaf: leaf, originChain: chain,
            originKey: key, misissuer: try misissuingCA(now: now), source: chainPath, time: now)
    }

    private static func misissuingCA(now: Date) throws -> CertificateAuthority {
        var options = CertificateAuthority.Options()
        options.commonName = "pinproxy world Misissuing Public CA"
        options.organization = "pinproxy world (compromised CA)"
        return try CertificateAuthority.create(options, now: now)
    }

    /// What `world:leaf`, `world:intermediate`, `world:root` and `world:misissuer` stand for, and
    /// in a generated world the rotations' certificates a backup pin names:
    /// `world:next-intermediate`, `world:new-root` and `world:second-ca`.
    public var policyWorld: PolicyWorld {
        var certificates = ["leaf": leaf, "root": root, "misissuer": misissuer]
        if let intermediate { certificates["intermediate"] = intermediate }
        if let rotationSet {
            certificates["next-intermediate"] = rotationSet.nextIntermediate
            certificates["new-root"] = rotationSet.newRoot
            certificates["second-ca"] = rotationSet.secondRoot
        }
        return PolicyWorld(certificates: certificates, origin: source == "generated" ? "the generated world" : "--origin-chain \(source)")
    }

    /// The device's trust store: the world's public roots as its system store (the root, the
    /// misissuing CA, and the second public CA of `ca-switch`), and the proxy CA as a
    /// user-installed anchor when the tester installed it. `rotation`'s replacement root
    /// stands in for the world's root (a device that trusts only the new root).
    public func deviceStore(userAnchors: [Certificate], rotation: Rotation? = nil) -> TrustStore {
        let first = rotation?.replacementRoot ?? root
        return TrustStore(systemAnchors: [first, misissuer] + (rotationSet.map { [$0.secondRoot] } ?? []), userAnchors: userAnchors)
    }

    /// The SPKI pin of the genuine leaf.
    public var leafPin: SPKIPin { leaf.spkiPin }

    /// Writes `certificate` as PEM into the world's directory and returns the path.
    @discardableResult
    public func write(_ certificate: Certificate, as name: String) throws -> String {
        let path = (directory as NSString).appendingPathComponent(name)
        try FileIO.write(Array(certificate.pemEncoded.utf8), to: path, mode: 0o644)
        return path
    }

    /// Writes `certificates` as one PEM bundle in the world's directory and returns its path.
    public func writeBundle(_ certificates: [Certificate], as name: String) throws -> String {
        let path = (directory as NSString).appendingPathComponent(name)
        try FileIO.write(Array(certificates.map(\.pemEncoded).joined().utf8), to: path, mode: 0o644)
        return path
    }

    /// Deletes the world's directory. One removal at a time: a check's second signal deletes the
    /// files while the first interruption may be deleting them too, and two walks of the same tree
    /// made one fail half-way (the directory was left, and the process then exited).
    public func removeFiles() {
        Self.removal.lock()
        defer { Self.removal.unlock() }
        for _ in 0..<3 where FileManager.default.fileExists(atPath: directory) {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private static let removal = NSLock()
}
