import Foundation

/// The matrix as a terminal table that fits ``width`` columns: one row per scenario with a
/// short reason, the attacks first and the rotations in a block of their own; the reasons cut
/// to fit follow the tables in full (those of rows that did not pass always, every one with
/// `verbose`), then the findings (``ReportFindings``) and the summary. Colour only when asked
/// (on a TTY).
public enum TableReport {
    /// The columns the table keeps to, reason included.
    public static let width = 100

    /// A column: its heading and its cell for a row. The reason is not one of them: it takes
    /// what is left of ``width``.
    struct Column: Sendable {
        var heading: String
        var cell: @Sendable (ScenarioResult) -> String
    }

    /// The columns before the reason; a cross-check shows both verdicts, each with its moment,
    /// where the others show one. The rotation block names the rotation and its ROUTE where the
    /// attacks name the scenario and whether the proxy CA is installed.
    static func columns(crossChecked: Bool, rotations: Bool = false) -> [Column] {
        (rotations ? [Column(heading: "ROTATION") { $0.scenario }, Column(heading: "ROUTE") { $0.route ?? "-" }]
                   : [Column(heading: "SCENARIO") { $0.scenario }, Column(heading: "PROXY CA") { $0.deviceTrustText }])
            + [Column(heading: "EXPECTED") { $0.expected.rawValue }]
            + (crossChecked ? [Column(heading: "EMULATION") { $0.verdictText }, Column(heading: "REAL") { $0.real?.verdictText ?? "-" }]
                            : [Column(heading: "ACTUAL") { $0.actual }])
            + [Column(heading: "RESULT") { resultText($0) }]
    }

    /// The whole report: a header line, the rows, the reasons in full, notes (but those in
    /// `printedNotes`, which the reader saw before the rows), the findings and the summary.
    public static func text(_ report: CheckReport, colour: Bool = false, printedNotes: [String] = [], verbose: Bool = false) -> String {
        var lines = ["pinproxy check: \(report.policy) — \(report.family) (\(report.profile)) for \(report.host); proxy \(report.proxy); client \(report.client); HTTP/2 \(report.http2 ? "on" : "off")"]
        let crossChecked = report.realLibrary != nil
        let attacks = report.results.filter { $0.kind == .attack }
        let rotations = report.results.filter { $0.kind == .rotation }
        var reasons = Reasons(verbose: verbose)
        if !attacks.isEmpty || rotations.isEmpty {
            lines += block(attacks, columns: columns(crossChecked: crossChecked), colour: colour, reasons: &reasons)
        }
        if !rotations.isEmpty {
            if !attacks.isEmpty { lines.append("") }
            lines += block(rotations, columns: columns(crossChecked: crossChecked, rotations: true), colour: colour, reasons: &reasons)
        }
        if !reasons.inFull.isEmpty {
            lines.append("")
            lines.append("Reasons in full:")
            lines += reasons.inFull
        }
        if reasons.cutAndHidden > 0 {
            lines.append("(\(reasons.cutAndHidden) reason\(reasons.cutAndHidden == 1 ? "" : "s") shortened to fit \(width) columns; --verbose prints every reason in full)")
        }
        let notes = report.notes.filter { !printedNotes.contains($0) }
        if !notes.isEmpty || report.results.contains(where: \.modelDependent) || report.timeline != nil { lines.append("") }
        for note in notes { lines.append("note: \(note)") }
        if report.results.contains(where: \.modelDependent) {
            lines.append("model-dependent: the verdict compares pins with a chain the evaluator could not complete; which certificates that partial chain holds depends on the chain-building model (docs/policies.md), so the row is a consequence of the model, not a fact about the library")
        }
        if let timeline = report.timeline { lines.append("timeline: \(timeline)") }
        let findings = ReportFindings.lines(report)
        if !findings.isEmpty {
            lines.append("")
            lines += findings
        }
        if !rotations.isEmpty { lines += report.kindSummaries }
        lines.append(report.summary)
        return lines.joined(separator: "\n")
    }

    /// The reasons the tables cut, numbered across the blocks: those listed in full below
    /// them, and how many were shortened without being listed.
    struct Reasons {
        var verbose: Bool
        var inFull: [String] = []
        var cutAndHidden = 0
    }

    /// One table: the headings and a line per row, each row's reason in what is left of ``width``.
    private static func block(_ results: [ScenarioResult], columns: [Column], colour: Bool, reasons: inout Reasons) -> [String] {
        let rows = results.map { r in columns.map { $0.cell(r) } }
        let widths = columns.indices.map { column in
            ([columns.map(\.heading)] + rows).map { $0[column].count }.max() ?? 0
        }
        let resultColumn = columns.firstIndex { $0.heading == "RESULT" }
        func line(_ cells: [String], reason: String, status: ScenarioResult.Status?) -> String {
            var out = ""
            for (column, cell) in cells.enumerated() {
                let padded = cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                out += column == resultColumn && colour && status != nil ? paint(padded, status!) : padded
                out += "  "
            }
            return out + reason
        }
        let room = max(24, width - widths.reduce(0) { $0 + $1 + 2 })
        var lines = [line(columns.map(\.heading), reason: "REASON", status: nil)]
        for (cells, result) in zip(rows, results) {
            let full = reason(result)
            let short = shortReason(full)
            guard full.count > room || short != full else {
                lines.append(line(cells, reason: full, status: result.status))
                continue
            }
            // In full below the table: with --verbose every reason the table shortened; otherwise
            // those of the rows a reader must act on (a FAIL's flaw, an OUTAGE's broken pin and fix).
            let listed = reasons.verbose || result.status != .pass
            let marker = listed ? " [\(reasons.inFull.count + 1)]" : ""
            lines.append(line(cells, reason: shortened(short, to: room - marker.count) + marker, status: result.status))
            if listed { reasons.inFull.append("[\(reasons.inFull.count + 1)] \(result.title): \(full)") } else { reasons.cutAndHidden += 1 }
        }
        return lines
    }

