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
///
/// The chain is judged as curl on OpenSSL 3 judges it: the host against the
/// subjectAltNames, or the subject CN when the certificate has no DNS or IP SAN at all
/// (``CurlHostCheck``); SHA-1 signatures, and keys under the bits of security of libssl's
/// default security level (``CurlSecurityLevel``: 80 at level 1, 112 at Debian's level 2), refused. curl strips a trailing dot from the host first.
public struct CurlPolicy: PinningPolicy {
    /// The accepted keys, as SPKI SHA-256 pins (a key file is reduced to its pin).
    public var pinnedPublicKeys: [SPKIPin]
    /// How the pins were given, for the verdict ("sha256//…;sha256//…" or the file).
    public var pinnedPublicKeySource: String
    /// `--insecure`: no peer and no host verification.
    public var insecure: Bool
    /// `--cacert`: replaces the default anchors.
    public var caBundle: [Certificate]?
    /// Entries of the `sha256//` value that no key's hash can ever equal as curl compares them
    /// (``readPins(_:)``): `A;` with its `;`, `A; sha256//B` whole, unpadded base64. curl takes the
    /// value without a word and refuses every server they alone would have to match.
    public var neverMatchingEntries: [String]
    /// What `--pinnedpubkey` is given on curl's command line: the `sha256//` value as written
    /// (world references replaced) or the key file's path.
    public var commandLineValue: String

    public init(pinnedPublicKeys: [SPKIPin], source: String? = nil, insecure: Bool = false, caBundle: [Certificate]? = nil,
                neverMatchingEntries: [String] = [], commandLineValue: String? = nil) {
        self.pinnedPublicKeys = pinnedPublicKeys
        self.pinnedPublicKeySource = source ?? pinnedPublicKeys.map(\.curl).joined(separator: ";")
        self.insecure = insecure
        self.caBundle = caBundle
        self.neverMatchingEntries = neverMatchingEntries
        self.commandLineValue = commandLineValue ?? pinnedPublicKeys.map(\.curl).joined(separator: ";")
    }

    /// Reads a `--pinnedpubkey` value that starts with `sha256//` exactly as curl does
    /// (`Curl_pin_peer_pubkey`, lib/vtls/vtls.c): the entries are the text after the first
    /// `sha256//` and after each `;sha256//`, and each is compared as text with the base64 of
    /// the key's SHA-256 — nothing trimmed, no other separator. An entry is a pin when it is
    /// that base64 (44 characters, padding kept) of 32 bytes; any other entry never matches:
    /// `A;;sha256//B` still pins B (the first entry is `A;`), `A;` pins nothing, `A; sha256//B`
    /// and `A;SHA256//B` are one entry each, so nothing.
    public static func readPins(_ value: String) -> (pins: [SPKIPin], neverMatching: [String]) {
        guard value.hasPrefix("sha256//") else { return ([], [value]) }
        var pins: [SPKIPin] = []
        var neverMatching: [String] = []
        for entry in value.dropFirst("sha256//".count).components(separatedBy: ";sha256//") {
            if entry.utf8.count == 44, let digest = Data(base64Encoded: entry), digest.count == 32,
               digest.base64EncodedString() == entry, let pin = try? SPKIPin(sha256: Array(digest)) {
                pins.append(pin)
            } else {
                neverMatching.append(entry)
            }
        }
        return (pins, neverMatching)
    }

    /// Why each of `entries` never matches, in a few words.
    static func whyNeverMatching(_ entries: [String]) -> String {
        entries.map { entry -> String in
            let why: String
            if entry.isEmpty { why = "empty" }
            else if entry.contains(where: \.isWhitespace) { why = "curl trims no space" }
            else if entry.contains(";") { why = "curl splits only at ;sha256//" }
            else if let digest = Data(base64Encoded: entry + String(repeating: "=", count: (4 - entry.count % 4) % 4)), digest.count == 32 {
                why = entry.hasSuffix("=") ? "not the base64 curl writes" : "the base64 without its padding"
            } else { why = "not the base64 of a SHA-256 hash" }
            return "'\(entry)' (\(why))"
        }.joined(separator: ", ")
    }

