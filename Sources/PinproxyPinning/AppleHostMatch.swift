import Foundation
import PinproxyCertificates

/// Apple's host check for the SSL policy (`SecPolicyCheckCertSSLHostname` and `SecDNSMatch`,
/// SecPolicyServer.c, the RFC 6125 version of iOS 13 and later): the subjectAltName entries only.
///
/// - Every DNS entry is compared label by label with the host (its own trailing dot dropped, the
///   entry's kept, so an entry `api.example.com.` never matches): the same number of labels; a
///   `*` only as the whole leftmost label, never over a single-label name (`*.test`) nor over a
///   public suffix (`*.co.uk`: CFNetwork's `_CFHostIsDomainTopLevelForCertificatePolicy`, taken
///   here as the public suffix list); no partial-label wildcard; other labels equal ignoring case.
/// - The host is tried against the DNS entries even when it is an IP literal (an entry
///   `DNS:127.0.0.1` serves `127.0.0.1`), then against the IP entries by their bytes.
enum AppleHostMatch {
    static func verify(_ host: HostName, leaf: Certificate) -> Bool {
        let names = leaf.subjectAlternativeNames
        let reference = host.description
        if names.contains(where: { entry in
            guard case .dns(let presented) = entry else { return false }
            return secDNSMatch(reference: reference, presented: presented)
        }) { return true }
        guard let bytes = host.addressBytes else { return false }
        return names.contains(.ipAddress(bytes))
    }

    /// `SecDNSMatch(reference, presented)`.
    static func secDNSMatch(reference rawReference: String, presented: String) -> Bool {
        guard !rawReference.isEmpty else { return false }
        let reference = rawReference.hasSuffix(".") ? String(rawReference.dropLast()) : rawReference
        let referenceLabels = reference.split(separator: ".", omittingEmptySubsequences: false)
        let presentedLabels = presented.split(separator: ".", omittingEmptySubsequences: false)
        guard referenceLabels.count == presentedLabels.count else { return false }
        let count = presentedLabels.count
        for index in stride(from: count - 1, through: 0, by: -1) {
            let label = presentedLabels[index]
            if label == "*" {
                guard index == 0, count > 2, index != count - 2 else { return false }
                guard !isTopLevel(presented) else { return false }
            } else {
                guard !label.contains("*") else { return false }
                guard label.lowercased() == referenceLabels[index].lowercased() else { return false }
            }
        }
        return true
    }

    /// `SecDNSIsTLD`: whether what follows `*.` is a top-level domain (too short counts as one).
    static func isTopLevel(_ presented: String) -> Bool {
        guard presented.count > 2 else { return true }
        return PublicSuffixList.shared.isPublicSuffix(String(presented.dropFirst(2)).lowercased())
    }
}
