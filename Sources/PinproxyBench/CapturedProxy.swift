import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// pinproxy as `serve --har FILE --events FILE` runs it, for the benchmark's
/// capture path: a ``ProxyDaemon`` writing both files.
final class CapturedProxy {
    let daemon: ProxyDaemon
    let port: Int
    let harPath: String
    let eventsPath: String
    private var stopped = false

    init(configuration: ProxyConfiguration, authority: CertificateAuthority, directory: String, logger: Logger) throws {
        let stamp = UUID().uuidString
        harPath = directory + "/capture-\(stamp).har"
        eventsPath = directory + "/capture-\(stamp).jsonl"
        daemon = try ProxyDaemon(configuration: configuration, authority: authority, harPath: harPath, eventsPath: eventsPath,
                                 logger: logger)
        port = try daemon.start().port
    }

    /// Stops the daemon (which closes the files), then checks them against
    /// what the proxy counted; removes them.
    func check() throws -> CaptureCheck {
        let flows = daemon.server.counters.counts.flows
        stop()
        defer {
            try? FileManager.default.removeItem(atPath: harPath)
            try? FileManager.default.removeItem(atPath: eventsPath)
        }
        let statistics = daemon.server.recorder.statistics
        let har = try Data(contentsOf: URL(fileURLWithPath: harPath), options: .alwaysMapped)
        var check = CaptureCheck(flowsCounted: flows, statistics: statistics, harBytes: har.count)
        check.harEntries = CapturedProxy.harEntries(har)
        let lines = try Data(contentsOf: URL(fileURLWithPath: eventsPath), options: .alwaysMapped)
        check.eventLines = lines.reduce(0) { $1 == 0x0a ? $0 + 1 : $0 }
        return check
    }

    /// The entries of a HAR as ``HARWriter`` lays it out (the opening up to
    /// `"entries":[` on the first line, one entry per line, each but the last
    /// followed by a comma, `]}}` on the last line), each parsed on its own;
    /// nil when the file is not that or an entry is not a JSON object.
    ///
    /// Parsing the whole document at once took over 20 GB for the 500 MB a
    /// keep-alive load writes in a few rounds (Foundation's JSON objects are
    /// large), and the process was killed.
    static func harEntries(_ har: Data) -> Int? {
        let lines = har.split(separator: 0x0a, omittingEmptySubsequences: true)
        guard lines.count >= 2, lines.last.map({ Array($0) }) == Array("]}}".utf8) else { return nil }
        let opening = Data(lines[0]) + Data("]}}".utf8)
        guard let document = try? JSONSerialization.jsonObject(with: opening) as? [String: Any],
              (document["log"] as? [String: Any])?["entries"] as? [Any] != nil else { return nil }
        let entries = lines.dropFirst().dropLast()
        for (index, line) in zip(entries.indices, entries) {
            let isLast = index == entries.index(before: entries.endIndex)
            guard isLast || line.last == UInt8(ascii: ",") else { return nil }
            let entry = isLast ? line : line.dropLast()
            guard (try? JSONSerialization.jsonObject(with: Data(entry))) is [String: Any] else { return nil }
        }
        return entries.count
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        daemon.stop()
    }
}

/// What the capture files held after a load, against what the proxy counted.
public struct CaptureCheck: Sendable {
    /// Exchanges the proxy counted.
    public var flowsCounted: Int
    /// What the capture writer did.
    public var statistics: CaptureStatistics
    public var harBytes: Int
    /// Entries in the HAR, or nil when it did not parse as JSON.
    public var harEntries: Int?
    /// Lines in the JSON lines file (flows and events).
    public var eventLines = 0

    /// Whether the HAR parsed and holds every counted flow, with nothing lost.
    public var complete: Bool { harEntries == flowsCounted && statistics.lost == 0 && statistics.flows == flowsCounted }
}
