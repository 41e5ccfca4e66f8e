import Foundation
import PinproxyCertificates
import Synchronization

/// Writes flows and TLS outcome events as JSON lines (`--events FILE`).
///
/// One object per line, `{"type":"flow","flow":{...}}` or
/// `{"type":"event","event":{...}}`, each written with a single `write` on
/// a file opened for appending, so every line that was recorded is complete on
/// disk and lines from many threads never interleave. Dates are ISO 8601.
public final class JSONLinesWriter: CaptureSink {
    public let path: String
    public let syncEachRecord: Bool
    private let file: Mutex<CaptureFile?>

    /// Opens `path` for appending (creating it), or truncates it first with `truncate`.
    public init(path: String, truncate: Bool = true, syncEachRecord: Bool = false) throws(PinproxyError) {
        self.path = path
        self.syncEachRecord = syncEachRecord
        if truncate { _ = try CaptureFile(path: path, append: false) }
        file = Mutex(try CaptureFile(path: path, append: true))
    }

    /// One line of the file.
    struct Line: Encodable {
        var type: String
        var flow: Flow?
        var event: TLSOutcomeEvent?
    }

    public func record(_ flow: Flow) throws(PinproxyError) {
        try append(Line(type: "flow", flow: flow))
    }

    public func record(_ event: TLSOutcomeEvent) throws(PinproxyError) {
        try append(Line(type: "event", event: event))
    }

    private func append(_ line: Line) throws(PinproxyError) {
        let bytes = try HARWriter.encode(line) + [0x0a]
        try file.withLock { (file: inout CaptureFile?) throws(PinproxyError) in
            guard let file else { throw PinproxyError(.io, "\(path) is already closed") }
            try file.write(bytes)
            if syncEachRecord { file.sync() }
        }
    }

    public func close() {
        file.withLock { file in
            file?.sync()
            file?.close()
            file = nil
        }
    }
}
