import Foundation
import PinproxyProxy

/// What a report's failed rows mean, in a few lines to end a report with: each attack the
/// policy accepted, with the flaw a client that accepts it has (the attack's ``AttackStrategy/catches``
/// text, as `/profiles` and `serve --help` give it), and each refusal of the genuine server.
public enum ReportFindings {
    /// One finding: a scenario, the settings it failed in, and what that failure means.
    public struct Finding: Sendable, Equatable {
        public var scenario: String
        /// `proxy CA installed`, `proxy CA not installed`; empty for a real client's row.
        public var settings: [String]
        public var meaning: String
    }

    /// The attacks the policy accepted, in the matrix's order.
    public static func acceptedAttacks(_ report: CheckReport) -> [Finding] {
        findings(report, expected: .reject) { row in
            if let carried = carries[row.scenario], report.results.contains(where: {
                $0.scenario == carried && $0.status == .fail && $0.deviceTrustsProxyCA == row.deviceTrustsProxyCA
            }) {
                return "it carries the \(carried) chain, accepted on its own as well: \(carried)'s flaw"
            }
            return AttackCatalog.standard.strategy(for: AttackProfile(row.scenario))?.catches ?? "a chain the proxy forged was accepted"
        }
    }

    /// Attacks whose chain holds another attack's whole chain: `stuff` sends the `forge` chain with
    /// the genuine one appended. Its own flaw (pins checked on the chain as sent) is what accepting it
    /// shows only when the client refused the forged chain alone; a client that accepts `forge` in the
    /// same setting accepts `stuff` for `forge`'s reason, pins or none.
    static let carries = ["stuff": "forge"]

    /// The scenarios in which the policy refused the genuine server (direct, passthrough).
    public static func refusedGenuine(_ report: CheckReport) -> [Finding] {
        findings(report, expected: .accept) { _ in "an outage: the app cannot reach its own server" }
    }

    /// The closing lines: accepted attacks first (the breaches), then refusals of the genuine
    /// server (the outages); one line saying all is well when nothing failed and attacks alone ran.
    public static func lines(_ report: CheckReport) -> [String] {
        let attacks = acceptedAttacks(report), outages = refusedGenuine(report)
        var lines: [String] = []
        if !attacks.isEmpty {
            lines.append("Accepted attack\(attacks.count == 1 ? "" : "s") — the flaw a client that accepts \(attacks.count == 1 ? "it" : "each") has:")
            lines += attacks.map { "  \(label($0)): \($0.meaning)" }
        }
        if !outages.isEmpty {
            lines.append("Refused the genuine server:")
            lines += outages.map { "  \(label($0)): \($0.meaning)" }
        }
        // With rotation rows the per-kind summaries (``CheckReport/kindSummaries``) say it, kind by kind.
        let rotated = report.results.contains { $0.kind == .rotation }
        if lines.isEmpty && !rotated && report.failed == 0 && report.passed > 0 && report.plannedScenarios == nil {
            lines.append(allClear(report))
        }
        // The note before the rows has scrolled away by now.
        if report.pinsNameNoWorldCertificate
            && report.results.contains(where: { $0.expected == .accept && $0.actual == "REJECT" }) {
            lines.append("None of the policy's pins and certificates is a certificate of this world (the note at the top): the genuine "
                + "server and its rotations are refused for that alone, so these rows say nothing about the policy's attacks or changes. "
                + "Check a real server's pins with 'pinproxy verify'.")
        }
        return lines
    }

    /// The all-clear line, saying only what ran: `--profiles direct` runs no attack, and
    /// `--profiles forge` never connects to the genuine server.
    static func allClear(_ report: CheckReport) -> String {
        let ran = report.results.filter { $0.status != .skipped }
        let attacks = ran.contains { $0.expected == .reject }, genuine = ran.contains { $0.expected == .accept }
        guard report.errors == 0 else {
            return attacks ? "No attack that could be judged was accepted; the ERROR rows were not judged."
                : "The genuine server was not refused where it could be judged; the ERROR rows were not judged."
        }
        switch (attacks, genuine) {
        case (true, true): return "Every attack that ran was refused and the genuine server was accepted\(CheckReport.skippedText(report.results))."
        case (true, false): return "Every attack that ran was refused (no row connected to the genuine server)."
        default: return "The genuine server was accepted (no attack row ran)."
        }
    }

    /// `forge (proxy CA installed, not installed)`.
    static func label(_ finding: Finding) -> String {
        guard !finding.settings.isEmpty else { return finding.scenario }
        let short = finding.settings.enumerated().map { index, setting in
            index == 0 ? setting : setting.replacingOccurrences(of: "proxy CA ", with: "")
        }
        return "\(finding.scenario) (\(short.joined(separator: ", ")))"
    }

    /// The failed rows with `expected`, one finding per scenario and meaning: the settings a
    /// scenario failed in share a line when the failure means the same in each.
    private static func findings(_ report: CheckReport, expected: Expectation, meaning: (ScenarioResult) -> String) -> [Finding] {
        var out: [Finding] = []
        for row in report.results where row.status == .fail && row.expected == expected {
            let setting = row.deviceTrustsProxyCA.map { $0 ? "proxy CA installed" : "proxy CA not installed" }
            let meant = meaning(row)
            if let index = out.firstIndex(where: { $0.scenario == row.scenario && $0.meaning == meant }) {
                if let setting { out[index].settings.append(setting) }
            } else {
                out.append(Finding(scenario: row.scenario, settings: setting.map { [$0] } ?? [], meaning: meant))
            }
        }
        return out
    }
}
