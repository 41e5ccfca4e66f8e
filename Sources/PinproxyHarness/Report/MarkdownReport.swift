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
            let verdicts = crossChecked ? "\(r.verdictText) | \(r.real?.verdictText ?? "-")" : r.actual
            lines.append("| \(r.scenario) | \(r.deviceTrustText) | \(r.expected.rawValue) | \(verdicts) | \(result) | \(cell(TableReport.reason(r))) |")
        }
        lines.append("")
        for note in report.notes { lines.append("- note: \(cell(note))") }
        lines.append("\(report.summary).")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Text safe inside a table cell: pipes escaped, line breaks folded.
    static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
