import Foundation
import PinproxyCertificates

/// The forged leaf issued, by name, from fake CA certificates that carry the
/// public keys of the genuine chain the proxy just saw — leaf, intermediates
/// and root — in its order: `forged leaf, fake(leaf key), fake(intermediate),
/// …, fake(root)`. Names and key identifiers link every certificate to the
/// next, while no signature on the path verifies (the proxy has none of the
/// genuine private keys). A pinner that looks for its key in the chain, or on
/// a path it built without checking signatures, finds it at whatever level it
/// pinned; one that validates the chain first refuses.
///
/// Cost on a new host: two signatures (the stand-in for its leaf's key and the
/// forged leaf) once the stand-ins of its CA chain exist; the first host under
/// a CA chain adds one signature per certificate above the leaf. Stand-ins
/// are signed with a key of their issuer's type, RSA-2048 for RSA chains.
/// Without a genuine chain (the upstream failed) this presents the `forge`
/// chain: there is nothing to impersonate.
public struct FakeParentAttack: AttackStrategy {
    public init() {}
    public var shows: String { "the forged leaf issued by name from fake CA certificates carrying the genuine chain's keys" }
    public var catches: String { "pins matched by key on a chain whose signatures went unchecked" }
    public func present(_ context: AttackContext) throws -> PresentedChain {
        let genuine = context.genuineChain
        guard let genuineLeaf = genuine.first else { return try ForgeAttack().present(context) }
        // The leaf depends on every genuine certificate, not only on the leaf.
        let digest = OpenSSL.sha256(genuine.flatMap(\.sha256Fingerprint))
        let request = LeafRequest(names: [context.host], imitating: genuineLeaf)
        let leaf = try context.leaves.leaf(for: context.cacheKey(.fakeParent, context: digest)) {
            let parents = try context.resources.fakeParents.standIns(for: genuine)
            let signer = try context.resources.fakeParents.signer(matching: parents[0])
            let forged = try context.resources.forger.forge(request, variant: LeafVariant(issuer: .named(parents[0], signingKey: signer)))
            return ForgedLeaf(certificate: forged.certificate, privateKey: forged.privateKey, chain: [forged.certificate] + parents)
        }
        return PresentedChain(leaf)
    }
}
