internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// curl's fallback to the subject CN (lib/vtls/openssl.c, `Curl_ossl_verifyhost`).
///
/// When the server certificate has no DNS and no IP subjectAltName at all, curl compares the
/// last commonName of the subject with the host, by `Curl_cert_hostcheck`
/// (lib/vtls/hostcheck.c, `hostmatch`): trailing dots are ignored; a pattern that does not
/// start with `*.` must equal the host (case-insensitively), so `f*.example.com` matches only
/// itself; a `*.` pattern needs two more dots, never matches an IP address and stands for
/// exactly one label. A certificate with any DNS or IP SAN is matched on its SANs alone, each
/// DNS entry by the same `hostmatch` (``CurlHost``).
enum CurlHostCheck {
    /// Whether curl would look at the CN of `leaf`: it has neither a DNS nor an IP SAN.
    static func fallsBackToCommonName(_ leaf: Certificate) -> Bool {
        leaf.subjectAlternativeNames.isEmpty
    }

    /// The last commonName of the subject, as curl picks it.
    static func lastCommonName(of certificate: Certificate) -> String? {
        guard let name = X509_get_subject_name(certificate.pointer) else { return nil }
        var index: Int32 = -1
        var last: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, NID_commonName, index)
            if index < 0 { break }
            last = index
        }
        guard last >= 0, let entry = X509_NAME_get_entry(name, last), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { pp_OPENSSL_free(utf8) }
        let bytes = Array(UnsafeBufferPointer(start: utf8, count: Int(length)))
        // An embedded NUL can never match (curl: "illegal cert name field").
        guard !bytes.contains(0) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `hostmatch(hostname, pattern)`.
    static func matches(pattern: String, host: HostName) -> Bool {
        var pattern = pattern.lowercased()
        var hostname = host.description.lowercased()
        if pattern.hasSuffix(".") { pattern.removeLast() }
        if hostname.hasSuffix(".") { hostname.removeLast() }
        guard !pattern.isEmpty, !hostname.isEmpty else { return false }
        guard pattern.hasPrefix("*.") else { return pattern == hostname }
        if host.isIPAddress { return false }
        // At least two dots in the pattern, else it is compared as it stands.
        guard pattern.filter({ $0 == "." }).count >= 2 else { return pattern == hostname }
        guard let dot = hostname.firstIndex(of: ".") else { return false }
        return hostname[dot...] == pattern.dropFirst()
    }
}
