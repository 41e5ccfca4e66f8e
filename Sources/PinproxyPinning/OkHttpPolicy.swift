import Foundation
import PinproxyCertificates

/// OkHttp's `CertificatePinner`, after the platform trust manager and hostname verifier.
///
/// The handshake first validates the chain against the device anchors (system and
/// user) as the platform's trust manager does — Android's Conscrypt, or the JDK's PKIX on the
/// JVM (``Platform``, ``VerifierProfile``) — and OkHttp 3.10+'s `OkHostnameVerifier` checks
/// the host (subjectAltName only). Then the pins of every pattern matching the host are
/// combined, and the connection proceeds iff one of them is the SHA-256 (or legacy SHA-1)
/// hash of the SubjectPublicKeyInfo of a certificate in the checked chain.
///
/// Patterns are matched against the URL host as written (`CertificatePinner.Pin.matchesHostname`
/// compares strings): `api.example.com.` matches no pattern for `api.example.com`, so its
/// pins are skipped, while the hostname verifier, which makes both names absolute, passes.
/// Both sides are canonicalised as `HttpUrl` does first: Unicode labels become A-labels
/// (`σkhttp.com` → `xn--khttp-fde.com`) and an IPv4-mapped IPv6 address becomes IPv4
/// (`::ffff:192.168.1.1` → `192.168.1.1`, then matched against IPv4 subjectAltNames).
///
/// The checked chain is the CLEANED chain in profile `cleaned-chain` (OkHttp 2.7.5/3.1.2
/// and later): on Android the path the platform validated (`AndroidCertificateChainCleaner`),
/// on the JVM OkHttp's own ``BasicCertificateChainCleaner``. Profile `presented-chain`
/// checks the raw list the server sent, reproducing CVE-2016-2402: a forged chain with the
/// genuine certificate appended passes.
public struct OkHttpPolicy: PinningPolicy {
    /// The platform under OkHttp: its trust manager and its chain cleaner.
    ///
    /// The default is `android`: OkHttp's pinning configurations are overwhelmingly Android
    /// apps', the brief's users are mobile teams, and Android is the stricter of the two on
    /// algorithms. `jvm` is OkHttp on a JDK — a backend service, or the real OkHttp this
    /// machine can run to prove the emulation (docs/policies.md).
    public enum Platform: String, Sendable, CaseIterable {
        /// Conscrypt's `TrustManagerImpl`; `AndroidCertificateChainCleaner` (the validated path).
        case android
        /// SunJSSE's PKIX trust manager; `BasicCertificateChainCleaner`.
        case jvm

        /// The validator this platform's trust manager follows.
        public var trustPlatform: TrustPlatform { self == .android ? .android : .jvm }
    }

    /// Which chain the pins are checked against.
    public enum Profile: String, Sendable, CaseIterable {
        case cleanedChain = "cleaned-chain"
        case presentedChain = "presented-chain"
    }

    /// One `CertificatePinner.Builder.add(pattern, pin)` entry.
    public struct Pin: Sendable, Hashable, CustomStringConvertible {
        public enum Hash: Sendable, Hashable {
            case sha256([UInt8])
            case sha1([UInt8])
        }

        /// `host`, `*.host` or `**.host`, lower case.
        public let pattern: String
        public let hash: Hash
        /// The pin as the policy wrote it, as OkHttp is given it.
        public let written: String

