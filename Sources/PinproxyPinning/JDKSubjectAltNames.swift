internal import COpenSSL
import PinproxyCertificates

/// How the JDK reads a leaf's subjectAltName: whole, or not at all.
///
/// `X509CertImpl` parses the extension into `GeneralName`s, and one entry the JDK's name classes
/// refuse fails the whole extension (`SubjectAlternativeNameExtension` throws `IOException`). A
/// non-critical extension that fails stays unparsed: `getSubjectAlternativeNames()` lists
/// nothing, so OkHttp's hostname verifier sees no name ("Hostname … not verified: …
/// subjectAltNames: []"). A critical one fails the certificate itself, and with it the handshake
/// ("Failed to parse server certificates", alert bad_certificate). Real OkHttp 3.13.1 on JDK 17
/// refuses both, where curl and the other platforms read the DNS entry and accept.
///
/// What the JDK 17 name classes refuse when they read an entry from DER (a DNS name is taken as
/// written, `DNSName(DerValue)`):
/// - a URI (`URIName`) that `java.net.URI` cannot parse — a space or another character RFC 2396
///   does not allow, a `%` not followed by two hex digits, a scheme that does not start with a
///   letter — or that has no scheme ("URI name must include scheme");
/// - an email (`RFC822Name.parseName`) that is empty, ends with `@`, or whose domain is `.`;
/// - an IP address (`IPAddressName(byte[])`) of other than 4, 8, 16 or 32 bytes.
struct JDKSubjectAltNames: VerifierPolicy {
    /// Every presented certificate whose critical subjectAltName the JDK cannot read: the
    /// certificate does not parse, and the handshake fails before any check. (A non-critical
    /// one is the host check's: ``SubjectAltNameHost``.)
    func failures(_ context: VerificationContext) -> [TrustFailure] {
        context.presented.enumerated().compactMap { index, certificate in
            guard certificate.hasCriticalSubjectAltName, let entry = Self.unreadableEntry(of: certificate) else { return nil }
            return TrustFailure(kind: .malformed, code: Int(X509_V_ERR_INVALID_EXTENSION), depth: index,
                                detail: "malformed certificate: presented certificate #\(index) (\(ChainSummary.name(of: certificate))) has a critical "
                                    + "subjectAltName the JDK cannot read: \(entry), so the certificate does not parse (\"Failed to parse "
                                    + "server certificates\"): the handshake fails before any check")
        }
    }

    /// The first entry of `leaf`'s subjectAltName the JDK cannot read, described; nil when it reads them all.
    static func unreadableEntry(of leaf: Certificate) -> String? {
        let (uris, emails) = leaf.subjectAlternativeURIsAndEmails
        for uri in uris {
            if let reason = uriProblem(uri) { return "the URI \(quoted(uri)) (\(reason))" }
        }
        for email in emails {
            if let reason = emailProblem(email) { return "the email \(quoted(email)) (\(reason))" }
        }
        for case .ipAddress(let bytes) in leaf.subjectAlternativeNames where ![4, 8, 16, 32].contains(bytes.count) {
            return "an IP address of \(bytes.count) bytes (\"Invalid IPAddressName\")"
        }
        return nil
    }

    /// Why `java.net.URI` or `URIName` refuses `bytes`; nil when both take it.
    static func uriProblem(_ bytes: [UInt8]) -> String? {
        // RFC 2396's characters as java.net.URI allows them: unreserved, reserved, escaped, and
        // `#` for the fragment, `[` `]` for an IPv6 host; any other non-ASCII character is
        // "other" and allowed, any control or space character is not.
        let allowedPunctuation = Set("-_.!~*'();/?:@&=+$,#[]%".utf8)
        for (index, byte) in bytes.enumerated() {
            if byte < 0x80 && !(isAlphanumeric(byte) || allowedPunctuation.contains(byte)) {
                return byte == 0x20 ? "a space: \"Illegal character\"" : "\"Illegal character\" at index \(index)"
            }
            if byte == UInt8(ascii: "%") {
                let hex = bytes.dropFirst(index + 1).prefix(2)
                guard hex.count == 2, hex.allSatisfy(isHexDigit) else { return "\"Malformed escape pair\" at index \(index)" }
            }
        }
        // A scheme is what comes before the first `:`, when no `/`, `?` or `#` comes before it.
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              !bytes[..<colon].contains(where: { "/?#".utf8.contains($0) }) else {
            return "\"URI name must include scheme\""
        }
        let scheme = bytes[..<colon]
        guard let first = scheme.first, isLetter(first),
              scheme.allSatisfy({ isAlphanumeric($0) || "+-.".utf8.contains($0) }) else {
            return colon == bytes.startIndex ? "\"Expected scheme name\"" : "\"Illegal character in scheme name\""
        }
        if colon == bytes.index(before: bytes.endIndex) { return "\"Expected scheme-specific part\"" }
        return nil
    }

    /// Why `RFC822Name.parseName` refuses `bytes`; nil when it takes it.
    static func emailProblem(_ bytes: [UInt8]) -> String? {
        if bytes.isEmpty { return "\"RFC822Name may not be null or empty\"" }
        // The domain is what follows the first `@` (`indexOf('@')`), the whole name without one.
        let domain = bytes.firstIndex(of: UInt8(ascii: "@")).map { bytes[bytes.index(after: $0)...] } ?? bytes[...]
        if domain.isEmpty { return "\"RFC822Name may not end with @\"" }
        if domain.elementsEqual(".".utf8) { return "\"RFC822Name domain may not be just .\"" }
        return nil
    }

    private static func quoted(_ bytes: [UInt8]) -> String {
        "'" + String(decoding: bytes.map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }, as: UTF8.self) + "'"
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || (0x30...0x39).contains(byte) }
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
