import Foundation
import Logging
import Synchronization
import Testing
@testable import PinproxyProxy

/// Lines collected from a log handler.
final class CollectedLines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    func take() -> [String] { lines.withLock { list in defer { list = [] }; return list } }
}

/// A stream for swift-log's `StreamLogHandler`, into ``CollectedLines``.
struct CollectingStream: TextOutputStream, Sendable {
    let collected: CollectedLines
    mutating func write(_ string: String) { collected.add(string) }
}

struct LoggedFailure: Error, CustomStringConvertible {
    var description: String { "disk full" }
}

/// The daemon's log handler writes swift-log's `StreamLogHandler` line, and
/// the flow line says what it said before.
@Suite("Log lines")
struct LogLineTests {
    /// Logs the same events through both handlers; returns the pairs of lines.
    static func bothLines(label: String, handlerMetadata: Logger.Metadata,
                          _ events: [LogEvent]) -> [(ours: String, stream: String)] {
        let ours = CollectedLines()
        let theirs = CollectedLines()
        var handler = LogLineHandler(label: label, output: { ours.add(String(decoding: $0, as: UTF8.self)) })
        var reference = StreamLogHandler(label: label, stream: CollectingStream(collected: theirs), metadataProvider: nil)
        handler.metadata = handlerMetadata
        reference.metadata = handlerMetadata
        handler.logLevel = .trace
        reference.logLevel = .trace
        // The two lines name the same second unless one fell on each side
        // of a second's end; then the pair is logged again.
        for _ in 0..<3 {
            for event in events {
                handler.log(event: event)
                reference.log(event: event)
            }
            let pairs = Array(zip(ours.take(), theirs.take()))
            if pairs.allSatisfy({ $0.0.prefix(24) == $0.1.prefix(24) }) { return pairs.map { (ours: $0.0, stream: $0.1) } }
        }
        Issue.record("the timestamps kept differing")
        return []
    }

    static func event(_ level: Logger.Level, _ message: Logger.Message, error: (any Error)? = nil,
                      metadata: Logger.Metadata? = nil, source: String? = nil) -> LogEvent {
        LogEvent(level: level, message: message, error: error, metadata: metadata, source: source,
                 file: #fileID, function: #function, line: #line)
    }

    @Test("the same line as StreamLogHandler: levels, label, source, metadata of the handler and the event, an error")
    func sameLineAsStreamLogHandler() {
        let events = [
            Self.event(.info, "127.0.0.1:50514 GET https://api.example.test/ -> 200"),
            Self.event(.warning, "127.0.0.1:50514: the client refused the forged certificate", source: "PinproxyProxy"),
            Self.event(.notice, "with metadata", metadata: ["host": "api.example.test", "attempt": "2"]),
            Self.event(.error, "cannot write the capture", error: LoggedFailure()),
            Self.event(.debug, "ünïcödé → lines"),
        ]
        for (label, metadata) in [("pinproxy", Logger.Metadata()), ("", Logger.Metadata()), ("pinproxy", ["run": "7", "a": "b"])] {
            let pairs = Self.bothLines(label: label, handlerMetadata: metadata, events)
            #expect(pairs.count == events.count)
            for pair in pairs { #expect(pair.ours == pair.stream) }
        }
    }

    @Test("a line: timestamp, level, label, source, message, one newline")
    func lineShape() throws {
        let collected = CollectedLines()
        let handler = LogLineHandler(label: "pinproxy", output: { collected.add(String(decoding: $0, as: UTF8.self)) })
        handler.log(event: Self.event(.info, "hello", source: "PinproxyProxy"))
        let line = try #require(collected.take().first)
        #expect(line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info pinproxy: \[PinproxyProxy\] hello\n/) != nil, "\(line)")
    }

    @Test("the flow line: client, method, URL, status, error and profile")
    func flowLine() {
        #expect(FlowRecorder.line(for: sampleFlow(1))
                == "127.0.0.1:51 GET https://api.example.test/items/1?q=a+b&x=%2F -> 200 (profile forge)")
        #expect(FlowRecorder.line(for: sampleFlow(2, requestBody: [1], failed: true))
                == "127.0.0.1:52 POST https://api.example.test/items/2?q=a+b&x=%2F -> - (502: upstream certificate did not verify) (profile forge)")
        var plain = sampleFlow(3)
        plain.clientTLS = nil
        #expect(FlowRecorder.line(for: plain) == "127.0.0.1:53 GET https://api.example.test/items/3?q=a+b&x=%2F -> 200")
    }
}
