import Foundation
import PinproxyCertificates

/// The certificates a policy file may name symbolically, as `world:leaf`,
/// `world:intermediate`, `world:root` and `world:misissuer`, so one file
/// works with a world the harness generates afresh on every run; and the
/// certificates of its rotations a backup pin names: `world:next-intermediate`
/// (the CA's next intermediate), `world:new-root` (the root it migrates to) and
/// `world:second-ca` (the root of a second public CA).
///
/// Wherever a policy expects a certificate file, a reference stands for that
/// certificate; wherever it expects a pin (OkHttp, TrustKit, Android, curl), it
/// stands for that certificate's SPKI SHA-256 pin, written in the notation the
/// place expects. Without a world (`pinproxy verify`) a reference is an error.
public struct PolicyWorld: Sendable {
    /// The text every reference starts with.
    public static let prefix = "world:"
    /// The names a reference may use, in the order messages list them.
    public static let names = ["leaf", "intermediate", "root", "misissuer", "next-intermediate", "new-root", "second-ca"]

    /// The certificates by name; a name may be absent (a user's chain without an intermediate).
    public var certificates: [String: Certificate]
    /// Says where the certificates come from, for messages ("the generated world", "--origin-chain").
    public var origin: String

    public init(certificates: [String: Certificate], origin: String) {
        self.certificates = certificates
        self.origin = origin
    }

    /// Whether `text` is meant as a reference.
    public static func isReference(_ text: String) -> Bool { text.hasPrefix(prefix) }

    /// The certificate `reference` names; fails for an unknown or absent name.
    public func certificate(_ reference: String) throws -> Certificate {
        let name = String(reference.dropFirst(Self.prefix.count))
        guard Self.names.contains(name) else {
            throw PinproxyError(.policyFile, "'\(reference)' is not one of \(Self.names.map { Self.prefix + $0 }.joined(separator: ", "))")
        }
        guard let certificate = certificates[name] else {
            throw PinproxyError(.policyFile, "'\(reference)': \(origin) has no \(name) certificate")
        }
        return certificate
    }

    /// The error for a reference read where no world exists.
    static func unavailable(_ reference: String) -> PinproxyError {
        PinproxyError(.policyFile, "'\(reference)' names a certificate of the harness's world; it is only understood by 'pinproxy check', which builds that world. For verify, put a certificate file there, or where a pin is expected the pin 'pinproxy pin FILE' prints (sha256/…)")
    }
}

extension Optional where Wrapped == PolicyWorld {
    /// The certificate `reference` names, or the error saying there is no world here.
    func certificate(_ reference: String) throws -> Certificate {
        guard let world = self else { throw PolicyWorld.unavailable(reference) }
        return try world.certificate(reference)
    }

    /// `text` itself, or — when it is a reference — the named certificate's pin in
    /// the notation `notation` writes (`sha256/…`, `sha256//…`, bare base64).
    func pinText(_ text: String, notation: (SPKIPin) -> String) throws -> String {
        guard PolicyWorld.isReference(text) else { return text }
        return notation(try certificate(text).spkiPin)
    }
}