        /// Validates the pattern and the pin the way OkHttp 3.13.1 does (`CertificatePinner.Pin`):
        /// `sha256/` or `sha1/`, then whatever okio's `ByteString.decodeBase64` makes of the rest
        /// (``OkioBase64``), refused only when that is nil. The length is not checked: a pin that
        /// decodes to other than 32 (SHA-256) or 20 (SHA-1) bytes is taken and never matches —
        /// curl's `sha256//…` given to OkHttp is one (the extra `/` is a base64 digit: 33 bytes).
        public init(pattern: String, pin: String) throws {
            self.pattern = try Self.canonicalPattern(pattern)
            self.written = pin
            let sha1 = pin.hasPrefix("sha1/")
            guard sha1 || pin.hasPrefix("sha256/") else {
                throw PinproxyError(.decoding, "pin '\(pin)' must start with 'sha256/' or 'sha1/' (OkHttp: \"pins must start with 'sha256/' or 'sha1/'\")")
            }
            guard let bytes = OkioBase64.decode(String(pin.dropFirst(sha1 ? 5 : 7))) else {
                throw PinproxyError(.decoding, "pin '\(pin)' is not valid base64 (OkHttp: \"pins must be base64\")")
            }
            self.hash = sha1 ? .sha1(bytes) : .sha256(bytes)
        }

        /// Why this pin can never equal a key's hash (its decoded length), nil when it can.
        public var neverMatches: String? {
            switch hash {
            case .sha256(let digest) where digest.count != 32:
                let hint = written.hasPrefix("sha256//") ? "; written curl-style (sha256//): OkHttp's notation is sha256/ with one slash" : ""
                return "pin \(written) decodes to \(digest.count) bytes, which no SHA-256 hash (32 bytes) can equal: OkHttp takes it and it never matches\(hint)"
            case .sha1(let digest) where digest.count != 20:
                return "pin \(written) decodes to \(digest.count) bytes, which no SHA-1 hash (20 bytes) can equal: OkHttp takes it and it never matches"
            default:
                return nil
            }
        }

        /// `pattern` as OkHttp keeps it (`host`, `*.host` or `**.host`, lower case, the host
        /// canonical), or the error OkHttp's `CertificatePinner.Builder.add` throws for it.
        public static func canonicalPattern(_ pattern: String) throws -> String {
            let lowered = pattern.lowercased()
            let wildcardOK = (lowered.hasPrefix("**.") && !lowered.dropFirst(2).contains("*"))
                || (lowered.hasPrefix("*.") && !lowered.dropFirst(1).contains("*"))
                || !lowered.contains("*")
            guard wildcardOK else {
                throw PinproxyError(.policy, "unexpected pattern '\(pattern)': use 'host', '*.host' or '**.host'")
            }
            let prefix = lowered.hasPrefix("**.") ? "**." : lowered.hasPrefix("*.") ? "*." : ""
            // `toCanonicalHost` keeps a trailing dot (java.net.IDN keeps the empty root label, and
            // OkHttp 5's label check allows it), so `example.com.` pins only a host written
            // `example.com.`, as the host's own dot is kept for matching.
            var name = String(lowered.dropFirst(prefix.count))
            let trailingDot = name.hasSuffix(".") && !name.hasSuffix("..") && name.count > 1
            if trailingDot { name.removeLast() }
            let canonical: String
            do {
                canonical = try OkHttpPolicy.canonicalHost(name)
            } catch let error as PinproxyError {
                throw PinproxyError(.policy, "pattern '\(pattern)': \(error.reason)")
            }
            return prefix + canonical + (trailingDot ? "." : "")
        }

        /// OkHttp's `matchesHostname`.
        public func matches(_ hostname: String) -> Bool {
            if pattern.hasPrefix("**.") {
                let suffix = pattern.dropFirst(3)
                if hostname == suffix { return true }
                return hostname.hasSuffix("." + suffix)
            }
            if pattern.hasPrefix("*.") {
                let suffix = pattern.dropFirst(1)
                guard hostname.hasSuffix(suffix), hostname.count > suffix.count else { return false }
                return !hostname.dropLast(suffix.count).contains(".")
            }
            return hostname == pattern
        }

        func matches(_ certificate: Certificate) -> Bool {
            switch hash {
            case .sha256(let digest): return certificate.spkiPin.sha256 == digest
            case .sha1(let digest): return OpenSSL.sha1(certificate.publicKeyDER) == digest
            }
        }

        /// The pin as written (what OkHttp reports in its pinning failure).
        public var pinText: String { written }

        public var description: String { "\(pattern) \(pinText)" }
    }

    public var pins: [Pin]
    public var checkedChain: Profile
    public var platform: Platform

