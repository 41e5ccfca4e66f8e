import PinproxyCertificates
import PinproxyProxy

// Host-name validation and Punycode, fed names as they reach the proxy:
// as UTF-8 text (CONNECT lines, URLs, policy files), as Latin-1 bytes (a
// TLS server name), and as the Punycode of an `xn--` label.

extension FuzzTarget {
    public static let hostName = FuzzTarget(
        "hostname",
        "arbitrary text into HostName(validating:) (UTF-8, Latin-1 and as an xn-- label) and HostPattern(parsing:)"
    ) { input throws(FuzzFailure) in
        let candidates = [input.text, input.latin1, "xn--" + input.text, "xn--" + input.text + ".example"]
        for text in candidates {
            try HostNameFuzz.check(text)
        }
    }
}

enum HostNameFuzz {
    /// What holds of every name that validates.
    static func check(_ text: String) throws(FuzzFailure) {
        guard let host = try? HostName(validating: text) else { return }
        // The canonical forms are themselves valid and name the same host.
        for form in [host.description, host.uriHost] {
            guard let again = try? HostName(validating: form) else {
                throw fail("\(quoted(text)) validates, but its canonical form \(quoted(form)) does not")
            }
            try require(again == host, "\(quoted(text)) validates as \(host), its form \(quoted(form)) as \(again)")
        }
        switch host {
        case .dns(let name):
            try require(name.utf8.count <= HostName.maximumLength, "\(quoted(name)) is longer than \(HostName.maximumLength)")
            try require(name.utf8.allSatisfy { byte in
                (0x61...0x7a).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2d || byte == 0x5f || byte == 0x2e || byte == 0x2a
            }, "\(quoted(name)) has characters other than a-z, 0-9, '-', '_', '.' and '*'")
            let labels = name.split(separator: ".", omittingEmptySubsequences: false)
            try require(labels.allSatisfy { !$0.isEmpty && $0.utf8.count <= HostName.maximumLabelLength },
                        "\(quoted(name)) has an empty label or one over \(HostName.maximumLabelLength) characters")
            try require(!name.dropFirst().contains("*") && (!name.hasPrefix("*") || name.hasPrefix("*.")),
                        "\(quoted(name)) has a wildcard other than its whole leftmost label")
            try require(!host.isWildcard || labels.count >= 3, "wildcard \(quoted(name)) has fewer than two labels after it")
        case .ipv4(let bytes):
            try require(bytes.count == 4, "an IPv4 address of \(bytes.count) bytes")
        case .ipv6(let bytes):
            try require(bytes.count == 16, "an IPv6 address of \(bytes.count) bytes")
        }
        // A pattern naming exactly the host matches it; wildcards are not host patterns.
        if !host.isWildcard {
            guard let pattern = try? HostPattern(parsing: host.description) else {
                throw fail("host \(host) is valid but not as a host pattern")
            }
            try require(pattern.matches(host), "pattern \(pattern) does not match its own host")
            if case .dns = host, let any = try? HostPattern(parsing: "**." + host.description) {
                try require(any.matches(host), "pattern \(any) does not match \(host)")
            }
        }
    }

    static func quoted(_ text: String) -> String { "\"\(text.unicodeScalars.map { $0.escaped(asASCII: true) }.joined())\"" }
}
