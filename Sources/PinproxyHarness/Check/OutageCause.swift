import Foundation
import PinproxyCertificates
import PinproxyPinning

/// What a refused rotation broke, in the policy file's own words, and the fix that follows.
///
/// A rotation's own fix assumes key pins ("add that intermediate's key as a backup pin").
/// A policy that pins whole certificates (AFNetworking's certificate mode, Alamofire's
/// `PinnedCertificatesTrustEvaluator`) breaks for another reason: the pinned leaf certificate
/// is replaced whenever a new one is issued, whatever else changed, so its fix is the
/// certificate mode's, not the rotation's.
enum OutageCause {
    /// One pin of the verdict that matched no certificate, named after the world's certificate it pins.
    struct BrokenPin: Equatable {
        /// `leaf`, `intermediate`, … (the name after `world:`).
        var name: String
        /// Whether the whole certificate is pinned (a SHA-256 fingerprint) rather than its key.
        var wholeCertificate: Bool

        var text: String { wholeCertificate ? "the pinned certificate world:\(name)" : "the pinned key of world:\(name)" }
    }

    /// The pins of `verdict` that matched nothing and that name a certificate of `world`, in the
    /// order of ``PolicyWorld/names``. Pins the world does not know (a backup for another
    /// server) are left out: the policy file names them only by value.
    static func brokenPins(_ verdict: Verdict, world: PolicyWorld) -> [BrokenPin] {
        // Each certificate's pin in every notation a verdict writes: "sha256/…" (OkHttp),
        // "sha256//…" (curl), bare base64 (TrustKit, Android). Compared whole rather than
        // parsed: a base64 that starts with '/' (one key in 64) makes OkHttp's notation read
        // like curl's.
        let missing = Set(verdict.missingPins)
        return PolicyWorld.names.compactMap { name in
            guard let certificate = world.certificates[name] else { return nil }
            if missing.contains(certificate.sha256FingerprintText) { return BrokenPin(name: name, wholeCertificate: true) }
            let pin = certificate.spkiPin
            if !missing.isDisjoint(with: [pin.base64, pin.okhttp, pin.curl]) { return BrokenPin(name: name, wholeCertificate: false) }
            return nil
        }
    }

    /// The fix of a rotation row when the policy's pins name no certificate of the world
    /// (``PolicyCoverage/foreignPinsNote(_:world:)``): the change did not break them, they never matched.
    static let foreignPinsFix = "none of this row's: the policy's pins name no certificate of this world (the note at the top), "
        + "so the genuine server is refused as well and this row says nothing about the change"

    /// The world's name for the CA a rotation's chain ends at, where it is a new one.
    static let newAnchor = ["ca-switch": "second-ca", "root-migration": "new-root", "root-migration-new-store": "new-root"]

    /// The verdict refused the chain before any pin was compared: no issuer it trusts.
    static func refusedByOwnTrust(_ verdict: Verdict) -> Bool {
        verdict.decision == .reject && verdict.matchedPins.isEmpty && verdict.missingPins.isEmpty
            && verdict.steps.contains { $0.outcome.contains("unknown issuer") }
    }

    /// "the leaf (same key) … ; broken: the pinned key of world:intermediate; fix: …" for a
    /// rotation the built-in client refused (`verdict`, nil when a real client judged).
    /// `foreignPins`: the policy's pins name no certificate of `world`, so no rotation's fix applies.
    static func text(rotation: Rotation, verdict: Verdict?, world: PolicyWorld, genuineLeaf: Certificate,
                     foreignPins: Bool = false) -> String {
        if foreignPins { return "\(rotation.change); fix: \(foreignPinsFix)" }
        let broken = verdict.map { brokenPins($0, world: world) } ?? []
        var fix = rotation.fix
        if broken.contains(BrokenPin(name: "leaf", wholeCertificate: true)), rotation.chain.first != genuineLeaf {
            fix = "certificate mode pins one certificate: every renewal breaks it; pin its public key (SPKI) instead, or add a CA's certificate as a backup"
        } else if let verdict, let anchor = newAnchor[rotation.name], refusedByOwnTrust(verdict) {
            fix = "the policy's own list of trusted CAs (curl's cacert, pinned anchors, trust-anchors) leaves out the CA the certificate "
                + "now comes from, which the device trusts; no pin was compared: add that CA (world:\(anchor)) to the list before the change"
        }
        let what = broken.isEmpty ? "" : "; broken: " + broken.map(\.text).joined(separator: ", ")
        return "\(rotation.change)\(what); fix: \(fix)"
    }
}
