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
        lines.append("\(report.summary).")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A table of `results` with `header`, the second column given by `second`, and a blank line after.
    private static func table(_ results: [ScenarioResult], header: String, crossChecked: Bool,
                              second: (ScenarioResult) -> String) -> [String] {
        var lines = [header, crossChecked ? "|---|---|---|---|---|---|---|" : "|---|---|---|---|---|---|"]
        for r in results {
            let result = r.status == .pass ? "PASS" : "**\(TableReport.resultText(r))**"
            let verdicts = crossChecked ? "\(r.verdictText) | \(r.real?.verdictText ?? "-")" : r.actual
            lines.append("| \(cell(r.scenario)) | \(second(r)) | \(r.expected.rawValue) | \(verdicts) | \(result) | \(cell(TableReport.reason(r))) |")
        }
        return lines + [""]
    }

    /// Text safe inside a table cell: pipes escaped, line breaks folded.
    static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
