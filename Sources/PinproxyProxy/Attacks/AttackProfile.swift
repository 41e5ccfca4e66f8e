import Foundation

/// How the proxy serves a client that asked for a host: the name of an attack.
///
/// Each name maps to an ``AttackStrategy`` in an ``AttackCatalog``;
/// ``AttackCatalog/standard`` holds the ten below. Rules, `--attack`,
/// `--rule` and `PUT /rules` name profiles by these strings.
public struct AttackProfile: Hashable, Sendable, Codable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    public init(from decoder: any Decoder) throws { name = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    /// The genuine chain, untouched: the connection is tunnelled.
    public static let passthrough = AttackProfile("passthrough")
    /// A leaf for the host signed by the proxy CA, imitating the genuine names.
    public static let forge = AttackProfile("forge")
    /// The `forge` chain with the genuine chain appended after it.
    public static let stuff = AttackProfile("stuff")
    /// A leaf for the host signed by its own key.
    public static let selfSigned = AttackProfile("self-signed")
    /// A proxy-CA leaf valid in every respect but the name.
    public static let wrongHost = AttackProfile("wrong-host")
    /// A proxy-CA leaf for the host whose notAfter has passed.
    public static let expired = AttackProfile("expired")
    /// A proxy-CA leaf for the host whose notBefore is in the future.
    public static let notYetValid = AttackProfile("not-yet-valid")
    /// A leaf for the host from a CA generated for this run that no one trusts.
    public static let untrustedCA = AttackProfile("untrusted-ca")
    /// A leaf for the host from a second, device-trusted CA (`--misissuing-ca`).
    public static let misissued = AttackProfile("misissued")
    /// The forged leaf issued by name from fake CA certificates carrying the genuine chain's keys.
    public static let fakeParent = AttackProfile("fake-parent")

    /// How event messages name the certificate this profile shows ("the expired certificate").
    public var certificatePhrase: String {
        switch self {
        case .stuff: return "forged chain (with the genuine chain appended)"
        case .selfSigned: return "self-signed certificate"
        case .wrongHost: return "certificate for another host"
        case .expired: return "expired certificate"
        case .notYetValid: return "not-yet-valid certificate"
        case .untrustedCA: return "certificate from an untrusted CA"
        case .misissued: return "misissued certificate"
        case .fakeParent: return "certificate from fake parents"
        case .passthrough: return "genuine certificate"
        default: return isRotation ? "rotated certificate" : "forged certificate"
        }
    }
}
