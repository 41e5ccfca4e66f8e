import Foundation
import PinproxyCertificates

/// Stand-ins for a genuine chain: CA certificates that carry the genuine keys
/// and names, each naming the next as its issuer, signed by keys of the
/// proxy's own (see ``Certificate/impersonating(_:extraSubjectAttribute:issuedBy:signingKey:)``).
///
/// The stand-ins of intermediates and roots are cached by genuine certificate
/// and parent, so hosts under one CA share them: after the first host, a new
/// host costs one stand-in (for its own leaf's key) and the forged leaf.
final class FakeParents: Sendable {
    /// Appended to the subject of the stand-in for the genuine leaf, whose
    /// name the forged leaf itself bears.
    static let leafMark = DistinguishedName.Attribute("OU", "pinproxy fake parent")
    static let capacity = 1024

    private struct Key: Hashable {
        var genuine: [UInt8]
        var parent: [UInt8]?
    }

    private let cache = Locked<[Key: Certificate]>([:])
    private let ecSigner: PrivateKey
    private let rsaSigner = Locked<PrivateKey?>(nil)

    init() throws {
        ecSigner = try PrivateKey.generateForSigning(.ecP256)
    }

    /// A stand-in for every certificate of `genuine` (leaf first), in the same order.
    func standIns(for genuine: [Certificate]) throws -> [Certificate] {
        var made: [Certificate] = []
        var parent: Certificate? = nil
        for (index, certificate) in genuine.enumerated().reversed() {
            let fake: Certificate
            if index == 0 {
                // One per host: not worth a place in the shared cache (the leaf cache keeps it).
                fake = try make(certificate, mark: Self.leafMark, parent: parent)
            } else {
                let key = Key(genuine: certificate.sha256Fingerprint, parent: parent?.sha256Fingerprint)
                if let cached = cache.withLock({ $0[key] }) {
                    fake = cached
                } else {
                    fake = try make(certificate, mark: nil, parent: parent)
                    cache.withLock { entries in
                        if entries.count >= Self.capacity { entries.removeAll() }
                        entries[key] = fake
                    }
                }
            }
            made.append(fake)
            parent = fake
        }
        return made.reversed()
    }

    private func make(_ genuine: Certificate, mark: DistinguishedName.Attribute?, parent: Certificate?) throws -> Certificate {
        try Certificate.impersonating(genuine, extraSubjectAttribute: mark, issuedBy: parent,
                                      signingKey: try signer(matching: parent ?? genuine))
    }

    /// A key of the same type as `issuer`'s: OpenSSL links a certificate to
    /// its issuer only when the signature algorithm fits the issuer's key.
    func signer(matching issuer: Certificate) throws -> PrivateKey {
        guard issuer.hasRSAKey else { return ecSigner }
        return try rsaSigner.withLock { key in
            if let key { return key }
            let made = try PrivateKey.generate(.rsa2048)
            key = made
            return made
        }
    }
}