    /// Reads a `--pinnedpubkey` file as curl does: the first PEM `PUBLIC KEY` block, or
    /// the whole file as a DER SubjectPublicKeyInfo. A certificate is not a public-key
    /// file: curl fails on it with error 90 whatever the server's key, so it is refused.
    public static func readPublicKeyFile(_ path: String) throws -> SPKIPin {
        let bytes = try FileIO.read(path)
        let extract = "extract the key with: openssl x509 -in cert.pem -pubkey -noout > key.pem"
        if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN") {
            if text.contains("-----BEGIN PUBLIC KEY-----") {
                do { return try PublicKey(pemEncoded: text).spkiPin } catch let error as PinproxyError {
                    throw PinproxyError(.decoding, "\(path): \(error.reason)", openSSLErrors: error.openSSLErrors)
                }
            }
            if text.contains("-----BEGIN CERTIFICATE-----") {
                throw PinproxyError(.decoding, "\(path) is a certificate, not a public key: curl --pinnedpubkey needs a public key file (PEM PUBLIC KEY or DER SubjectPublicKeyInfo) and fails with error 90 on a certificate; \(extract)")
            }
            if text.contains("PRIVATE KEY-----") {
                throw PinproxyError(.decoding, "\(path) is a private key: curl --pinnedpubkey needs a public key file; write one with: openssl pkey -in \((path as NSString).lastPathComponent) -pubout > key.pem")
            }
            throw PinproxyError(.decoding, "\(path): holds no PUBLIC KEY PEM block, which curl --pinnedpubkey needs")
        }
        if let key = try? PublicKey(derEncoded: bytes), key.derEncoded == bytes { return key.spkiPin }
        if (try? Certificate(derEncoded: bytes)) != nil {
            throw PinproxyError(.decoding, "\(path) is a DER certificate, not a public key: curl --pinnedpubkey needs a public key file (PEM PUBLIC KEY or DER SubjectPublicKeyInfo) and fails with error 90 on a certificate; \(extract)")
        }
        throw PinproxyError(.decoding, "\(path): neither a PEM PUBLIC KEY nor a DER SubjectPublicKeyInfo")
    }

    public var family: PolicyFamily { .curl }
    public var profile: String { insecure ? "insecure" : "verify-peer" }

    /// Nil: `--pinnedpubkey` applies to whatever host the command names.
    public func uncoveredReason(host: HostName) -> String? { nil }

    /// The `--pinnedpubkey` hashes, and the certificates of a `--cacert` bundle.
    public func refersTo(_ certificate: Certificate) -> Bool? {
        pinnedPublicKeys.pinsKey(of: certificate) || (caBundle ?? []).holdsKey(of: certificate)
    }

    /// curl verifies the peer's chain inside `SSL_connect` and checks the host name and
    /// `--pinnedpubkey` after it (lib/vtls/openssl.c, `servercert`): it refuses in the handshake
    /// only when the chain itself fails, and with `--insecure` never (the real-client tests
    /// hold this against curl).
    public func refusalPoint(for trust: ServerTrust) -> DecisionPoint {
        if insecure { return .afterHandshake }
        return DecisionPoint.splitting(trust, platform: .curl, anchors: caBundle.map { TrustAnchors(system: $0) } ?? .device(trust.store))
    }

    public func evaluate(_ trust: ServerTrust) -> Verdict {
        var record = VerdictRecorder(family: family, profile: profile, trust: trust)
        let anchors = caBundle.map { TrustAnchors(system: $0) } ?? .device(trust.store)
        if insecure {
            let evaluation = trust.evaluate(.ssl(host: trust.host, platform: .curl), anchors: anchors)
            record.use(evaluation)
            record.step("peer and host verification", "skipped (--insecure); the chain would have \(evaluation.isValid ? "passed" : "failed — " + evaluation.reason)",
                        weakness: evaluation.isValid ? nil : .invalidChainAccepted)
        } else {
            let evaluation = trust.evaluate(.ssl(host: trust.host, platform: .curl), anchors: anchors)
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
        let unusable = neverMatchingEntries.isEmpty ? ""
            : "; entries that never match, as curl compares them: \(Self.whyNeverMatching(neverMatchingEntries))"
        if pinnedPublicKeys.contains(key) {
            record.matchedPins = [key.curl]
            record.missingPins = pinnedPublicKeys.filter { $0 != key }.map(\.curl)
            record.step("--pinnedpubkey \(pinnedPublicKeySource) against the server certificate's key", "accept: \(key.curl) matches\(unusable)")
            return record.finish(.accept)
        }
        record.missingPins = pinnedPublicKeys.map(\.curl)
        record.step("--pinnedpubkey \(pinnedPublicKeySource) against the server certificate's key",
                    "reject: curl: (90) SSL: public key does not match pinned public key (the server's key is \(key.curl))\(unusable)")
        return record.finish(.reject)
    }
}
