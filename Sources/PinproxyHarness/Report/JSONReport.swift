import Foundation

/// The report as JSON: every row with its full verdict, the counts and the elapsed time.
public enum JSONReport {
    public static func data(_ report: CheckReport) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(report) + Data("\n".utf8)
    }
}
