import Foundation
import PinproxyCertificates

/// curl (and wget) with `--pinnedpubkey`.
///
/// Unless `--insecure`, the chain must validate against the CA bundle (`--cacert`,
/// else the device anchors: the system store, where a tester installs a CA on
/// Linux with update-ca-certificates, plus user anchors) with the host name —
/// error 60 otherwise. Then, even with `--insecure`, the public key of the server's
/// own certificate (the leaf, never the chain) must match one of the pins —
/// error 90 otherwise.
public struct CurlPolicy: PinningPolicy {
    /// The accepted keys, as SPKI SHA-256 pins (a key file is reduced to its pin).
    public var pinnedPublicKeys: [SPKIPin]
    /// How the pins were given, for the verdict ("sha256//…;sha256//…" or the file).
    public var pinnedPublicKeySource: String
    /// `--insecure`: no peer and no host verification.
    public var insecure: Bool
    /// `--cacert`: replaces the default anchors.
    public var caBundle: [Certificate]?

    public init(pinnedPublicKeys: [SPKIPin], source: String? = nil, insecure: Bool = false, caBundle: [Certificate]? = nil) {
        self.pinnedPublicKeys = pinnedPublicKeys
        self.pinnedPublicKeySource = source ?? pinnedPublicKeys.map(\.curl).joined(separator: ";")
        self.insecure = insecure
        self.caBundle = caBundle
    }

    /// Parses a `--pinnedpubkey` value of `sha256//` hashes separated by `;`.
    public static func parsePins(_ value: String) throws -> [SPKIPin] {
        let parts = value.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.isEmpty, !parts.contains(where: \.isEmpty) else {
            throw PinproxyError(.decoding, "'\(value)' has an empty entry; write sha256//<base64>;sha256//<base64>")
        }
        return try parts.map { part in
            guard part.hasPrefix("sha256//") else {
                throw PinproxyError(.decoding, "'\(part)' is not a sha256//<base64> hash")
            }
            return try SPKIPin(parsing: part)
        }
    }

    public var family: PolicyFamily { .curl }
    public var profile: String { insecure ? "insecure" : "verify-peer" }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let anchors = caBundle.map { TrustAnchors(system: $0) } ?? .device(trust.store)
        if insecure {
            let evaluation = trust.evaluate(host: trust.host, anchors: anchors)
            record.use(evaluation)
            record.step("peer and host verification", "skipped (--insecure); the chain would have \(evaluation.isValid ? "passed" : "failed — " + evaluation.reason)",
                        weakness: evaluation.isValid ? nil : .invalidChainAccepted)
        } else {
            let evaluation = trust.evaluate(host: trust.host, anchors: anchors)
            record.use(evaluation)
            record.step("peer and host verification against \(caBundle == nil ? anchors.summary : "the --cacert bundle (\(caBundle!.countText))")", evaluation.outcomeSummary)
            guard evaluation.isValid else {
                record.step("result", "reject: curl: (60) SSL certificate problem")
                return record.finish(.reject)
            }
        }
        guard let leaf = trust.presentedChain.first else {
            record.step("--pinnedpubkey", "reject: no server certificate")
            return record.finish(.reject)
        }
        let key = leaf.spkiPin
        if pinnedPublicKeys.contains(key) {
            record.matchedPins = [key.curl]
            record.missingPins = pinnedPublicKeys.filter { $0 != key }.map(\.curl)
            record.step("--pinnedpubkey \(pinnedPublicKeySource) against the server certificate's key", "accept: \(key.curl) matches")
            return record.finish(.accept)
        }
        record.missingPins = pinnedPublicKeys.map(\.curl)
        record.step("--pinnedpubkey \(pinnedPublicKeySource) against the server certificate's key",
                    "reject: curl: (90) SSL: public key does not match pinned public key (the server's key is \(key.curl))")
        return record.finish(.reject)
    }
}
