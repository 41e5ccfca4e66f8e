import Foundation
import PinproxyCertificates

/// OkHttp's `OkHostnameVerifier` (okhttp3.internal.tls, 3.13; Android's bundled
/// com.android.okhttp carries the same name rules): the host against the leaf's
/// subjectAltName entries only, never the subject CN.
///
/// - A DNS host is matched against the DNS entries by `verifyHostname`: both are made absolute
///   (a trailing dot added when missing), so `api.example.com.` in a certificate matches
///   `api.example.com`; a name starting with a dot or ending with two is refused; a wildcard must
///   be the whole leftmost label (`*.rest`, no other `*`) and stands for one label; there is no
///   rule against a wildcard over a single label, so `*.test` matches `example.test`.
/// - An IP host is matched against the IP entries by `verifyIpAddress`, as text: the host as
///   `HttpUrl` writes it against each entry as the JDK's `X509Certificate` lists it
///   (`IPAddressName`: an IPv6 address as eight hex groups, never shortened). An IPv6 entry
///   whose address has a run of zero groups, which `HttpUrl` shortens (`::1`), never matches:
///   real OkHttp 3.13.1 on JDK 17 answers "Hostname ::1 not verified". Android lists IP entries
///   through Conscrypt, whose text is not read here: on Android the addresses are compared.
enum OkHostnameVerifier {
    /// Whether OkHttp accepts `leaf` for `host` on `platform`.
    static func verify(_ host: HostName, leaf: Certificate, platform: TrustPlatform) -> Bool {
        let names = leaf.subjectAlternativeNames
        switch host {
        case .dns(let name):
            let hostname = name.lowercased()
            return names.contains { entry in
                guard case .dns(let pattern) = entry else { return false }
                return verifyHostname(hostname, pattern: pattern)
            }
        case .ipv4(let bytes), .ipv6(let bytes):
            return names.contains { entry in
                guard case .ipAddress(let address) = entry else { return false }
                guard platform == .jvm else { return address == bytes }
                return hostText(bytes).lowercased() == javaText(address).lowercased()
            }
        }
    }

    /// `verifyHostname(hostname, pattern)`, `hostname` already lowercased.
    static func verifyHostname(_ host: String, pattern rawPattern: String) -> Bool {
        guard !host.isEmpty, !host.hasPrefix("."), !host.hasSuffix("..") else { return false }
        guard !rawPattern.isEmpty, !rawPattern.hasPrefix("."), !rawPattern.hasSuffix("..") else { return false }
        let hostname = host.hasSuffix(".") ? host : host + "."
        var pattern = rawPattern.hasSuffix(".") ? rawPattern : rawPattern + "."
        // Locale.US lowercasing: ASCII letters only matter for a name that can match.
        pattern = pattern.lowercased()
        guard pattern.contains("*") else { return hostname == pattern }
        guard pattern.hasPrefix("*."), !pattern.dropFirst().contains("*") else { return false }
        guard hostname.count >= pattern.count, pattern != "*." else { return false }
        let suffix = pattern.dropFirst()
        guard hostname.hasSuffix(suffix) else { return false }
        // The asterisk must not match across labels.
        let label = hostname.dropLast(suffix.count)
        return !label.isEmpty && !label.contains(".")
    }

    /// The host as OkHttp's `HttpUrl` canonicalises it: dotted IPv4; IPv6 in lower-case hex
    /// groups, the first longest run of at least two zero groups written `::`.
    static func hostText(_ bytes: [UInt8]) -> String {
        guard bytes.count == 16 else { return bytes.map(String.init).joined(separator: ".") }
        let groups = stride(from: 0, to: 16, by: 2).map { Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]) }
        var runStart = -1, runLength = 0, index = 0
        while index < 8 {
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index > runLength && end - index >= 2 { runStart = index; runLength = end - index }
            index = end == index ? index + 1 : end
        }
        var text = ""
        var position = 0
        while position < 8 {
            if position == runStart {
                text += "::"
                position += runLength
                continue
            }
            if !text.isEmpty && !text.hasSuffix(":") { text += ":" }
            text += String(groups[position], radix: 16)
            position += 1
        }
        return text
    }

    /// An IP entry as the JDK lists it (`IPAddressName.toString()`): dotted IPv4, or all eight
    /// IPv6 groups in hex without leading zeros.
    static func javaText(_ bytes: [UInt8]) -> String {
        guard bytes.count == 16 else { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
    }
}
