import Foundation
import PinproxyCertificates
import Synchronization

/// Writes flows and TLS outcome events as JSON lines (`--events FILE`).
///
/// One object per line, `{"type":"flow","flow":{...}}` or
/// `{"type":"event","event":{...}}`. A group of records is written with a
/// single `write` on a file opened for appending, so every group that was
/// written is complete on disk and lines from many threads never
/// interleave; a write that fails (a full disk) is cut off again, so the
/// file never ends in half a line. Dates are ISO 8601 with milliseconds.
public final class JSONLinesWriter: CaptureSink {
    private struct State: ~Copyable {
        var file: CaptureFile?
        /// The file's size after the last complete group.
        var end: Int
        /// The group being written, reused from one group to the next.
        var output = JSONOutput(capacity: 65_536)
    }

    public let path: String
    public var name: String { path }
    public let syncEachRecord: Bool
    private let state: Mutex<State>

    /// Opens `path` for appending (creating it), or truncates it first with `truncate`.
    public init(path: String, truncate: Bool = true, syncEachRecord: Bool = false) throws(PinproxyError) {
        self.path = path
        self.syncEachRecord = syncEachRecord
        if truncate { _ = try CaptureFile(path: path, append: false) }
        let file = try CaptureFile(path: path, append: true)
        state = Mutex(State(file: file, end: file.size() ?? 0))
    }

    public func write(_ records: [CaptureRecord]) throws(PinproxyError) {
        try state.withLock { (state: inout State) throws(PinproxyError) in
            guard state.file != nil else { throw PinproxyError(.io, "\(path) is already closed") }
            state.output.reset()
            for record in records {
                state.output.line(record)
                if state.output.count >= HARWriter.groupBytes { try commit(&state) }
            }
            if state.output.count > 0 { try commit(&state) }
        }
    }

    private func commit(_ state: inout State) throws(PinproxyError) {
        guard let file = state.file else { return }
        do {
            try state.output.withBytes { (bytes) throws(PinproxyError) in try file.write(bytes) }
        } catch {
            file.truncate(to: state.end)
            state.output.reset()
            throw error
        }
        if syncEachRecord { file.sync() }
        state.end += state.output.count
        state.output.reset()
    }

    public func close() {
        state.withLock { state in
            state.file?.sync()
            state.file?.close()
            state.file = nil
        }
    }
}
