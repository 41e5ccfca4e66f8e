import Foundation

/// Everything that goes into a certificate except keys and signer.
///
/// Used for the CA, for test fixtures and for attack chains (expired,
/// self-signed, fake parents); the hot path of leaf forging has its own
/// prebuilt template in ``LeafForger``.
public struct CertificateSpec: Sendable {
    public var subject: DistinguishedName
    /// Big-endian serial; nil draws 16 random bytes and keeps the value positive.
    public var serialNumber: [UInt8]?
    public var notBefore: Date
    public var notAfter: Date
    public var subjectAlternativeNames: [HostName]
    public var isCA: Bool
    public var pathLength: Int?
    public var keyUsage: KeyUsage
    public var extendedKeyUsage: [ExtendedKeyUsage]
    public var nameConstraints: NameConstraints?
    /// Subject and authority key identifiers (strict X.509 wants them).
    public var includeKeyIdentifiers: Bool

    public init(
        subject: DistinguishedName,
        serialNumber: [UInt8]? = nil,
        notBefore: Date,
        notAfter: Date,
        subjectAlternativeNames: [HostName] = [],
        isCA: Bool = false,
        pathLength: Int? = nil,
        keyUsage: KeyUsage = [],
        extendedKeyUsage: [ExtendedKeyUsage] = [],
        nameConstraints: NameConstraints? = nil,
        includeKeyIdentifiers: Bool = true
    ) {
        self.subject = subject
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.subjectAlternativeNames = subjectAlternativeNames
        self.isCA = isCA
        self.pathLength = pathLength
        self.keyUsage = keyUsage
        self.extendedKeyUsage = extendedKeyUsage
        self.nameConstraints = nameConstraints
        self.includeKeyIdentifiers = includeKeyIdentifiers
    }

    /// A CA certificate spec: basicConstraints CA critical, keyCertSign + cRLSign.
    public static func certificateAuthority(
        subject: DistinguishedName, notBefore: Date, notAfter: Date,
        pathLength: Int? = nil, nameConstraints: NameConstraints? = nil
    ) -> CertificateSpec {
        CertificateSpec(
            subject: subject, notBefore: notBefore, notAfter: notAfter, isCA: true,
            pathLength: pathLength, keyUsage: [.keyCertSign, .cRLSign], nameConstraints: nameConstraints)
    }

    /// A TLS server leaf spec: serverAuth, digitalSignature (+keyEncipherment for RSA keys).
    public static func serverLeaf(
        names: [HostName], notBefore: Date, notAfter: Date, organization: String? = nil
    ) -> CertificateSpec {
        let primary = names.first.flatMap { $0.isIPAddress ? nil : $0.description }
        let commonName = primary.flatMap { $0.utf8.count <= 64 ? $0 : nil }
        return CertificateSpec(
            subject: DistinguishedName(commonName: commonName, organization: organization),
            notBefore: notBefore, notAfter: notAfter, subjectAlternativeNames: names,
            keyUsage: [.digitalSignature, .keyEncipherment], extendedKeyUsage: [.serverAuth])
    }
}

/// keyUsage bits pinproxy sets.
public struct KeyUsage: OptionSet, Hashable, Sendable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
    public static let keyEncipherment = KeyUsage(rawValue: 1 << 1)
    public static let keyCertSign = KeyUsage(rawValue: 1 << 2)
    public static let cRLSign = KeyUsage(rawValue: 1 << 3)

    /// The OpenSSL configuration words, in a fixed order.
    var configurationWords: [String] {
        var words: [String] = []
        if contains(.digitalSignature) { words.append("digitalSignature") }
        if contains(.keyEncipherment) { words.append("keyEncipherment") }
        if contains(.keyCertSign) { words.append("keyCertSign") }
        if contains(.cRLSign) { words.append("cRLSign") }
        return words
    }
}

/// extendedKeyUsage purposes pinproxy sets.
public enum ExtendedKeyUsage: String, Hashable, Sendable {
    case serverAuth
    case clientAuth
}

