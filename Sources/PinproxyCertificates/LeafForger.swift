internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// What a client asked for: the names a forged leaf must carry, and
/// optionally the genuine upstream certificate whose names it imitates.
public struct LeafRequest: Sendable {
    /// Names in order of importance; the first becomes the CN when short enough.
    public var names: [HostName]
    /// The genuine server certificate: its DNS/IP SANs and subject O are copied
    /// (the upstream-certificate sniffing mitmproxy does), O and CN in the
    /// genuine subject's order.
    public var imitating: Certificate?

    public init(names: [HostName], imitating: Certificate? = nil) {
        self.names = names
        self.imitating = imitating
    }

    public init(_ name: HostName) { self.init(names: [name]) }

    /// The identity a cache keys this request by.
    public var cacheKey: LeafCacheKey {
        LeafCacheKey(names: names, imitated: imitating?.sha256Fingerprint)
    }
}

/// A forged leaf with the chain to present and the key for the TLS server.
public struct ForgedLeaf: Sendable {
    public let certificate: Certificate
    public let privateKey: PrivateKey
    /// Leaf first, then the certificates presented after it (the CA's, for a classic leaf).
    public let chain: [Certificate]

    public init(certificate: Certificate, privateKey: PrivateKey, chain: [Certificate]) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }

    public var notAfter: Date { certificate.notAfter }
}

/// Forges TLS server leaves signed by a ``CertificateAuthority``.
///
/// Each leaf has the requested names as DNS/IP SANs, a CN only when the
/// primary name fits in 64 characters, EKU serverAuth, keyUsage
/// digitalSignature (+keyEncipherment for RSA keys), SKI and an AKI equal to
/// the CA's SKI, a random positive serial, and a validity backdated one day
/// and at most 47 days long, never past the CA's own notAfter.
///
/// The fast path: one P-256 leaf key is reused by default (as mockttp does),
/// backed by a legacy `EC_KEY` because OpenSSL 3 otherwise re-encodes a
/// provider key on every `X509_set_pubkey`; the constant extensions are
/// built once and copied into each leaf. Assembling the DER by hand and
/// parsing it back was tried and is slower: `d2i_X509` in OpenSSL 3.0 runs
/// the provider decoder for the public key (~180 µs a certificate).
public final class LeafForger: Sendable {
    /// How leaf keys are chosen.
    public enum KeyStrategy: String, Sendable, CaseIterable {
        /// One key for every leaf (fast; clients cannot tell).
        case reused
        /// A new P-256 key per leaf.
        case freshPerLeaf = "fresh"
    }

    /// Longest leaf lifetime: the CA/Browser Forum limit due by 2029.
    public static let maximumValidity: TimeInterval = 47 * 86_400

    public let authority: CertificateAuthority
    public let keyStrategy: KeyStrategy
    public let validity: TimeInterval
    private let signingKey: PrivateKey
    private let sharedKey: PrivateKey
    private let template: ExtensionTemplate
    private let caHasNameConstraints: Bool
    private let clock: @Sendable () -> Date
    private let serials = SerialPool()

    public init(
        authority: CertificateAuthority,
        keyStrategy: KeyStrategy = .reused,
        validity: TimeInterval = LeafForger.maximumValidity,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        guard validity > 0, validity <= LeafForger.maximumValidity else {
            throw PinproxyError(.invalidArgument, "leaf validity must be between 1 second and 47 days")
        }
        self.authority = authority
        self.keyStrategy = keyStrategy
        self.validity = validity
        self.clock = clock
        self.signingKey = authority.privateKey.fastSigningCopy()
        let sharedKey = try PrivateKey.generateFastP256()
        self.sharedKey = sharedKey
        self.template = try ExtensionTemplate(ca: authority.certificate, caKey: authority.privateKey, sharedKey: sharedKey)
        self.caHasNameConstraints = authority.nameConstraints != nil
    }

    /// Forges a leaf for `request`.
    public func forge(_ request: LeafRequest) throws -> ForgedLeaf {
        try forge(request, variant: .standard)
    }