    public init(pins: [Pin], profile: Profile = .cleanedChain, platform: Platform = .android) {
        self.pins = pins
        self.checkedChain = profile
        self.platform = platform
    }

    public var family: PolicyFamily { .okhttp }
    /// "cleaned-chain, android".
    public var profile: String { "\(checkedChain.rawValue), \(platform.rawValue)" }

    /// `HttpUrl.canonicalizeHost`: IPv6 literals (bracketed or not) in canonical text, an
    /// IPv4-mapped one as IPv4; Unicode names as A-labels; everything lower case. Throws
    /// when the result is not a valid host name.
    public static func canonicalHost(_ text: String) throws -> String {
        var host = text
        if host.contains(":") {
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            if let bytes = HostName.parseIPv6(bare) { return hostText(ipv4Mapped(.ipv6(bytes))) }
        } else if !host.unicodeScalars.allSatisfy(\.isASCII) {
            guard let ascii = IDNA.toASCII(host) else {
                throw PinproxyError(.invalidHostName, "'\(text)' cannot be written as IDNA A-labels")
            }
            host = ascii
        }
        return try HostName(validating: host).description
    }

    /// A host as `HttpUrl.host()` writes it, the text `CertificatePinner` matches patterns
    /// against: an IPv6 address in OkHttp's own notation (`inet6AddressToAscii`: hexadecimal
    /// groups, the longest run of two or more zero groups as `::`, the first of equal runs,
    /// never a dotted IPv4 tail, so `::1.2.3.4` is `::102:304` where `inet_ntop` writes
    /// `::1.2.3.4`); any other host as it is described.
    static func hostText(_ host: HostName) -> String {
        guard case .ipv6(let bytes) = host, bytes.count == 16 else { return host.description }
        var longestStart = -1, longestLength = 0
        var index = 0
        while index < 16 {
            let start = index
            while index < 16 && bytes[index] == 0 && bytes[index + 1] == 0 { index += 2 }
            if index - start > longestLength && index - start >= 4 { longestStart = start; longestLength = index - start }
            index += 2
        }
        var text = ""
        index = 0
        while index < 16 {
            if index == longestStart {
                text += ":"
                index += longestLength
                if index == 16 { text += ":" }
            } else {
                if index > 0 { text += ":" }
                text += String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16)
                index += 2
            }
        }
        return text
    }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address OkHttp makes of it.
    static func ipv4Mapped(_ host: HostName) -> HostName {
        guard case .ipv6(let bytes) = host, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return host }
        return .ipv4(Array(bytes.suffix(4)))
    }

    /// The `CertificatePinner` pins (SHA-256 or SHA-1 of the key), for any host pattern.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        pins.isEmpty ? nil : pins.contains { $0.matches(certificate) }
    }

    /// Why no `CertificatePinner` pattern (`host`, `*.host`, `**.host`) matches `host`.
    public func uncoveredReason(host: HostName) -> String? {
        pins.contains { $0.matches(Self.hostText(Self.ipv4Mapped(host))) } ? nil
            : "no CertificatePinner pattern (\(pins.map(\.pattern).distinctList)) matches it, so OkHttp checks the platform's trust alone"
    }

    /// The platform trust manager validates the chain inside the handshake, with no host name;
    /// `RealConnection.connectTls` runs the hostname verifier and `CertificatePinner.check` once
    /// `startHandshake()` has returned. So OkHttp refuses in the handshake only when the chain
    /// itself fails; a wrong host or a pin mismatch closes the connection after it (the
    /// real-client tests hold this against OkHttp 3.13.1).
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint {
        DecisionPoint.splitting(trust, platform: platform.trustPlatform, anchors: .device(trust.store))
    }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let anchors = TrustAnchors.device(trust.store)
        let host = Self.ipv4Mapped(trust.host)
        let evaluation = trust.evaluate(.ssl(host: host, platform: platform.trustPlatform), anchors: anchors)
        record.use(evaluation)
        // The trust manager runs inside the handshake; OkHttp's hostname
        // verifier runs after it (RealConnection.connectTls), before the pinner.
        let trustManager = platform == .android ? "Conscrypt's trust manager" : "the JDK's PKIX trust manager"
        record.step("\(trustManager) (in the handshake), then hostname verifier (after it) for \(host) against \(anchors.summary)", evaluation.outcomeSummary)
        guard evaluation.isValid else {
            let onlyTheName = evaluation.failures.allSatisfy { $0.kind == .hostMismatch }
            record.step(onlyTheName ? "hostname verifier" : "handshake",
                        onlyTheName ? "reject: SSLPeerUnverifiedException after the handshake, before pinning"
                                    : "reject: SSLHandshakeException in the handshake, before pinning")
            return record.finish(.reject)
        }
        let hostname = host == trust.host && !host.isIPAddress ? trust.hostAsWritten : Self.hostText(host)
        let matching = pins.filter { $0.matches(hostname) }
        let patterns = Array(Set(matching.map(\.pattern))).sorted()
        guard !matching.isEmpty else {
            let skipped = trust.hasTrailingDot ? pins.filter { $0.matches(trust.host.description) } : []
            if let pattern = skipped.first?.pattern {
                record.step("CertificatePinner: patterns matching \(hostname)",
                            "none match \(hostname) as written (a pattern for \(pattern) does not match the name with its trailing dot); the host is not pinned, accept",
                            weakness: .trailingDotHost)
            } else {
                record.step("CertificatePinner: patterns matching \(hostname)", "none; the host is not pinned, accept")
            }
            return record.finish(.accept)
        }
        record.step("CertificatePinner: patterns matching \(hostname)", "\(patterns.joined(separator: ", ")) with \(matching.count) pin\(matching.count == 1 ? "" : "s") combined")

        let chain: [Certificate]
        let chainName: String
        var weakness: Weakness? = nil
        switch (checkedChain, platform) {
        case (.cleanedChain, .android):
            chain = evaluation.builtChain
            chainName = "the cleaned chain (\(chain.countText), the path Android validated: AndroidCertificateChainCleaner)"
        case (.cleanedChain, .jvm):
            switch BasicCertificateChainCleaner.clean(trust.presentedChain, trustedCertificates: anchors.all) {
            case .success(let cleaned):
                chain = cleaned
                chainName = "the cleaned chain (\(chain.countText) ending at \(ChainSummary.name(of: cleaned[cleaned.count - 1])), BasicCertificateChainCleaner: first presented signer, first trusted root that signed it, validity ignored)"
            case .failure(let failure):
                record.step("BasicCertificateChainCleaner", "reject: SSLPeerUnverifiedException: \(failure.reason)")
                return record.finish(.reject)
            }
        case (.presentedChain, _):
            chain = trust.presentedChain
            chainName = "the chain as presented (\(chain.countText), not cleaned)"
            weakness = .cve2016_2402
        }
        for (index, certificate) in chain.enumerated() {
            if let pin = matching.first(where: { $0.matches(certificate) }) {
                record.matchedPins = [pin.pinText]
                record.missingPins = matching.filter { $0.pinText != pin.pinText }.map(\.pinText)
                let outside = checkedChain == .presentedChain && !evaluation.builtChain.contains(certificate)
                record.step("CertificatePinner.check over \(chainName)",
                            "accept: pin \(pin.pinText) matched certificate #\(index) of the \(outside ? "presented" : "checked") chain (\(ChainSummary.name(of: certificate))" +
                            (outside ? "; not part of the validated chain)" : ")"),
                            weakness: outside ? weakness : nil)
                return record.finish(.accept)
            }
        }
        record.missingPins = matching.map(\.pinText)
        let never = matching.compactMap(\.neverMatches)
        record.step("CertificatePinner.check over \(chainName)",
                    "reject: Certificate pinning failure! no pin matches any certificate" + (never.isEmpty ? "" : " (\(never.joined(separator: "; ")))"))
        return record.finish(.reject)
    }
}
