import Foundation

/// The report as a Markdown table, for a pull-request comment or a CI summary page.
public enum MarkdownReport {
    public static func text(_ report: CheckReport) -> String {
        var lines = [
            "### pinproxy check: \(cell(report.policy))",
            "",
            "\(report.family) (\(report.profile)) for `\(report.host)`; proxy \(report.proxy); client \(cell(report.client)); HTTP/2 \(report.http2 ? "on" : "off").",
            "",
        ]
        let crossChecked = report.realLibrary != nil
        let verdicts = crossChecked ? "emulation | real" : "actual"
        let attacks = report.results.filter { $0.kind == .attack }
        let rotations = report.results.filter { $0.kind == .rotation }
        if !attacks.isEmpty || rotations.isEmpty {
            lines += table(attacks, header: "| scenario | proxy CA installed | expected | \(verdicts) | result | reason |",
                           crossChecked: crossChecked) { $0.deviceTrustText }
        }
        if !rotations.isEmpty {
            lines += ["#### Rotations (legitimate certificate changes)", ""]
            lines += table(rotations, header: "| rotation | route | expected | \(verdicts) | result | reason |",
                           crossChecked: crossChecked) { $0.route ?? "-" }
        }
        for note in report.notes { lines.append("- note: \(cell(note))") }
        if let timeline = report.timeline { lines.append("- timeline: \(cell(timeline))") }
        if !rotations.isEmpty { lines += report.kindSummaries.map { "- \(cell($0))" } }
        if !report.notes.isEmpty || report.timeline != nil || !rotations.isEmpty { lines.append("") }
        // The findings: a heading line, then its items (indented in the terminal's text).
        for line in ReportFindings.lines(report) {
            lines.append(line.hasPrefix("  ") ? "- \(cell(line.trimmingCharacters(in: .whitespaces)))" : "\n\(cell(line))\n")
        }
        lines.append("")
        lines.append("\(report.summary).")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A table of `results` with `header`, the second column given by `second`, and a blank line after.
    private static func table(_ results: [ScenarioResult], header: String, crossChecked: Bool,
                              second: (ScenarioResult) -> String) -> [String] {
        var lines = [header, crossChecked ? "|---|---|---|---|---|---|---|" : "|---|---|---|---|---|---|"]
        for r in results {
            let result = r.status == .pass ? "PASS" : "**\(TableReport.resultText(r))**"
            let verdicts = crossChecked ? "\(cell(r.verdictText)) | \(cell(r.real?.verdictText ?? "-"))" : cell(r.actual)
            lines.append("| \(cell(r.scenario)) | \(cell(second(r))) | \(r.expected.rawValue) | \(verdicts) | \(result) | \(cell(TableReport.reason(r))) |")
        }
        return lines + [""]
    }

    /// Text safe inside a table cell: HTML markup shown as text (a reason quoting
    /// `<certificates src="user">` would otherwise vanish on GitHub), pipes escaped, line breaks folded.
    static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