    /// Forges a leaf for `request` that departs from the classic one as
    /// `variant` says (issuer, validity); everything else is the same.
    public func forge(_ request: LeafRequest, variant: LeafVariant) throws -> ForgedLeaf {
        guard let primary = request.names.first else {
            throw PinproxyError(.invalidArgument, "a leaf needs at least one name")
        }
        // Name constraints bind what the forger's CA signs, nothing else.
        let constraints = variant.isIssuedByAuthority ? authority.nameConstraints : nil
        if let constraints, let refused = request.names.first(where: { !constraints.permits($0) }) {
            throw PinproxyError(.invalidHostName, "the CA's name constraints do not permit \(refused) (see 'pinproxy ca show')")
        }
        var names = request.names
        var organization: String? = nil
        if let genuine = request.imitating {
            organization = genuine.subjectOrganization
            for san in genuine.subjectAlternativeNames {
                let name: HostName?
                switch san {
                case .dns(let dns): name = try? HostName(validating: dns)
                case .ipAddress(let bytes):
                    name = bytes.count == 4 ? .ipv4(bytes) : bytes.count == 16 ? .ipv6(bytes) : nil
                }
                // A constrained CA imitates only the names it may sign for.
                if let name, !names.contains(name), constraints?.permits(name) ?? true { names.append(name) }
            }
        }
        let key = keyStrategy == .reused ? sharedKey : try PrivateKey.generateFastP256()

        ERR_clear_error()
        guard let x = X509_new() else { throw OpenSSL.error("X509_new failed") }
        let leaf = Certificate(underConstruction: x)
        try OpenSSL.check(X509_set_version(x, 2), "cannot set the version")
        let serial = try serials.next()
        try OpenSSL.check(pp_x509_set_serial(x, serial, Int32(serial.count)), "cannot set the serial number")
        let (notBefore, notAfter) = try window(variant.validity)
        try OpenSSL.check(
            pp_x509_set_validity(x, Int64(notBefore.timeIntervalSince1970), Int64(notAfter.timeIntervalSince1970)),
            "cannot set the validity")

        // IP literals go in SANs only: OpenSSL applies DNS name constraints to a CN
        // that looks like a host name, and no client needs an IP in the CN.
        let commonName = !primary.isIPAddress && primary.description.utf8.count <= 64 ? primary.description : nil
        var subject = DistinguishedName(commonName: commonName, organization: organization)
        // CAs differ in the order they write O and CN; an imitation keeps the genuine one.
        if let genuine = request.imitating { subject = subject.ordered(like: genuine.subjectAttributeTypes) }
        // Filled in place: X509_set_subject_name would encode and re-parse a copy.
        try subject.add(to: X509_get_subject_name(x))
        try OpenSSL.check(X509_set_pubkey(x, key.pointer), "cannot set the public key")

        let signer: PrivateKey
        switch variant.issuer {
        case .authority:
            try OpenSSL.check(X509_set_issuer_name(x, X509_get_subject_name(authority.certificate.pointer)), "cannot set the issuer")
            try template.apply(to: leaf, keyIsShared: keyStrategy == .reused, authorityKeyID: true)
            signer = signingKey
        case .selfSigned:
            // No AKI: RFC 5280 lets a self-signed certificate omit it.
            try OpenSSL.check(X509_set_issuer_name(x, X509_get_subject_name(x)), "cannot set the issuer")
            try template.apply(to: leaf, keyIsShared: keyStrategy == .reused, authorityKeyID: false)
            signer = key
        case .named(let parent, let key):
            try OpenSSL.check(X509_set_issuer_name(x, X509_get_subject_name(parent.pointer)), "cannot set the issuer")
            try template.apply(to: leaf, keyIsShared: keyStrategy == .reused, authorityKeyID: false)
            let id = parent.subjectKeyIdentifier ?? parent.keyIdentifierOfOwnKey()
            try leaf.addExtension(pp_x509_ext_authority_key_id(id, Int32(id.count)), "authorityKeyIdentifier")
            signer = key
        }
        try leaf.addSubjectAlternativeNames(names, critical: commonName == nil && organization == nil)
        try leaf.sign(with: signer, digest: template.sha256)

        if caHasNameConstraints && variant.isIssuedByAuthority {
            let rc = pp_x509_check_name_constraints(authority.certificate.pointer, leaf.pointer)
            if rc != X509_V_OK {
                throw PinproxyError(.invalidHostName,
                    "the CA's name constraints do not permit \(names.map(\.description).joined(separator: ", ")) (\(String(cString: X509_verify_cert_error_string(Int(rc)))))")
            }
        }
        switch variant.issuer {
        case .authority: return ForgedLeaf(certificate: leaf, privateKey: key, chain: [leaf, authority.certificate])
        case .selfSigned: return ForgedLeaf(certificate: leaf, privateKey: key, chain: [leaf])
        case .named(let parent, _): return ForgedLeaf(certificate: leaf, privateKey: key, chain: [leaf, parent])
        }
    }

    /// The validity window: `requested` as given, else backdated one day and at
    /// most ``validity`` long, never past the CA's own notAfter.
    private func window(_ requested: DateInterval?) throws -> (Date, Date) {
        if let requested {
            guard requested.duration >= 1 else { throw PinproxyError(.invalidArgument, "a leaf's validity must last at least one second") }
            return (requested.start, requested.end)
        }
        let notBefore = clock().addingTimeInterval(-86_400)
        let notAfter = min(notBefore.addingTimeInterval(validity), authority.certificate.notAfter)
        guard notAfter > notBefore.addingTimeInterval(86_400) else {
            let problem = authority.validityProblem() ?? "the CA expires too soon to sign a usable leaf"
            throw PinproxyError(.invalidArgument, "\(problem); create a new CA with 'pinproxy ca init --force' or import a valid one")
        }
        return (notBefore, notAfter)
    }