    /// The result cell: PASS, FAIL, OUTAGE, ERROR or SKIPPED, or ``CrossCheck/mismatchMark`` for a row
    /// where the emulation and the real library disagree.
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

    /// The gist of a reason for the table: where a refusal happened and the failures the chain
    /// evaluation named (`in the handshake: self-signed, expired`), or the decision without the
    /// step that took it (`pin sha256/6sQr… matched #0 (CN=api.example.com)`);
    /// pins cut to their first characters, weakness tags kept. The full reason is the same
    /// words at length.
    static func shortReason(_ full: String) -> String {
        var lead = "", body = Substring(full)
        // "refused in the handshake (alert sent) — handshake: reject: …"
        if let dash = full.range(of: " — ") {
            lead = String(full[..<dash.lowerBound]).replacingOccurrences(of: #" \([^)]*\)"#, with: "", options: .regularExpression)
            if lead.hasPrefix("refused ") { lead.removeFirst("refused ".count) }
            lead = lead.replacingOccurrences(of: " the handshake", with: " handshake")
            body = full[dash.upperBound...]
        }
        // The decision, without the step's name before it.
        for decision in ["accept: ", "reject: ", "report-only: "] {
            if let found = body.range(of: ": " + decision) {
                body = body[found.lowerBound...].dropFirst(2)
                // The ACTUAL column says it, unless the decision was report-only.
                if decision != "report-only: " { body = body.dropFirst(decision.count) }
                break
            }
        }
        var text = String(body)
        var tag = ""
        if text.hasSuffix("]"), let open = text.lastIndex(of: "[") {
            tag = " " + text[open...]
            text = String(text[..<open]).trimmingCharacters(in: .whitespaces)
        }
        // The evaluation's failures by kind: "(failed — self-signed: …; expired: …)".
        if let failed = text.range(of: "(failed — ") {
            var kinds: [String] = []
            // Only the evaluation's own list: what follows its ")" (an OUTAGE's "broken: …; fix: …") is no failure kind.
            let listed = text[failed.upperBound...]
            let end = listed.range(of: ") — ")?.lowerBound ?? listed.lastIndex(of: ")") ?? listed.endIndex
            for part in listed[..<end].components(separatedBy: "; ") {
                guard let colon = part.range(of: ": ") else { continue }
                let kind = String(part[..<colon.lowerBound])
                if kind.count <= 24 && !kind.contains("(") && !kinds.contains(kind) { kinds.append(kind) }
            }
            if !kinds.isEmpty { text = kinds.joined(separator: ", ") }
        }
        text = text.replacingOccurrences(of: "Certificate pinning failure! ", with: "")
            .replacingOccurrences(of: " of the checked chain", with: "")
            .replacingOccurrences(of: "matched certificate #", with: "matched #")
            .replacingOccurrences(of: #"\(the built chain ends at an? ([a-z]+) anchor\)"#, with: "($1 anchor)", options: .regularExpression)
            .replacingOccurrences(of: #"sha256/([A-Za-z0-9+/]{4})[A-Za-z0-9+/]{39}="#, with: "sha256/$1…", options: .regularExpression)
            // A bare base64 pin (TrustKit, Android's pin-set) is cut the same way.
            .replacingOccurrences(of: #"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{4})[A-Za-z0-9+/]{39}="#, with: "$1…", options: .regularExpression)
        return (lead.isEmpty ? text : lead + ": " + text) + tag
    }

    /// `text` in at most `limit` characters, cut at a word with "…"; a weakness tag at its end
    /// (`[CVE-2016-2402]`) is kept when it takes at most about half the room.
    static func shortened(_ text: String, to limit: Int) -> String {
        guard text.count > limit else { return text }
        var tag = ""
        if text.hasSuffix("]"), let open = text.lastIndex(of: "["), text.distance(from: open, to: text.endIndex) <= limit / 2 + 4 {
            tag = " " + text[open...]
        }
        let body = text.dropLast(tag.count)
        let head = String(body.prefix(limit - tag.count - 1))
        var cut = head.endIndex
        let endsAWord = body.dropFirst(head.count).first == " "
        if !endsAWord, let space = head.lastIndex(of: " "), head.distance(from: head.startIndex, to: space) >= head.count / 2 { cut = space }
        // A cut just after an ellipsis of the text's own (a shortened pin, "…") or a full stop
        // takes it off: one "…" ends the cell. Only the end is trimmed.
        var kept = head[..<cut]
        while let last = kept.last, " ,:;(….".contains(last) { kept = kept.dropLast() }
        return String(kept) + "…" + tag
    }

    private static func paint(_ text: String, _ status: ScenarioResult.Status) -> String {
        let code: String
        switch status {
        case .pass: code = "32"
        case .fail: code = "31;1"
        case .error: code = "33;1"
        case .skipped: code = "36"
        case .outage: code = "35;1"
        }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }
}
