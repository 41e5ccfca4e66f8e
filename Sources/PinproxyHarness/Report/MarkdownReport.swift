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
        lines.append(crossChecked ? "| scenario | proxy CA installed | expected | emulation | real | result | reason |"
                                  : "| scenario | proxy CA installed | expected | actual | result | reason |")
        lines.append(crossChecked ? "|---|---|---|---|---|---|---|" : "|---|---|---|---|---|---|")
        for r in report.results {
            let result = r.status == .pass ? "PASS" : "**\(TableReport.resultText(r))**"
            let verdicts = crossChecked ? "\(cell(r.verdictText)) | \(cell(r.real?.verdictText ?? "-"))" : cell(r.actual)
            lines.append("| \(cell(r.scenario)) | \(r.deviceTrustText) | \(r.expected.rawValue) | \(verdicts) | \(result) | \(cell(TableReport.reason(r))) |")
        }
        lines.append("")
        for note in report.notes { lines.append("- note: \(cell(note))") }
        if !report.notes.isEmpty { lines.append("") }
        // The findings: a heading line, then its items (indented in the terminal's text).
        for line in ReportFindings.lines(report) {
            lines.append(line.hasPrefix("  ") ? "- \(cell(line.trimmingCharacters(in: .whitespaces)))" : "\n\(cell(line))\n")
        }
        lines.append("")
        lines.append("\(report.summary).")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text safe inside a table cell: HTML markup shown as text (a reason quoting
    /// `<certificates src="user">` would otherwise vanish on GitHub), pipes escaped, line breaks folded.
    static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
