import Foundation
import PinproxyHarness
import PinproxyTestSupport
import Testing

/// Runs the whole matrix for a policy file written with `world:` references.
enum Matrix {
    static let host = "api.example.com"

    /// Checks the policy `text` (saved as `name`) in a fresh world: the attack rows unless
    /// `kinds` asks for rotations too.
    static func check(_ text: String, name: String = "policy.json", deviceTrust: DeviceTrust = .both,
                      kinds: ScenarioSelection = .attacks) throws -> CheckReport {
        let harness = try Harness.start(host: host)
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        let path = try directory.write(text, to: name)
        return try harness.check(try harness.loadPolicy(contentsOf: path), named: name, deviceTrust: deviceTrust, kinds: kinds)
    }

    /// The rotation rows that are OUTAGE, as `rotation/route`.
    static func outages(_ report: CheckReport) -> Set<String> {
        Set(report.results.filter { $0.status == .outage }.map { "\($0.scenario)/\($0.route ?? "-")" })
    }

    /// `names` through both routes, as ``outages(_:)`` writes them.
    static func routes(_ names: [String]) -> Set<String> { Set(names.flatMap { ["\($0)/direct", "\($0)/passthrough"] }) }

    /// The failing rows as `scenario/yes|no` (proxy CA installed or not).
    static func failures(_ report: CheckReport) -> Set<String> {
        Set(report.results.filter { $0.status == .fail }.map { "\($0.scenario)/\($0.deviceTrustText)" })
    }

    /// Every scenario the standard catalog yields: direct, passthrough and nine attacks, twice.
    static let attacks = ["forge", "stuff", "self-signed", "wrong-host", "expired", "not-yet-valid", "untrusted-ca", "misissued", "fake-parent"]

    static func both(_ names: String...) -> Set<String> { Set(names.flatMap { ["\($0)/yes", "\($0)/no"] }) }

    /// A readable dump of a report for failure messages.
    static func dump(_ report: CheckReport) -> String { TableReport.text(report) }
}