    /// Forges a leaf for one name given as text, validating it first.
    public func forge(hostNames: [String]) throws -> ForgedLeaf {
        try forge(LeafRequest(names: hostNames.map { try HostName(validating: $0) }))
    }

    /// Extensions that are the same for every leaf of one forger, built once.
    private final class ExtensionTemplate: @unchecked Sendable {
        // Sendable: the extensions are only read (X509_add_ext copies them).
        let basicConstraints: OpaquePointer
        let keyUsageEC: OpaquePointer
        let keyUsageRSA: OpaquePointer
        let extendedKeyUsage: OpaquePointer
        let authorityKeyID: OpaquePointer
        /// SHA-256 fetched once: OpenSSL 3 otherwise looks it up for every signature.
        let sha256: OpaquePointer
        /// The SKI of the shared leaf key, the same for every leaf that uses it.
        let sharedKeySubjectKeyID: OpaquePointer

        init(ca: Certificate, caKey: PrivateKey, sharedKey: PrivateKey) throws {
            func make(_ nid: Int32, _ value: String) throws -> OpaquePointer {
                guard let ext = pp_x509_ext_from_conf(nid, value, nil, nil) else { throw OpenSSL.error("cannot build \(value)") }
                return ext
            }
            basicConstraints = try make(NID_basic_constraints, "critical,CA:FALSE")
            keyUsageEC = try make(NID_key_usage, "critical,digitalSignature")
            keyUsageRSA = try make(NID_key_usage, "critical,digitalSignature,keyEncipherment")
            extendedKeyUsage = try make(NID_ext_key_usage, "serverAuth")
            let aki = ca.subjectKeyIdentifier ?? Certificate.keyIdentifier(ofKey: caKey)
            guard let akiExt = pp_x509_ext_authority_key_id(aki, Int32(aki.count)) else { throw OpenSSL.error("cannot build the AKI") }
            authorityKeyID = akiExt
            let ski = Certificate.keyIdentifier(ofKey: sharedKey)
            guard let skiExt = pp_x509_ext_subject_key_id(ski, Int32(ski.count)) else { throw OpenSSL.error("cannot build the SKI") }
            sharedKeySubjectKeyID = skiExt
            guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { throw OpenSSL.error("cannot fetch SHA-256") }
            sha256 = md
        }

        deinit {
            for ext in [basicConstraints, keyUsageEC, keyUsageRSA, extendedKeyUsage, authorityKeyID, sharedKeySubjectKeyID] {
                X509_EXTENSION_free(ext)
            }
            EVP_MD_free(sha256)
        }

        func apply(to leaf: Certificate, keyIsShared: Bool, authorityKeyID includeAKI: Bool) throws {
            let x = leaf.pointer
            let isRSA = EVP_PKEY_get_base_id(X509_get0_pubkey(x)) == EVP_PKEY_RSA
            for ext in [basicConstraints, isRSA ? keyUsageRSA : keyUsageEC, extendedKeyUsage] {
                try OpenSSL.check(X509_add_ext(x, ext, -1), "cannot add an extension")
            }
            if keyIsShared {
                try OpenSSL.check(X509_add_ext(x, sharedKeySubjectKeyID, -1), "cannot add the SKI")
            } else {
                let id = leaf.keyIdentifierOfOwnKey()
                try leaf.addExtension(pp_x509_ext_subject_key_id(id, Int32(id.count)), "subjectKeyIdentifier")
            }
            if includeAKI { try OpenSSL.check(X509_add_ext(x, authorityKeyID, -1), "cannot add the AKI") }
        }
    }
}

/// Random positive 16-byte serial numbers drawn from a pooled buffer: one
/// `RAND_bytes` call per 256 serials instead of one per leaf.
final class SerialPool: Sendable {
    private static let batch = 256
    private let pool = Locked<(bytes: [UInt8], offset: Int)>(([], 0))
    /// Where the random bytes come from (`RAND_bytes`; a test may give its own).
    private let source: @Sendable (Int) throws -> [UInt8]

    init(source: @escaping @Sendable (Int) throws -> [UInt8] = { try OpenSSL.randomBytes($0) }) {
        self.source = source
    }

    func next() throws -> [UInt8] {
        let random = try pool.withLock { state -> ArraySlice<UInt8> in
            if state.offset + 16 > state.bytes.count {
                state.bytes = try source(16 * SerialPool.batch)
                state.offset = 0
            }
            defer { state.offset += 16 }
            return state.bytes[state.offset..<(state.offset + 16)]
        }
        return Certificate.serialNumber(fromRandom: random)
    }
}
