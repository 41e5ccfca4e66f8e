import Foundation

/// The TLS connection between client and proxy.
///
/// Every flow of a connection carries a copy: its fields live in one shared
/// box (``SharedFields``), so a copy is one retain and a change copies the
/// box. Equality, hashing and coding are by the fields, as if stored inline.
public struct ClientTLSDetails: Hashable, Sendable, Codable {
    struct Fields: Hashable, Sendable, Codable {
        var sni: String?
        var version: String?
        var cipher: String?
        var alpn: String?
        var forgedLeafPin: String?
        var forgedLeafSerial: String?
        var profile: String?
    }

    private(set) var shared: SharedFields<Fields>

    /// The server name the client sent, if any.
    public var sni: String? {
        _read { yield shared.fields.sni }
        _modify { yield &shared.fields.sni }
    }
    /// `TLSv1.3`.
    public var version: String? {
        _read { yield shared.fields.version }
        _modify { yield &shared.fields.version }
    }
    public var cipher: String? {
        _read { yield shared.fields.cipher }
        _modify { yield &shared.fields.cipher }
    }
    public var alpn: String? {
        _read { yield shared.fields.alpn }
        _modify { yield &shared.fields.alpn }
    }
    /// The SPKI pin (`sha256/...`) of the forged leaf shown to the client.
    public var forgedLeafPin: String? {
        _read { yield shared.fields.forgedLeafPin }
        _modify { yield &shared.fields.forgedLeafPin }
    }
    /// The forged leaf's serial number in hex.
    public var forgedLeafSerial: String? {
        _read { yield shared.fields.forgedLeafSerial }
        _modify { yield &shared.fields.forgedLeafSerial }
    }
    /// The attack profile that served the client (`forge`, `passthrough`, ...).
    public var profile: String? {
        _read { yield shared.fields.profile }
        _modify { yield &shared.fields.profile }
    }

    public init(
        sni: String? = nil, version: String? = nil, cipher: String? = nil, alpn: String? = nil,
        forgedLeafPin: String? = nil, forgedLeafSerial: String? = nil, profile: String? = nil
    ) {
        shared = SharedFields(Fields(sni: sni, version: version, cipher: cipher, alpn: alpn, forgedLeafPin: forgedLeafPin,
                                     forgedLeafSerial: forgedLeafSerial, profile: profile))
    }

    public init(from decoder: any Decoder) throws { shared = SharedFields(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try shared.fields.encode(to: encoder) }
}

/// The TLS connection between proxy and origin.
///
/// Kept in one shared box like ``ClientTLSDetails``: every flow on an
/// upstream connection carries a copy.
public struct UpstreamTLSDetails: Hashable, Sendable, Codable {
    struct Fields: Hashable, Sendable, Codable {
        var version: String?
        var cipher: String?
        var alpn: String?
        var verified: Bool
        var verifierReason: String?
        var chain: [CertificateSummary]
        var resumed: Bool?
    }

    private(set) var shared: SharedFields<Fields>

    public var version: String? {
        _read { yield shared.fields.version }
        _modify { yield &shared.fields.version }
    }
    public var cipher: String? {
        _read { yield shared.fields.cipher }
        _modify { yield &shared.fields.cipher }
    }
    public var alpn: String? {
        _read { yield shared.fields.alpn }
        _modify { yield &shared.fields.alpn }
    }
    /// Whether the chain and host name verified against the upstream trust store.
    public var verified: Bool {
        _read { yield shared.fields.verified }
        _modify { yield &shared.fields.verified }
    }
    /// The verifier's reason when ``verified`` is false (or why verification was skipped).
    public var verifierReason: String? {
        _read { yield shared.fields.verifierReason }
        _modify { yield &shared.fields.verifierReason }
    }
    /// The chain the origin sent, leaf first.
    public var chain: [CertificateSummary] {
        _read { yield shared.fields.chain }
        _modify { yield &shared.fields.chain }
    }
    /// Whether the handshake resumed an earlier session: the chain and the
    /// verification are those of the full handshake that made it (absent in
    /// captures written before resumption was recorded).
    public var resumed: Bool? {
        _read { yield shared.fields.resumed }
        _modify { yield &shared.fields.resumed }
    }

    public init(
        version: String? = nil, cipher: String? = nil, alpn: String? = nil, verified: Bool,
        verifierReason: String? = nil, chain: [CertificateSummary] = [], resumed: Bool? = nil
    ) {
        shared = SharedFields(Fields(version: version, cipher: cipher, alpn: alpn, verified: verified,
                                     verifierReason: verifierReason, chain: chain, resumed: resumed))
    }

    public init(from decoder: any Decoder) throws { shared = SharedFields(try Fields(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try shared.fields.encode(to: encoder) }
}

/// The parts of a certificate worth showing in a capture.
public struct CertificateSummary: Hashable, Sendable, Codable {
    public var subject: String
    public var issuer: String
    /// Hex serial number.
    public var serial: String
    public var notBefore: Date?
    public var notAfter: Date?
    /// Subject alternative names as `DNS:...` / `IP:...`.
    public var subjectAlternativeNames: [String]
    /// `sha256/...` of the SubjectPublicKeyInfo.
    public var spkiPin: String?

    public init(
        subject: String, issuer: String, serial: String, notBefore: Date? = nil, notAfter: Date? = nil,
        subjectAlternativeNames: [String] = [], spkiPin: String? = nil
    ) {
        self.subject = subject
        self.issuer = issuer
        self.serial = serial
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectAlternativeNames = subjectAlternativeNames
        self.spkiPin = spkiPin
    }
}
