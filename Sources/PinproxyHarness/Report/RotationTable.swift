import Foundation

/// A Markdown table of policies × rotations from real check runs: which legitimate changes
/// each policy survives (`ok`) and which take the app offline (`OUTAGE`). docs/policies.md
/// holds the table for the example policies; a test regenerates it and compares.
public enum RotationTable {
    /// One row per report (its rotation rows), one column per rotation in ``Rotation/names``
    /// order. A rotation whose direct and passthrough rows disagree shows both; an ERROR shows as such.
    public static func markdown(_ reports: [(policy: String, report: CheckReport)]) -> String {
        var lines = [
            "| policy | " + Rotation.names.joined(separator: " | ") + " |",
            "|---|" + String(repeating: "---|", count: Rotation.names.count),
        ]
        for (policy, report) in reports {
            let cells = Rotation.names.map { name -> String in
                let rows = report.results.filter { $0.kind == .rotation && $0.scenario == name }
                let words = rows.map { $0.status == .pass ? "ok" : $0.status.rawValue }
                guard let first = words.first else { return "-" }
                if words.allSatisfy({ $0 == first }) { return first }
                return zip(rows, words).map { "\($0.route ?? "-"): \($1)" }.joined(separator: ", ")
            }
            lines.append("| `\(policy)` | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
