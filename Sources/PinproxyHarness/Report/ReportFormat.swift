import Foundation
import PinproxyCertificates

/// A report file `pinproxy check` writes besides the table: JSON, JUnit XML or Markdown.
public enum ReportFormat: String, Sendable, CaseIterable {
    case json, junit, markdown

    /// The bytes of `report` in this format.
    public func bytes(_ report: CheckReport) throws -> [UInt8] {
        switch self {
        case .json: return Array(try JSONReport.data(report))
        case .junit: return Array(JUnitReport.data(report))
        case .markdown: return Array(MarkdownReport.text(report).utf8)
        }
    }
}

/// Where one report goes, and in which format.
public struct ReportFile: Sendable, Equatable {
    public var format: ReportFormat
    public var path: String

    public init(_ format: ReportFormat, path: String) {
        self.format = format
        self.path = path
    }

    /// Writes `report` to ``path`` (mode 0644).
    public func write(_ report: CheckReport) throws {
        try FileIO.write(try format.bytes(report), to: path, mode: 0o644)
    }
}
