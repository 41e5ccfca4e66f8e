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

/// The flow line written straight as bytes is the line `Logger.info` writes.
@Suite("Flow log line")
struct FlowLogTests {
    static func logger(level: Logger.Level, metadata: Logger.Metadata = [:], into collected: CollectedLines) -> Logger {
        var handler = LogLineHandler(label: "pinproxy", output: { collected.add(String(decoding: $0, as: UTF8.self)) })
        handler.logLevel = level
        handler.metadata = metadata
        return Logger(label: "pinproxy") { _ in handler }
    }

    @Test("written directly: the same bytes as through swift-log, with and without handler metadata")
    func directLineIsLoggersLine() throws {
        var flows = [sampleFlow(1), sampleFlow(2, requestBody: [1], failed: true), sampleFlow(3)]
        flows[2].clientTLS = nil
        flows[0].response?.status = 0
        flows[1].response = FlowResponse(status: 1_234_567, reason: "X")
        for metadata: Logger.Metadata in [[:], ["run": "7", "a": "b"]] {
            let collected = CollectedLines()
            let logger = Self.logger(level: .info, metadata: metadata, into: collected)
            let log = FlowLog(logger)
            guard case .direct = log else { Issue.record("not the direct path: \(log)"); continue }
            var pairs: [(String, String)] = []
            for _ in 0..<3 {
                for flow in flows {
                    log.log(flow)
                    logger.info(Logger.Message(stringLiteral: FlowRecorder.line(for: flow)), source: "PinproxyProxy")
                }
                let lines = collected.take()
                pairs = stride(from: 0, to: lines.count - 1, by: 2).map { (lines[$0], lines[$0 + 1]) }
                if pairs.allSatisfy({ $0.0.prefix(24) == $0.1.prefix(24) }) { break }
            }
            #expect(pairs.count == flows.count)
            for (direct, logged) in pairs { #expect(direct == logged) }
            #expect(pairs.first?.0.hasSuffix("[PinproxyProxy] 127.0.0.1:51 GET https://api.example.test/items/1?q=a+b&x=%2F -> 0 (profile forge)\n") == true)
            #expect(pairs.dropFirst().first?.0.contains(" -> 1234567 (502: ") == true)
        }
    }

    @Test("above info nothing is written; a provider or another handler goes through the logger")
    func levelsAndOtherHandlers() {
        let collected = CollectedLines()
        let quiet = FlowLog(Self.logger(level: .notice, into: collected))
        guard case .off = quiet else { Issue.record("\(quiet)"); return }
        quiet.log(sampleFlow(1))
        #expect(collected.take().isEmpty)

        let provided = Logger.MetadataProvider { ["request": "9"] }
        let handler = LogLineHandler(label: "pinproxy", metadataProvider: provided,
                                     output: { collected.add(String(decoding: $0, as: UTF8.self)) })
        let withProvider = FlowLog(Logger(label: "pinproxy") { _ in handler })
        guard case .logger = withProvider else { Issue.record("\(withProvider)"); return }
        withProvider.log(sampleFlow(1))
        let line = collected.take().first ?? ""
        #expect(line.contains(" info pinproxy: request=9 [PinproxyProxy] 127.0.0.1:51 GET "), "\(line)")

        let theirs = CollectedLines()
        let stream = FlowLog(Logger(label: "pinproxy") { label in
            StreamLogHandler(label: label, stream: CollectingStream(collected: theirs), metadataProvider: nil)
        })
        guard case .logger = stream else { Issue.record("\(stream)"); return }
        stream.log(sampleFlow(1))
        #expect(theirs.take().joined().contains(" info pinproxy: [PinproxyProxy] 127.0.0.1:51 GET "))
    }
}
