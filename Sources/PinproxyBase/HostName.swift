import Foundation

/// A name a certificate may be issued for: a DNS name or an IP literal.
///
/// Server names reach the proxy from the network (SNI, CONNECT lines), so they
/// are validated before anything else sees them. A DNS name must be ASCII
/// letters, digits, hyphens and underscores in labels of 1–63 characters, 253
/// characters in all; a wildcard is allowed only as the whole leftmost label;
/// labels with hyphens in the third and fourth position must be IDNA A-labels
/// (`xn--`) that decode as Punycode. Commas, spaces, NUL, `DNS:` fragments and
/// empty labels are refused. IP literals are canonical IPv4 dotted quads or
/// IPv6 (brackets allowed, zone identifiers refused).
///
/// Underscores are not LDH, but they name real hosts (Docker Compose and
/// Kubernetes service names, `_service` labels), and the clients the proxy
/// serves connect to them: curl, Python, OkHttp (`HttpUrl` and its pins),
/// Android's network security config. A certificate names them as a dNSName;
/// curl's and OkHttp's host checks match them exactly and under a wildcard,
/// OpenSSL's `X509_check_host` (Python) only exactly.
public enum HostName: Hashable, Sendable, CustomStringConvertible {
    /// A lower-cased DNS name without a trailing dot.
    case dns(String)
    /// Four address bytes.
    case ipv4([UInt8])
    /// Sixteen address bytes.
    case ipv6([UInt8])

    public static let maximumLength = 253
    public static let maximumLabelLength = 63

    /// Validates `text` as a DNS name or IP literal.
    public init(validating text: String) throws {
        func refuse(_ why: String) -> PinproxyError {
            PinproxyError(.invalidHostName, "invalid host name \(HostName.quoted(text)): \(why)")
        }
        if text.isEmpty { throw refuse("it is empty") }
        if text.utf8.count > 1024 { throw refuse("it is longer than any host name can be") }
        var candidate = text
        if candidate.hasPrefix("[") {
            guard candidate.hasSuffix("]"), candidate.count > 2 else { throw refuse("unbalanced brackets") }
            candidate = String(candidate.dropFirst().dropLast())
            guard let bytes = HostName.parseIPv6(candidate) else { throw refuse("not an IPv6 address") }
            self = .ipv6(bytes)
            return
        }
        if let bytes = HostName.parseIPv4(candidate) { self = .ipv4(bytes); return }
        if candidate.contains(":") {
            if candidate.contains("%") { throw refuse("IPv6 zone identifiers are not allowed") }
            if let bytes = HostName.parseIPv6(candidate) {
                self = .ipv6(bytes)
                return
            }
            // Not an address: report the first offending character as a DNS name would.
        }
        self = .dns(try HostName.validateDNS(candidate, refuse: refuse))
    }

    /// The canonical text: lower-case DNS name, dotted quad, or RFC 5952 IPv6.
    public var description: String {
        switch self {
        case .dns(let name): return name
        case .ipv4(let b), .ipv6(let b): return HostName.format(address: b)
        }
    }

    /// The address bytes of an IP literal, nil for DNS names.
    public var addressBytes: [UInt8]? {
        switch self {
        case .dns: return nil
        case .ipv4(let b), .ipv6(let b): return b
        }
    }

    public var isIPAddress: Bool { addressBytes != nil }

    /// Whether this is a wildcard DNS name such as `*.example.test`.
    public var isWildcard: Bool {
        if case .dns(let name) = self { return name.hasPrefix("*.") }
        return false
    }

    /// The form used in URLs and CONNECT lines (IPv6 in brackets).
    public var uriHost: String {
        if case .ipv6 = self { return "[\(description)]" }
        return description
    }

    // MARK: - DNS names

