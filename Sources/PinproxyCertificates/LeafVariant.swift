import Foundation

/// How a leaf departs from the classic forged leaf: who signs it and when it is valid.
///
/// Attack profiles use it to forge leaves that are wrong in exactly one way
/// (expired, not yet valid, self-signed, issued by a stand-in parent) while
/// every other field stays what ``LeafForger`` always puts in a leaf.
/// ``standard`` is the classic leaf.
public struct LeafVariant: Sendable {
    /// Who the leaf names as its issuer, and whose key signs it.
    public enum Issuer: Sendable {
        /// The forger's CA: its subject, its key identifier, its key.
        case authority
        /// The leaf itself: issuer and subject are one name, its own key signs.
        /// The CA's name constraints do not apply.
        case selfSigned
        /// Issued by name from `certificate`: its subject becomes the issuer and
        /// its subject key identifier the authority key identifier, while
        /// `signingKey` — which need not be `certificate`'s key — signs. The
        /// CA's name constraints do not apply.
        case named(Certificate, signingKey: PrivateKey)
    }

    public var issuer: Issuer
    /// The validity window to use instead of the forger's (backdated one day,
    /// at most the forger's validity, never past the CA's notAfter).
    public var validity: DateInterval?

    public init(issuer: Issuer = .authority, validity: DateInterval? = nil) {
        self.issuer = issuer
        self.validity = validity
    }

    /// The classic forged leaf.
    public static let standard = LeafVariant()

    /// Whether the forger's CA signs (so its name constraints apply).
    var isIssuedByAuthority: Bool {
        if case .authority = issuer { return true }
        return false
    }
}
