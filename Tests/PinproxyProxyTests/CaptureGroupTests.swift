import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import Synchronization
import Testing
@testable import PinproxyProxy

/// The capture writer: encoding without JSONEncoder, groups written off the
/// recording thread, nothing lost, write errors reported.
@Suite("Capture: encoding and grouped writes")
struct CaptureGroupTests {
    /// The old path: the JSON `Codable` gives, with the files' date format.
    private func codableJSON<T: Encodable>(_ value: T) throws -> Any {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(HARFormat.timestamp(date))
        }
        return try JSONSerialization.jsonObject(with: encoder.encode(value))
    }

    private func parsed(_ write: (inout JSONOutput) -> Void) throws -> Any {
        var output = JSONOutput()
        write(&output)
        return try JSONSerialization.jsonObject(with: Data(output.bytes), options: [.fragmentsAllowed])
    }

    @Test("flows and events are written as their Codable form, and decode back to equal values",
          arguments: [false, true])
    func flowsMatchTheirCodableForm(failed: Bool) throws {
        let flow = sampleFlow(7, requestBody: bytes("{\"q\":\"ä \\\"x\\\"\"}"), responseBody: [0, 1, 2, 0xff], failed: failed)
        let fast = try parsed { $0.flow(flow) }
        let slow = try codableJSON(flow)
        #expect((fast as? NSDictionary) == (slow as? NSDictionary), "\(fast)\n\(slow)")
        let event = TLSOutcomeEvent(kind: .clientAlert, host: "h.test", port: 443, clientAddress: "[::1]:9",
                                    time: Date(timeIntervalSince1970: 1_700_000_000.25), alert: "unknown_ca", profile: "stuff")
        #expect((try parsed { $0.event(event) } as? NSDictionary) == (try codableJSON(event) as? NSDictionary))

        var line = JSONOutput()
        line.line(.flow(flow))
        line.line(.event(event))
        let lines = line.bytes.split(separator: 0x0a)
        #expect(lines.count == 2)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return try #require(formatter.date(from: text))
        }
        struct Line: Decodable { var type: String; var flow: Flow?; var event: TLSOutcomeEvent? }
        #expect(try decoder.decode(Line.self, from: Data(lines[0])).flow == flow)
        #expect(try decoder.decode(Line.self, from: Data(lines[1])).event == event)
    }

    @Test("TLS details and outcomes shared by a connection's flows are reused only while they are equal")
    func reusedPartsStayCorrect() throws {
        let a = sampleFlow(1), b = sampleFlow(2, failed: true)
        var c = sampleFlow(3)
        c.outcome?.profile = "expired"
        c.clientTLS?.profile = "expired"
        var output = JSONOutput()
        for flow in [a, a, b, a, c, c] { output.line(.flow(flow)) }
        let lines = output.bytes.split(separator: 0x0a)
        #expect(lines.count == 6)
        for (line, flow) in zip(lines, [a, a, b, a, c, c]) {
            let fast = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
            #expect((fast?["flow"] as? NSDictionary) == (try codableJSON(flow) as? NSDictionary))
        }
    }

    @Test("strings are escaped as JSON requires, whatever they hold")
    func stringsAreEscaped() throws {
        let samples = ["", "plain", "quote \" backslash \\ slash /", "tab\tnewline\ncr\r", "\u{0}\u{1}\u{1f}\u{7f}",
                       "ünïcödé ✓ 🚀", String(repeating: "long ", count: 1000) + "\"end\"",
                       "abcdefgh\u{1}ijklmnop\"qrstuvwx\\yz0123456\u{1f}", "éééééééé\u{0}ñ\t", "12345678\n"]
        for sample in samples {
            #expect(try parsed { $0.string(sample) } as? String == sample)
        }
    }

    @Test("numbers and dates are valid JSON and read back as written")
    func numbersAndDates() throws {
        for value in [0, 7, 10, -1, 42, Int.max, Int.min, 1_234_567_890] {
            #expect((try parsed { $0.number(value) } as? NSNumber)?.int64Value == Int64(value))
        }
        for value in [0.0, 0.5, -0.5, -1.0, 3.25, 10, 123456.789, 1e21] {
            #expect((try parsed { $0.number(value) } as? NSNumber)?.doubleValue == value)
        }
        // Milliseconds to the microsecond.
        for (value, written) in [(0.1234567, 0.123), (1e-7, 0), (-0.0004, 0), (2.0996, 2.1)] {
            #expect((try parsed { $0.number(value) } as? NSNumber)?.doubleValue == written)
        }
        #expect((try parsed { $0.number(Double.nan) } as? NSNumber)?.doubleValue == -1)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for seconds in [0.0, 1_700_000_000, 1_700_000_000.999, 1_764_000_000.0625, -86_400.5, 4_102_444_800.001] {
            let date = Date(timeIntervalSince1970: seconds)
            let text = try #require(try parsed { $0.date(date) } as? String)
            let back = try #require(formatter.date(from: text), "\(text)")
            #expect(abs(back.timeIntervalSince(date)) < 0.001, "\(text) for \(seconds)")
            #expect(text.count == 24 && text.hasSuffix("Z"), "\(text)")
        }
    }

    @Test("many flows recorded at once from many threads: every one in both files, written in groups")
    func manyAtOnceLoseNothing() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let harURL = directory.appendingPathComponent("many.har"), linesURL = directory.appendingPathComponent("many.jsonl")
        let recorder = CaptureRecorder(sinks: [try HARWriter(path: harURL.path), try JSONLinesWriter(path: linesURL.path)],
                                       recent: RecentCapture(flowCapacity: 10))
        let threads = 8, perThread = 1500
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread { recorder.record(sampleFlow(thread * 100_000 + index)) }
        }
        recorder.flush()
        let entries = try validateHAR(try readJSON(harURL))
        let expected = Set((0..<threads).flatMap { t in (0..<perThread).map { "flow-\(t * 100_000 + $0)" } })
        #expect(Set(entries.compactMap { ($0["_pinproxy"] as? [String: Any])?["id"] as? String }) == expected)
        #expect(entries.count == threads * perThread)
        let statistics = recorder.statistics
        #expect(statistics.flows == threads * perThread)
        #expect(statistics.lost == 0)
        // Grouped: fewer writes than records.
        #expect(statistics.groups < threads * perThread, "\(statistics)")
        recorder.close()
        let lines = try String(contentsOf: linesURL, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == threads * perThread)
    }

    @Test("the HAR is a valid archive after every group, while recording goes on")
    func validAfterEveryGroup() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("groups.har")
        let recorder = CaptureRecorder(sinks: [try HARWriter(path: url.path)])
        var total = 0
        for round in 1...20 {
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<round { recorder.record(sampleFlow(round * 1000 + thread * 100 + index)) }
            }
            total += 4 * round
            recorder.flush()
            #expect(try validateHAR(try readJSON(url)).count == total)
        }
        recorder.close()
    }

    @Test("a record queued past the high-water mark is written by the recording thread, in order")
    func overflowWritesInOrder() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("order.jsonl")
        let writer = CaptureWriterQueue(sinks: [try JSONLinesWriter(path: url.path)], groupWindow: .milliseconds(50),
                                        highWater: 7, logger: nil)
        for index in 0..<500 { writer.enqueue(.flow(sampleFlow(index))) }
        writer.close()
        let ids = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { line in
            ((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["flow"] as? [String: Any])?["id"] as? String
        }
        #expect(ids == (0..<500).map { "flow-\($0)" })
    }

    @Test("a write error is logged once and counted; the recorder keeps going and says when writing works again")
    func writeErrorsAreReported() throws {
        let lines = Locked<[String]>([])
        var logger = Logger(label: "capture-test") { _ in CollectingLogHandler(lines: lines) }
        logger.logLevel = .info
        let full = try JSONLinesWriter(path: "/dev/full", truncate: false)
        let flaky = FlakySink()
        let recorder = CaptureRecorder(sinks: [full, flaky], logger: logger)
        flaky.failing.withLock { $0 = true }
        for index in 0..<50 { recorder.record(sampleFlow(index)) }
        recorder.flush()
        var statistics = recorder.statistics
        #expect(statistics.lost == 100, "\(statistics)")
        #expect(statistics.lastError?.contains("flaky sink refuses") == true, "\(statistics)")
        let errors = lines.withLock { $0 }.filter { $0.hasPrefix("error") }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.contains { $0.contains("/dev/full") && $0.contains("No space left on device") }, "\(errors)")
        flaky.failing.withLock { $0 = false }
        recorder.record(sampleFlow(99))
        recorder.flush()
        statistics = recorder.statistics
        #expect(flaky.written.withLock { $0 } == 1)
        #expect(lines.withLock { $0 }.contains { $0.hasPrefix("notice") && $0.contains("flaky") && $0.contains("50 record(s) were lost") })
        recorder.close()
        recorder.record(sampleFlow(100))
        #expect(recorder.statistics.lostAfterClose == 1)
    }
}

/// A sink that fails while told to.
private final class FlakySink: CaptureSink {
    let failing = Mutex(false)
    let written = Mutex(0)
    var name: String { "flaky" }
    func write(_ records: [CaptureRecord]) throws(PinproxyError) {
        if failing.withLock({ $0 }) { throw PinproxyError(.io, "flaky sink refuses") }
        written.withLock { $0 += records.count }
    }
    func close() {}
}