    private static func validateDNS(_ text: String, refuse: (String) -> PinproxyError) throws -> String {
        var name = text
        if name.hasSuffix(".") { name.removeLast() }
        guard name.unicodeScalars.allSatisfy({ $0.isASCII }) else {
            throw refuse("non-ASCII characters; use the IDNA A-label (xn--) form")
        }
        name = name.lowercased()
        if name.utf8.count > maximumLength {
            throw refuse("\(name.utf8.count) characters, the limit is \(maximumLength)")
        }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for (index, label) in labels.enumerated() {
            if label.isEmpty { throw refuse("empty label") }
            if label == "*" {
                guard index == 0 else { throw refuse("a wildcard may only be the whole leftmost label") }
                guard labels.count >= 3 else { throw refuse("a wildcard needs at least two labels after it") }
                continue
            }
            if label.utf8.count > maximumLabelLength {
                throw refuse("label of \(label.utf8.count) characters, the limit is \(maximumLabelLength)")
            }
            for byte in label.utf8 {
                let ok = (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x5f
                if !ok {
                    if byte == 0x2a { throw refuse("a wildcard may only be the whole leftmost label") }
                    if byte == 0x3a { throw refuse("character ':' is not allowed outside IPv6 literals, and this is not a valid IPv6 address") }
                    throw refuse("character \(HostName.describe(byte: byte)) is not allowed (letters, digits, '-' and '_' only)")
                }
            }
            if label.hasPrefix("-") || label.hasSuffix("-") {
                throw refuse("label '\(label)' starts or ends with '-'")
            }
            let bytes = Array(label.utf8)
            if bytes.count >= 4, bytes[2] == 0x2d, bytes[3] == 0x2d {
                guard label.hasPrefix("xn--") else {
                    throw refuse("label '\(label)' has '--' in positions 3–4 but is not an xn-- A-label")
                }
                guard Punycode.decode(String(label.dropFirst(4))) != nil else {
                    throw refuse("label '\(label)' is not valid Punycode")
                }
            }
        }
        if let last = labels.last, last.allSatisfy({ $0.isNumber }) {
            throw refuse("the last label is numeric, so it is neither a DNS name nor an IP address")
        }
        return name
    }

    private static func describe(byte: UInt8) -> String {
        switch byte {
        case 0: return "NUL"
        case 0x20: return "space"
        case 0x21...0x7e: return "'\(Character(UnicodeScalar(byte)))'"
        default: return String(format: "0x%02x", byte)
        }
    }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(80) {
            if scalar.value < 0x20 || scalar.value == 0x7f { out += String(format: "\\x%02x", scalar.value) }
            else if scalar == "\"" { out += "\\\"" }
            else { out.unicodeScalars.append(scalar) }
        }
        if text.unicodeScalars.count > 80 { out += "…" }
        return out + "\""
    }

    // MARK: - IP literals

    package static func parseIPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  !(part.count > 1 && part.hasPrefix("0")), let value = UInt8(part) else { return nil }
            out.append(value)
        }
        return out
    }

    package static func parseIPv6(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard text.count <= 45, inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// Formats 4 or 16 address bytes canonically.
    public static func format(address bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        guard bytes.count == 16 else { return bytes.hexString() }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return bytes.hexString() }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// RFC 3492 Punycode decoding, used only to check that A-labels are genuine.
enum Punycode {
    static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700

    /// RFC 3492 §6.1: the bias after each code point.
    static func adapt(_ delta: Int, _ numPoints: Int, _ first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / numPoints
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 { delta /= base - tMin; k += base }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    static func decode(_ input: String) -> String? {
        let base = Punycode.base, tMin = Punycode.tMin, tMax = Punycode.tMax
        var n = 128, i = 0, bias = 72
        var output: [UnicodeScalar] = []
        var scalars = Array(input.unicodeScalars)
        if let last = scalars.lastIndex(of: "-") {
            output = Array(scalars[..<last])
            guard output.allSatisfy({ $0.isASCII }) else { return nil }
            scalars = Array(scalars[(last + 1)...])
        }
        guard !scalars.isEmpty || !output.isEmpty else { return nil }
        var index = 0
        while index < scalars.count {
            let oldI = i
            var w = 1
            var k = base
            while true {
                guard index < scalars.count else { return nil }
                let c = scalars[index].value
                index += 1
                let digit: Int
                switch c {
                case 0x61...0x7a: digit = Int(c - 0x61)
                case 0x41...0x5a: digit = Int(c - 0x41)
                case 0x30...0x39: digit = Int(c - 0x30) + 26
                default: return nil
                }
                guard digit <= (Int.max - i) / w else { return nil }
                i += digit * w
                let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                if digit < t { break }
                guard w <= Int.max / (base - t) else { return nil }
                w *= base - t
                k += base
            }
            bias = adapt(i - oldI, output.count + 1, oldI == 0)
            n += i / (output.count + 1)
            i %= output.count + 1
            guard n <= 0x10FFFF, let scalar = UnicodeScalar(n), !scalar.isASCII else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        var s = String.UnicodeScalarView()
        s.append(contentsOf: output)
        return String(s)
    }
}
