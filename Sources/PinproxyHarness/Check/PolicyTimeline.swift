import Foundation
import PinproxyCertificates
import PinproxyPinning

/// When a policy's own dates change what it does, and the first date on which that moves a
/// row of its matrix: after TrustKit's `TSKExpirationDate` or an Android pin-set's
/// `expiration` the domain is no longer pinned, so what pinning refused (a misissuing CA; a
/// forged chain on a device that trusts the proxy CA) goes through from that day on.
public enum PolicyTimeline {
    /// A date in the policy after which its pins no longer apply.
    public struct Expiry: Sendable, Equatable {
        public var date: Date
        /// "TSKExpirationDate of api.example.com", "pin-set expiration of api.example.com".
        public var what: String
    }

    /// The policy's pin expiry dates, earliest first.
    public static func expiries(of policy: any PinningPolicy) -> [Expiry] {
        var found: [Expiry] = []
        if let trustKit = policy as? TrustKitPolicy {
            for entry in trustKit.domains {
                if let date = entry.expirationDate { found.append(Expiry(date: date, what: "TSKExpirationDate of \(entry.domain)")) }
            }
        }
        if let android = policy as? AndroidPolicy {
            func visit(_ config: NetworkSecurityConfig.DomainConfig) {
                if let date = config.pinSet?.expiration {
                    found.append(Expiry(date: date, what: "pin-set expiration of \(config.domains.map(\.name).joined(separator: ", "))"))
                }
                config.children.forEach(visit)
            }
            android.config.domainConfigs.forEach(visit)
        }
        return found.sorted { $0.date < $1.date }
    }

    /// The instant a recheck looks at for `expiry`: midday UTC of its day, when both TrustKit
    /// (after 00:00 UTC of the day) and Android (after the date) no longer pin.
    public static func recheckInstant(after expiry: Expiry) -> Date {
        expiry.date.addingTimeInterval(12 * 3_600)
    }

    /// One line: the pin expiry dates, whether they have passed at `instant`, and the first
    /// expiry after it on which a row changes, found by `recheck` (the same check run at
    /// ``recheckInstant(after:)``; nil when it cannot run, as through a daemon). `genuineLeaf`:
    /// the expiry of a user's own leaf, which no rotation renews here. Nil when the policy has
    /// no dates and the world's leaf is renewed as time goes by.
    public static func line(policy: any PinningPolicy, report: CheckReport, instant: Date, genuineLeaf: Certificate?,
                            recheck: ((Date) throws -> CheckReport)?) throws -> String? {
        let expiries = expiries(of: policy)
        var parts = expiries.map { "\($0.what): \(day($0.date))\($0.date < instant ? " (passed: not pinned at \(day(instant)))" : "")" }
        if let leaf = genuineLeaf {
            parts.append("the genuine leaf expires on \(day(leaf.notAfter))\(leaf.notAfter < instant ? " (passed: every client refuses it)" : ": from then every client refuses it (OUTAGE) until it is renewed")")
        }
        guard !parts.isEmpty else { return nil }
        if let recheck {
            var change = "no row changes at the pin expiry dates"
            for expiry in expiries where expiry.date >= instant {
                let later = try recheck(recheckInstant(after: expiry))
                let changed = changes(from: report, to: later)
                if !changed.isEmpty {
                    change = "first change on \(day(expiry.date)): " + changed.joined(separator: ", ")
                    if changed.contains(where: { $0.hasPrefix("misissued") && $0.hasSuffix("ACCEPT") }) {
                        change += " — from then a misissuing CA can read the traffic"
                    }
                    break
                }
            }
            if expiries.contains(where: { $0.date >= instant }) { parts.append(change) }
        }
        return parts.joined(separator: "; ")
    }

    /// "misissued, proxy CA installed: REJECT → ACCEPT" for every row whose result differs.
    static func changes(from before: CheckReport, to after: CheckReport) -> [String] {
        let earlier = Dictionary(before.results.map { ($0.title, $0.actual) }, uniquingKeysWith: { first, _ in first })
        return after.results.compactMap { row in
            guard let was = earlier[row.title], was != row.actual else { return nil }
            return "\(row.title): \(was) → \(row.actual)"
        }
    }

    static func day(_ date: Date) -> String {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withFullDate]
        return format.string(from: date)
    }
}
