internal import COpenSSL
import Foundation
import PinproxyCertificates

/// Name constraints applied to every name a wildcard subjectAltName can match.
///
/// OpenSSL 3.0 compares a wildcard SAN with a CA's DNS subtrees as a literal string
/// (`nc_dns` in crypto/x509/v3_ncons.c): `*.example.com` is not "within" an excluded
/// `bar.example.com`, so a leaf under a CA that excludes `bar.example.com` still validates
/// for `bar.example.com` through its wildcard (the CVE-2025-61727 class), and real curl accepts
/// it. Go, BoringSSL, rustls and the JDK refuse it (real OkHttp on JDK 17: "name constraints
/// check failed"). For Apple, Android and the JDK pinproxy checks after OpenSSL, on the chain
/// it built (the curl profile keeps OpenSSL's literal comparison): a wildcard
/// `*.rest` stands for every name `label.rest`, and
/// - violates an excluded subtree when any of those names falls inside it;
/// - satisfies the permitted subtrees only when all of them fall inside one.
///
/// The certificate is judged, not the connection: like Go, a wildcard leaf that overlaps
/// an excluded subtree is refused whatever host it is presented for.
enum WildcardConstraints {
    /// The violations of the leaf's wildcard DNS names against the CAs of `chain`, the
    /// last one (the anchor) included unless `excludingLast`.
    static func failures(chain: [Certificate], excludingLast: Bool = false) -> [TrustFailure] {
        guard let leaf = chain.first, chain.count > 1 else { return [] }
        let wildcards = leaf.subjectAlternativeNames.compactMap { name -> String? in
            guard case .dns(let dns) = name, dns.hasPrefix("*.") else { return nil }
            return dns.lowercased()
        }
        guard !wildcards.isEmpty else { return [] }
        var failures: [TrustFailure] = []
        for (index, ca) in chain.enumerated().dropFirst() {
            if excludingLast && index == chain.count - 1 { break }
            guard let constraints = ca.nameConstraints else { continue }
            let excluded = constraints.excludedDNS.map { $0.lowercased() }
            let permitted = constraints.permittedDNS.map { $0.lowercased() }
            for wildcard in wildcards {
                let base = String(wildcard.dropFirst(2))
                if let subtree = excluded.first(where: { overlaps(wildcardBase: base, subtree: $0) }) {
                    failures.append(failure(X509_V_ERR_EXCLUDED_VIOLATION, chain: chain,
                                            "has the wildcard subjectAltName \(wildcard), which matches names inside the subtree \(quote(subtree)) that \(AlgorithmFloor.which(chain, index)) excludes"))
                } else if !permitted.isEmpty, !permitted.contains(where: { contains(subtree: $0, wildcardBase: base) }) {
                    failures.append(failure(X509_V_ERR_PERMITTED_VIOLATION, chain: chain,
                                            "has the wildcard subjectAltName \(wildcard), which matches names outside every subtree \(AlgorithmFloor.which(chain, index)) permits (\(permitted.map(quote).joined(separator: ", ")))"))
                }
            }
        }
        return failures
    }

    /// Whether some name `label.base` lies inside the DNS subtree `subtree` (RFC 5280:
    /// `example.com` covers itself and every name below it, `.example.com` only the names
    /// below it, the empty subtree every name).
    static func overlaps(wildcardBase base: String, subtree: String) -> Bool {
        if subtree.isEmpty { return true }
        if subtree.hasPrefix(".") {
            return base == subtree.dropFirst() || base.hasSuffix(subtree)
        }
        // label.base equals the subtree when base is the subtree's parent.
        let parent = subtree.split(separator: ".", maxSplits: 1).dropFirst().first.map(String.init)
        return base == parent || base == subtree || base.hasSuffix("." + subtree)
    }

    /// Whether every name `label.base` lies inside the DNS subtree `subtree`.
    static func contains(subtree: String, wildcardBase base: String) -> Bool {
        if subtree.isEmpty { return true }
        let suffix = subtree.hasPrefix(".") ? String(subtree.dropFirst()) : subtree
        return base == suffix || base.hasSuffix("." + suffix)
    }

    private static func failure(_ code: Int32, chain: [Certificate], _ what: String) -> TrustFailure {
        TrustFailure(kind: .nameConstraints, code: Int(code), depth: 0,
                     detail: "name constraints violated: \(AlgorithmFloor.which(chain, 0)) \(what) (every name a wildcard can match is checked, as Go, BoringSSL and rustls do)")
    }

    private static func quote(_ subtree: String) -> String { subtree.isEmpty ? "(every name)" : subtree }
}
