import Foundation
import PinproxyCertificates
import Synchronization

/// Writes flows to an HTTP Archive 1.2 file (`--har FILE`) that is a complete,
/// valid document after every ``record(_:)-(Flow)``.
///
/// The file always ends with the closing trailer `]}}`. Each new entry is
/// written over the old trailer together with a fresh one, in one `pwrite`,
/// so a crash or SIGKILL loses at most the entry being written. The file is
/// truncated when the writer opens it. Safe to call from any thread.
public final class HARWriter: CaptureSink {
    private struct State {
        var file: CaptureFile?
        /// Where the trailer starts: the next entry goes here.
        var trailerOffset: Int
        var entries: Int
    }

    public let path: String
    /// Whether each record is also `fsync`ed (slower, survives power loss).
    public let syncEachRecord: Bool
    private let state: Mutex<State>
    private static let trailer: [UInt8] = Array("\n]}}\n".utf8)

    /// Creates (or truncates) `path` and writes an empty archive.
    public init(path: String, creatorVersion: String = "dev", syncEachRecord: Bool = false) throws(PinproxyError) {
        self.path = path
        self.syncEachRecord = syncEachRecord
        let file = try CaptureFile(path: path, append: false)
        let creator = HARWriter.json(["name": "pinproxy", "version": creatorVersion])
        let header = Array(#"{"log":{"version":"1.2","creator":"#.utf8) + creator + Array(#","pages":[],"entries":["#.utf8)
        try file.write(header + HARWriter.trailer, at: 0)
        state = Mutex(State(file: file, trailerOffset: header.count, entries: 0))
    }

    /// Appends `flow` as an entry; when this returns the file on disk holds it.
    public func record(_ flow: Flow) throws(PinproxyError) {
        let entry = try HARWriter.encode(HARFormat.entry(for: flow))
        try state.withLock { (state: inout State) throws(PinproxyError) in
            guard let file = state.file else { throw PinproxyError(.io, "\(path) is already closed") }
            let separator: [UInt8] = state.entries == 0 ? [0x0a] : [0x2c, 0x0a]
            try file.write(separator + entry + HARWriter.trailer, at: state.trailerOffset)
            if syncEachRecord { file.sync() }
            state.trailerOffset += separator.count + entry.count
            state.entries += 1
        }
    }

    /// HAR has no place for connection events without an exchange; they go to the JSON lines file.
    public func record(_ event: TLSOutcomeEvent) throws(PinproxyError) {}

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

    static func encode<T: Encodable>(_ value: T) throws(PinproxyError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Sub-second precision matters when flows are only milliseconds apart.
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(HARFormat.timestamp(date))
        }
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw PinproxyError(.io, "cannot encode a capture record: \(error)")
        }
    }

    private static func json(_ object: [String: String]) -> [UInt8] {
        (try? encode(object)) ?? Array("{}".utf8)
    }
}
