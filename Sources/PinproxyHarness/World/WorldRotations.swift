import Foundation
import PinproxyCertificates

/// A legitimate change of the genuine server's certificates, as a real PKI makes them
/// over time. Nobody attacks: the world's genuine origin serves the changed chain, and a
/// policy that refuses it takes the app offline (an OUTAGE row), not a security failure.
///
/// Each rotation changes one thing and keeps the rest, so a refusal names the pin or rule
/// that breaks: the leaf key stays the same except in `re-key`, which isolates what a
/// leaf-key pin survives (a renewal, a new intermediate, even a CA switch when the
/// certificate request keeps its key) from what it does not (a new key).
public struct Rotation: Sendable {
    /// The scenario name: `renewal`, `re-key`, `new-intermediate`, `intermediate-reissue`,
    /// `root-migration`, `root-migration-new-store`, `ca-switch`.
    public let name: String
    /// What changed, in one line.
    public let change: String
    /// The chain the origin serves, leaf first.
    public let chain: [Certificate]
    let key: PrivateKey
    /// The root the device trusts instead of the world's root (a newer system store that
    /// has only the new root); nil: the world's usual store.
    public let replacementRoot: Certificate?
    /// What to do about a policy that refuses this change, for the OUTAGE row's reason.
    public let fix: String

    /// The rotation names, in the order rows appear.
    public static let names = [
        "renewal", "re-key", "new-intermediate", "intermediate-reissue", "root-migration", "root-migration-new-store", "ca-switch",
    ]
}

/// The CA keys a generated world keeps so it can rotate its own chain: the root, the
/// intermediate and the leaf key. A world around a user's chain has none of them.
struct WorldAuthorities: Sendable {
    let root: CertificateAuthority
    let intermediate: Certificate
    let intermediateKey: PrivateKey
    let leaf: Certificate
    let leafKey: PrivateKey
}

/// What the rotations add to the world besides their chains: the certificates a policy
/// may pin as backups (`world:next-intermediate`, `world:new-root`, `world:second-ca`),
/// and the second public CA the device trusts.
struct RotationSet: Sendable {
    var rotations: [Rotation]
    /// The intermediate of `new-intermediate`: the CA's next intermediate, a backup pin's target.
    var nextIntermediate: Certificate
    /// The self-signed new root of `root-migration`.
    var newRoot: Certificate
    /// The root of the second, independent public CA of `ca-switch`, in the device's system store.
    var secondRoot: Certificate

