import Foundation
import PinproxyCertificates

/// How verdicts are printed: plain text for people, JSON for tools.
public enum VerdictReport {
    /// Multi-line text: the decision first, then the steps, pins and chains.
    public static func text(_ verdict: Verdict) -> String {
        var lines = ["\(verdict.decision.rawValue) — \(verdict.family) (\(verdict.profile)) for \(verdict.host)"]
        if let disposition = verdict.disposition { lines.append("disposition: \(disposition)") }
        lines.append("steps:")
        for (index, step) in verdict.steps.enumerated() {
            lines.append("  \(index + 1). \(step.action): \(step.outcome)")
            if let weakness = step.weakness {
                lines.append("     weakness reproduced: \(weakness.name) — \(weakness.explanation)")
            }
        }
        lines.append("matched pins: \(verdict.matchedPins.isEmpty ? "none" : verdict.matchedPins.joined(separator: ", "))")
        if !verdict.missingPins.isEmpty {
            lines.append("pins not found: \(verdict.missingPins.joined(separator: ", "))")
        }
        lines.append("built chain:")
        lines += verdict.builtChain.map { "  \($0)" }
        lines.append("presented chain:")
        lines += verdict.presentedChain.map { "  \($0)" }
        let weaknesses = verdict.weaknesses
        if !weaknesses.isEmpty {
            lines.append("weaknesses reproduced: \(weaknesses.map(\.name).joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }

    /// Pretty-printed JSON with sorted keys.
    public static func json(_ verdict: Verdict) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(JSONVerdict(verdict)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private struct JSONVerdict: Encodable {
        let verdict: Verdict
        init(_ verdict: Verdict) { self.verdict = verdict }
        enum Keys: String, CodingKey { case decision, family, profile, host, steps, matchedPins, missingPins, builtChain, presentedChain, disposition, weaknesses }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(verdict.decision, forKey: .decision)
            try c.encode(verdict.family, forKey: .family)
            try c.encode(verdict.profile, forKey: .profile)
            try c.encode(verdict.host, forKey: .host)
            try c.encode(verdict.steps, forKey: .steps)
            try c.encode(verdict.matchedPins, forKey: .matchedPins)
            try c.encode(verdict.missingPins, forKey: .missingPins)
            try c.encode(verdict.builtChain, forKey: .builtChain)
            try c.encode(verdict.presentedChain, forKey: .presentedChain)
            try c.encodeIfPresent(verdict.disposition, forKey: .disposition)
            try c.encode(verdict.weaknesses.map(\.name), forKey: .weaknesses)
        }
    }
}

/// What `pinproxy pin` prints for a certificate or a public key.
public enum PinReport {
    /// Subject, fingerprint and the SPKI pin in every notation.
    public static func describe(_ certificate: Certificate, label: String) -> String {
        var lines = [
            "\(label)",
            "  subject:     \(certificate.subject.isEmpty ? "(empty)" : certificate.subject)",
            "  issuer:      \(certificate.issuer.isEmpty ? "(empty)" : certificate.issuer)",
        ]
        let names = certificate.subjectAlternativeNames
        if !names.isEmpty { lines.append("  names:       \(names.map(\.description).joined(separator: ", "))") }
        let iso = ISO8601DateFormatter()
        lines.append("  valid:       \(iso.string(from: certificate.notBefore)) to \(iso.string(from: certificate.notAfter))")
        lines.append("  SHA-256:     \(certificate.sha256FingerprintText)")
        lines += pinLines(certificate.spkiPin)
        return lines.joined(separator: "\n")
    }

    /// Fingerprint and pins of a public key; `ofPrivateKey` when it is the public half of a private key.
    public static func describe(_ key: PublicKey, label: String, ofPrivateKey: Bool = false) -> String {
        var lines = [
            "\(label)",
            "  subject:     (none: \(ofPrivateKey ? "the public key of a private key" : "a bare public key"))",
            "  SHA-256:     \(OpenSSL.sha256(key.derEncoded).hexString(separator: ":").uppercased()) (of the SubjectPublicKeyInfo)",
        ]
        lines += pinLines(key.spkiPin)
        return lines.joined(separator: "\n")
    }

    static func pinLines(_ pin: SPKIPin) -> [String] {
        [
            "  SPKI pin (SHA-256 of the SubjectPublicKeyInfo):",
            "    OkHttp:      \(pin.okhttp)",
            "    curl:        \(pin.curl)",
            "    HPKP:        \(pin.hpkp)",
            "    TrustKit:    \(pin.base64)",
            "    Android XML: \(pin.androidXML)",
        ]
    }
}
