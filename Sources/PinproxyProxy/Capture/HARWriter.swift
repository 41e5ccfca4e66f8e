import Foundation
import PinproxyCertificates
import Synchronization

/// Writes flows to an HTTP Archive 1.2 file (`--har FILE`) that is a complete,
/// valid document after every group of records.
///
/// The file always ends with the closing trailer `]}}`. A group's entries are
/// written over the old trailer together with a fresh one, in one `pwrite`,
/// so the file is never rewritten and a crash or SIGKILL loses at most the
/// group being written. When a write fails (a full disk), the old trailer is
/// put back and the file cut after it: the archive stays valid with the
/// entries it had. The file is truncated when the writer opens it. Safe to
/// call from any thread.
public final class HARWriter: CaptureSink {
    private struct State: ~Copyable {
        var file: CaptureFile?
        /// Where the trailer starts: the next entry goes here.
        var trailerOffset: Int
        var entries: Int
        /// The group being written, reused from one group to the next.
        var output = JSONOutput(capacity: 65_536)
    }

    public let path: String
    public var name: String { path }
    /// Whether each group is also `fsync`ed (slower, survives power loss).
    public let syncEachRecord: Bool
    private let state: Mutex<State>
    private static let trailer: [UInt8] = Array("\n]}}\n".utf8)
    private static let firstSeparator: [UInt8] = [0x0a]
    private static let separator: [UInt8] = [0x2c, 0x0a]
    /// A group larger than this is written in parts, each a valid archive,
    /// so that a burst does not grow the buffer without bound.
    static let groupBytes = 1 << 20

    /// Creates (or truncates) `path` and writes an empty archive.
    public init(path: String, creatorVersion: String = PinproxyVersion.current, syncEachRecord: Bool = false) throws(PinproxyError) {
        self.path = path
        self.syncEachRecord = syncEachRecord
        let file = try CaptureFile(path: path, append: false)
        var header = JSONOutput()
        header.raw(Array(#"{"log":{"version":"1.2","creator":"#.utf8))
        header.beginObject()
        header.field("name", "pinproxy")
        header.field("version", creatorVersion)
        header.endObject()
        header.raw(Array(#","pages":[],"entries":["#.utf8))
        let headerBytes = header.bytes
        try file.write(headerBytes + HARWriter.trailer, at: 0)
        state = Mutex(State(file: file, trailerOffset: headerBytes.count, entries: 0))
    }

    /// Appends the group's flows as entries; when this returns the file on
    /// disk holds them. Events have no place in HAR (they go to the JSON lines file).
    public func write(_ records: [CaptureRecord]) throws(PinproxyError) {
        try state.withLock { (state: inout State) throws(PinproxyError) in
            guard state.file != nil else { throw PinproxyError(.io, "\(path) is already closed") }
            state.output.reset()
            var added = 0
            for case .flow(let flow) in records {
                state.output.raw(state.entries + added == 0 ? HARWriter.firstSeparator : HARWriter.separator)
                state.output.nextDocument()
                state.output.harEntry(flow)
                added += 1
                if state.output.count >= HARWriter.groupBytes {
                    try commit(&state, added)
                    added = 0
                }
            }
            if added > 0 { try commit(&state, added) }
        }
    }

    /// Writes the entries in `state.output` and a fresh trailer at the old trailer's place.
    private func commit(_ state: inout State, _ added: Int) throws(PinproxyError) {
        guard let file = state.file else { return }
        let length = state.output.count
        state.output.raw(HARWriter.trailer)
        let offset = state.trailerOffset
        do {
            try state.output.withBytes { (bytes) throws(PinproxyError) in try file.write(bytes, at: offset) }
        } catch {
            try? file.write(HARWriter.trailer, at: state.trailerOffset)
            file.truncate(to: state.trailerOffset + HARWriter.trailer.count)
            state.output.reset()
            throw error
        }
        if syncEachRecord { file.sync() }
        state.trailerOffset += length
        state.entries += added
        state.output.reset()
    }

    /// How many entries the file holds.
    public var entryCount: Int { state.withLock { $0.entries } }

    /// Syncs and closes the file; later records throw.
    public func close() {
        state.withLock { state in
            state.file?.sync()
            state.file?.close()
            state.file = nil
        }
    }
}
