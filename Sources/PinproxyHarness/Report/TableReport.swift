import Foundation

/// The matrix as a terminal table: one row per scenario, the reason last so
/// it may run as long as it needs. Colour only when asked (on a TTY).
public enum TableReport {
    /// The whole report: a header line, the rows, notes (but those in `printedNotes`, which the
    /// reader saw before the rows), and the summary with the elapsed time.
    public static func text(_ report: CheckReport, colour: Bool = false, printedNotes: [String] = []) -> String {
        var lines = ["pinproxy check: \(report.policy) — \(report.family) (\(report.profile)) for \(report.host); proxy \(report.proxy); client \(report.client); HTTP/2 \(report.http2 ? "on" : "off")"]
        // A cross-check shows both verdicts, each with its moment, where the others show one.
        let crossChecked = report.realLibrary != nil
        let header = ["SCENARIO", "PROXY CA", "EXPECTED"] + (crossChecked ? ["EMULATION", "REAL"] : ["ACTUAL"]) + ["RESULT", "REASON"]
        let resultColumn = header.count - 2
        let rows = report.results.map { r in
            [r.scenario, r.deviceTrustText, r.expected.rawValue]
                + (crossChecked ? [r.verdictText, r.real?.verdictText ?? "-"] : [r.actual])
                + [resultText(r), reason(r)]
        }
        let widths = (0..<header.count - 1).map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        func line(_ cells: [String], status: ScenarioResult.Status?) -> String {
            var out = ""
            for (column, cell) in cells.enumerated() {
                let padded = column < widths.count ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) : cell
                out += column == resultColumn && colour && status != nil ? paint(padded, status!) : padded
                if column < cells.count - 1 { out += "  " }
            }
            return out
        }
        lines.append(line(header, status: nil))
        for (row, result) in zip(rows, report.results) { lines.append(line(row, status: result.status)) }
        for note in report.notes where !printedNotes.contains(note) { lines.append("note: \(note)") }
        if report.results.contains(where: \.modelDependent) {
            lines.append("model-dependent: the verdict compares pins with a chain the evaluator could not complete; which certificates that partial chain holds depends on the chain-building model (docs/policies.md), so the row is a consequence of the model, not a fact about the library")
        }
        lines.append(report.summary)
        return lines.joined(separator: "\n")
    }

    /// The result cell: PASS, FAIL or ERROR, or ``CrossCheck/mismatchMark`` for a row where the
    /// emulation and the real library disagree.
    public static func resultText(_ result: ScenarioResult) -> String {
        result.emulationMatchesReal == false ? CrossCheck.mismatchMark : result.status.rawValue
    }

    /// The reason cell: the reason, the weaknesses, the model-dependence label, in
    /// real-client mode the command's exit status, and in a cross-check what the real
    /// library said.
    public static func reason(_ result: ScenarioResult) -> String {
        var text = result.reason
        if result.modelDependent { text += " (model-dependent)" }
        if let status = result.clientExitStatus { text = "exit \(status); " + text }
        if let real = result.real {
            text += " | real: " + (real.clientExitStatus.map { "exit \($0); " } ?? "") + real.reason
        }
        return text
    }

    private static func paint(_ text: String, _ status: ScenarioResult.Status) -> String {
        let code: String
        switch status {
        case .pass: code = "32"
        case .fail: code = "31;1"
        case .error: code = "33;1"
        }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}