    /// Makes every rotation of the chain `authorities` issued for `host`, valid around `now`.
    static func make(host: HostName, authorities a: WorldAuthorities, now: Date) throws -> RotationSet {
        let start = now.addingTimeInterval(-3_600)
        let caEnd = start.addingTimeInterval(5 * 365 * 86_400)
        func leaf(key: PrivateKey, issuer: Certificate, issuerKey: PrivateKey) throws -> Certificate {
            try Certificate.issue(
                .serverLeaf(names: [host], notBefore: start, notAfter: start.addingTimeInterval(90 * 86_400), organization: "pinproxy world origin"),
                subjectKey: key, signer: .authority(issuer, issuerKey))
        }
        func intermediate(_ name: String, key: PrivateKey, root: Certificate, rootKey: PrivateKey) throws -> Certificate {
            try Certificate.issue(
                .certificateAuthority(subject: DistinguishedName(commonName: name, organization: "pinproxy world"),
                                      notBefore: start, notAfter: caEnd, pathLength: 0),
                subjectKey: key, signer: .authority(root, rootKey))
        }
        let rootCertificate = a.root.certificate
        var rotations: [Rotation] = []

        let renewed = try leaf(key: a.leafKey, issuer: a.intermediate, issuerKey: a.intermediateKey)
        rotations.append(Rotation(
            name: "renewal", change: "a new leaf certificate (new serial and validity) with the same key, same intermediate",
            chain: [renewed, a.intermediate], key: a.leafKey, replacementRoot: nil,
            fix: "a pinned certificate is replaced on every renewal: pin its public key (SPKI) instead, or a CA key as a backup"))

        let newLeafKey = try PrivateKey.generate(.ecP256)
        let rekeyed = try leaf(key: newLeafKey, issuer: a.intermediate, issuerKey: a.intermediateKey)
        rotations.append(Rotation(
            name: "re-key", change: "a new leaf key under the same intermediate",
            chain: [rekeyed, a.intermediate], key: newLeafKey, replacementRoot: nil,
            fix: "the leaf's key changed: ship the next leaf key as a backup pin before re-keying, or pin a CA key (the intermediate's or the root's) as a backup"))

        let nextKey = try PrivateKey.generate(.ecP256)
        let next = try intermediate("pinproxy world Public Intermediate CA 2", key: nextKey, root: rootCertificate, rootKey: a.root.privateKey)
        let underNext = try leaf(key: a.leafKey, issuer: next, issuerKey: nextKey)
        rotations.append(Rotation(
            name: "new-intermediate", change: "the leaf (same key) issued by a second intermediate with its own key, under the same root",
            chain: [underNext, next], key: a.leafKey, replacementRoot: nil,
            fix: "the CA issued from its next intermediate: add that intermediate's key as a backup pin (world:next-intermediate), or pin the root's key"))

        let reissued = try intermediate(a.intermediate.subjectCommonName ?? "pinproxy world Public Intermediate CA",
                                        key: a.intermediateKey, root: rootCertificate, rootKey: a.root.privateKey)
        // The leaf stays: it names the same issuer and was signed by the same key.
        rotations.append(Rotation(
            name: "intermediate-reissue", change: "a new certificate for the same intermediate key (same name); the leaf unchanged",
            chain: [a.leaf, reissued], key: a.leafKey, replacementRoot: nil,
            fix: "a pinned CA certificate was re-issued with the same key: pin the key (SPKI), not the certificate"))

        var newRootOptions = CertificateAuthority.Options()
        newRootOptions.commonName = "pinproxy world Public Root CA 2"
        newRootOptions.organization = "pinproxy world"
        let newRoot = try CertificateAuthority.create(newRootOptions, now: now)
        // The new root, signed by the old one: what lets a device that trusts only the old root
        // build a path to it (ISRG Root X1 cross-signed by DST Root CA X3).
        let crossSigned = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: newRootOptions.commonName, organization: newRootOptions.organization),
                                  notBefore: start, notAfter: caEnd),
            subjectKey: newRoot.privateKey, signer: .authority(rootCertificate, a.root.privateKey))
        let migratedKey = try PrivateKey.generate(.ecP256)
        let migrated = try intermediate("pinproxy world Public Intermediate CA R2", key: migratedKey, root: newRoot.certificate, rootKey: newRoot.privateKey)
        let underNewRoot = try leaf(key: a.leafKey, issuer: migrated, issuerKey: migratedKey)
        let migrationChain = [underNewRoot, migrated, crossSigned]
        let rootFix = "the chain now ends at a new root: add the new root's key as a backup pin (world:new-root) before the migration"
        rotations.append(Rotation(
            name: "root-migration", change: "the leaf (same key) under a new root and its intermediate; the server also sends the new root cross-signed by the old one (the device trusts only the old root)",
            chain: migrationChain, key: a.leafKey, replacementRoot: nil, fix: rootFix))
        rotations.append(Rotation(
            name: "root-migration-new-store", change: "the same migrated chain, on a device that trusts only the new root (a newer system store)",
            chain: migrationChain, key: a.leafKey,
            replacementRoot: newRoot.certificate, fix: rootFix))

        var secondOptions = CertificateAuthority.Options()
        secondOptions.commonName = "pinproxy world Second Public Root CA"
        secondOptions.organization = "pinproxy world (second public CA)"
        let second = try CertificateAuthority.create(secondOptions, now: now)
        let secondIntermediateKey = try PrivateKey.generate(.ecP256)
        let secondIntermediate = try intermediate("pinproxy world Second Public Intermediate CA", key: secondIntermediateKey,
                                                  root: second.certificate, rootKey: second.privateKey)
        let switched = try leaf(key: a.leafKey, issuer: secondIntermediate, issuerKey: secondIntermediateKey)
        rotations.append(Rotation(
            name: "ca-switch", change: "the leaf (same key) from a second, independent public CA the device trusts",
            chain: [switched, secondIntermediate], key: a.leafKey, replacementRoot: nil,
            fix: "the service changed CA: pin the second CA's root key as a backup (world:second-ca), or keep a leaf-key pin and the key across the switch"))
        return RotationSet(rotations: rotations, nextIntermediate: next, newRoot: newRoot.certificate, secondRoot: second.certificate)
    }
}
