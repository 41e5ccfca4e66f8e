import Foundation
import PinproxyCertificates

/// OkHttp's `CertificatePinner`, after the platform trust manager and hostname verifier.
///
/// The handshake first validates the chain against the device anchors (system and
/// user) with the host name, as Android's Conscrypt trust manager and OkHttp 3.10+'s
/// `OkHostnameVerifier` do (subjectAltName only; Conscrypt's algorithm floor). Then the pins
/// of every pattern matching the host are combined, and the connection proceeds iff one of
/// them is the SHA-256 (or legacy SHA-1) hash of the SubjectPublicKeyInfo of a certificate
/// in the checked chain.
///
/// Patterns are matched against the URL host as written (`CertificatePinner.Pin.matchesHostname`
/// compares strings): `api.example.com.` matches no pattern for `api.example.com`, so its
/// pins are skipped, while the hostname verifier, which makes both names absolute, passes.
///
/// The checked chain is the CLEANED chain — rebuilt from the leaf to a trusted
/// anchor — in profile `cleaned-chain` (OkHttp 2.7.5/3.1.2 and later). Profile
/// `presented-chain` checks the raw list the server sent, reproducing
/// CVE-2016-2402: a forged chain with the genuine certificate appended passes.
public struct OkHttpPolicy: PinningPolicy {
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

        /// Validates the pattern and the pin the way OkHttp does.
        public init(pattern: String, pin: String) throws {
            let lowered = pattern.lowercased()
            let wildcardOK = (lowered.hasPrefix("**.") && !lowered.dropFirst(2).contains("*"))
                || (lowered.hasPrefix("*.") && !lowered.dropFirst(1).contains("*"))
                || !lowered.contains("*")
            guard wildcardOK else {
                throw PinproxyError(.policy, "unexpected pattern '\(pattern)': use 'host', '*.host' or '**.host'")
            }
            let bare = lowered.hasPrefix("**.") ? String(lowered.dropFirst(3)) : lowered.hasPrefix("*.") ? String(lowered.dropFirst(2)) : lowered
            do {
                _ = try HostName(validating: bare)
            } catch let error as PinproxyError {
                throw PinproxyError(.policy, "pattern '\(pattern)': \(error.reason)")
            }
            self.pattern = lowered
            if pin.hasPrefix("sha256/") {
                self.hash = .sha256(try SPKIPin(parsing: pin).sha256)
            } else if pin.hasPrefix("sha1/") {
                guard let data = Data(base64Encoded: String(pin.dropFirst(5))) else {
                    throw PinproxyError(.decoding, "pin '\(pin)' is not valid base64")
                }
                guard data.count == 20 else {
                    throw PinproxyError(.decoding, "pin '\(pin)' decodes to \(data.count) bytes, a SHA-1 pin has 20")
                }
                self.hash = .sha1(Array(data))
            } else {
                throw PinproxyError(.decoding, "pin '\(pin)' must start with 'sha256/' or 'sha1/'")
            }
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

        public var pinText: String {
            switch hash {
            case .sha256(let digest): return "sha256/" + digest.base64
            case .sha1(let digest): return "sha1/" + digest.base64
            }
        }

        public var description: String { "\(pattern) \(pinText)" }
    }

    public var pins: [Pin]
    public var checkedChain: Profile

    public init(pins: [Pin], profile: Profile = .cleanedChain) {
        self.pins = pins
        self.checkedChain = profile
    }

    public var family: PolicyFamily { .okhttp }
    public var profile: String { checkedChain.rawValue }

    /// Why no `CertificatePinner` pattern (`host`, `*.host`, `**.host`) matches `host`.
    public func uncoveredReason(host: HostName) -> String? {
        pins.contains { $0.matches(host.description) } ? nil
            : "no CertificatePinner pattern (\(pins.map(\.pattern).distinctList)) matches it, so OkHttp checks the platform's trust alone"
    }

    /// The platform trust manager validates the chain inside the handshake, with no host name;
    /// `RealConnection.connectTls` runs the hostname verifier and `CertificatePinner.check` once
    /// `startHandshake()` has returned. So OkHttp refuses in the handshake only when the chain
    /// itself fails; a wrong host or a pin mismatch closes the connection after it (the
    /// real-client tests hold this against OkHttp 3.13.1).
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint {
        DecisionPoint.splitting(trust, platform: .android, anchors: .device(trust.store))
    }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let anchors = TrustAnchors.device(trust.store)
        let evaluation = trust.evaluate(.ssl(host: trust.host, platform: .android), anchors: anchors)
        record.use(evaluation)
        // The trust manager runs inside the handshake; OkHttp's hostname
        // verifier runs after it (RealConnection.connectTls), before the pinner.
        record.step("platform trust manager (in the handshake), then hostname verifier (after it) for \(trust.host) against \(anchors.summary)", evaluation.outcomeSummary)
        guard evaluation.isValid else {
            let onlyTheName = evaluation.failures.allSatisfy { $0.kind == .hostMismatch }
            record.step(onlyTheName ? "hostname verifier" : "handshake",
                        onlyTheName ? "reject: SSLPeerUnverifiedException after the handshake, before pinning"
                                    : "reject: SSLHandshakeException in the handshake, before pinning")
            return record.finish(.reject)
        }
        let hostname = trust.hostAsWritten
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
        switch checkedChain {
        case .cleanedChain:
            chain = evaluation.builtChain
            chainName = "the cleaned chain (\(chain.countText), leaf to trusted anchor)"
        case .presentedChain:
            chain = trust.presentedChain
            chainName = "the chain as presented (\(chain.countText), not cleaned)"
            weakness = .cve2016_2402
        }
        for (index, certificate) in chain.enumerated() {
            if let pin = matching.first(where: { $0.matches(certificate) }) {
                record.matchedPins = [pin.pinText]
                record.missingPins = matching.filter { $0.pinText != pin.pinText }.map(\.pinText)
                let outside = !evaluation.builtChain.contains(certificate)
                record.step("CertificatePinner.check over \(chainName)",
                            "accept: pin \(pin.pinText) matched certificate #\(index) of the \(outside ? "presented" : "checked") chain (\(ChainSummary.name(of: certificate))" +
                            (outside ? "; not part of the validated chain)" : ")"),
                            weakness: outside ? weakness : nil)
                return record.finish(.accept)
            }
        }
        record.missingPins = matching.map(\.pinText)
        record.step("CertificatePinner.check over \(chainName)", "reject: Certificate pinning failure! no pin matches any certificate")
        return record.finish(.reject)
    }
}