/// An IP network in CIDR form, for name constraints.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public let address: [UInt8]
    public let prefixLength: Int

    /// Parses `10.0.0.0/8`, `127.0.0.1` (a /32), `fd00::/8`.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw PinproxyError(.invalidArgument, "'\(text)' is not an address or CIDR network") }
        let host = String(parts[0])
        let bytes: [UInt8]
        if let v4 = HostName.parseIPv4(host) { bytes = v4 }
        else if let v6 = HostName.parseIPv6(host), host.contains(":") { bytes = v6 }
        else { throw PinproxyError(.invalidArgument, "'\(text)': '\(host)' is not an IP address") }
        let maximum = bytes.count * 8
        var prefix = maximum
        if parts.count == 2 {
            guard let p = Int(parts[1]), (0...maximum).contains(p) else {
                throw PinproxyError(.invalidArgument, "'\(text)': prefix length must be 0–\(maximum)")
            }
            prefix = p
        }
        self.address = IPNetwork.masked(bytes, prefix)
        self.prefixLength = prefix
    }

    public var mask: [UInt8] {
        (0..<address.count).map { i in
            let bits = max(0, min(8, prefixLength - i * 8))
            return bits == 0 ? 0 : UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
    }

    public func contains(_ bytes: [UInt8]) -> Bool {
        bytes.count == address.count && IPNetwork.masked(bytes, prefixLength) == address
    }

    public var description: String { "\(HostName.format(address: address))/\(prefixLength)" }

    public static let allIPv4 = IPNetwork(address: [0, 0, 0, 0], prefixLength: 0)
    public static let allIPv6 = IPNetwork(address: [UInt8](repeating: 0, count: 16), prefixLength: 0)

    init(address: [UInt8], prefixLength: Int) {
        self.address = IPNetwork.masked(address, prefixLength)
        self.prefixLength = prefixLength
    }

    /// From a name constraint's address-then-mask bytes (8 or 32).
    init?(addressAndMask bytes: [UInt8]) {
        guard bytes.count == 8 || bytes.count == 32 else { return nil }
        let half = bytes.count / 2
        let prefix = bytes[half...].reduce(0) { $0 + $1.nonzeroBitCount }
        self.init(address: Array(bytes[..<half]), prefixLength: prefix)
    }

    private static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { i, b in
            let bits = max(0, min(8, prefix - i * 8))
            return bits == 0 ? 0 : b & UInt8(truncatingIfNeeded: 0xff << (8 - bits))
        }
    }
}

/// X.509 name constraints for a CA (RFC 5280 §4.2.1.10).
///
/// Built from `--permit-dns` / `--permit-ip`, a constrained CA signs for
/// nothing but what it was told, whatever the type of name: when only DNS
/// names are permitted every IP address is excluded, and when only IP
/// networks are permitted DNS names are confined to the reserved `invalid`
/// domain. Read back from a certificate, the constraints are what it says.
public struct NameConstraints: Hashable, Sendable {
    public var permittedDNS: [String]
    public var permittedIP: [IPNetwork]
    public var excludedDNS: [String]
    public var excludedIP: [IPNetwork]

    /// Constraints for a new CA, with the implicit exclusions described above.
    public init(permittedDNS: [String] = [], permittedIP: [IPNetwork] = []) throws {
        let dns = try permittedDNS.map { suffix in
            let trimmed = suffix.hasPrefix(".") ? String(suffix.dropFirst()) : suffix
            let name = try HostName(validating: trimmed)
            guard case .dns(let dns) = name, !name.isWildcard else {
                throw PinproxyError(.invalidArgument, "'\(suffix)' is not a DNS suffix (use --permit-ip for addresses)")
            }
            return dns
        }
        self.init(permittedDNS: dns, permittedIP: permittedIP, excludedDNS: [], excludedIP: [])
        if !isEmpty {
            if permittedIP.isEmpty { excludedIP = [IPNetwork.allIPv4, IPNetwork.allIPv6] }
            if dns.isEmpty { self.permittedDNS = ["invalid"] }
        }
    }

    init(permittedDNS: [String], permittedIP: [IPNetwork], excludedDNS: [String], excludedIP: [IPNetwork]) {
        self.permittedDNS = permittedDNS
        self.permittedIP = permittedIP
        self.excludedDNS = excludedDNS
        self.excludedIP = excludedIP
    }

    public var isEmpty: Bool {
        permittedDNS.isEmpty && permittedIP.isEmpty && excludedDNS.isEmpty && excludedIP.isEmpty
    }

    /// Whether a leaf for `name` satisfies these constraints: inside some permitted
    /// subtree of its type (when there are any) and outside every excluded one.
    public func permits(_ name: HostName) -> Bool {
        switch name {
        case .dns(let dns):
            if !permittedDNS.isEmpty && !permittedDNS.contains(where: { NameConstraints.dns(dns, within: $0) }) { return false }
            return !excludedDNS.contains { NameConstraints.dns(dns, within: $0) }
        case .ipv4(let b), .ipv6(let b):
            let sameFamily = { (n: IPNetwork) in n.address.count == b.count }
            let permitted = permittedIP.filter(sameFamily)
            if !permittedIP.isEmpty && !permitted.contains(where: { $0.contains(b) }) { return false }
            return !excludedIP.filter(sameFamily).contains { $0.contains(b) }
        }
    }

    /// RFC 5280 dNSName matching: `example.test` covers itself and every name under it,
    /// `.example.test` only the names under it, the empty constraint everything.
    static func dns(_ name: String, within constraint: String) -> Bool {
        let c = constraint.lowercased()
        if c.isEmpty { return true }
        if c.hasPrefix(".") { return name.hasSuffix(c) }
        return name == c || name.hasSuffix("." + c)
    }
}
