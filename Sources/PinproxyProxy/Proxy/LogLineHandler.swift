import Foundation
import Logging
import Synchronization

/// The daemon's log handler: one line per message on standard error, in
/// swift-log's `StreamLogHandler` format
/// (`2026-11-24T11:38:43+0000 info pinproxy: [PinproxyProxy] message`).
///
/// Written for the line `serve` logs for every flow: `StreamLogHandler`
/// formats the time with `localtime` and `strftime` for every line, builds
/// it through string interpolation and writes it through a locked `FILE`,
/// about 11,500 user-space instructions a line, an eighth of a proxied
/// keep-alive request. Here the time's text is kept for the second it
/// names, the line is gathered in one byte array and handed whole to
/// ``LogLineOutput``, which writes the lines of an event loop's batch in
/// one `write(2)` (whole lines, in order, whatever thread logs them):
/// about 2,300 instructions a line.
public struct LogLineHandler: LogHandler {
    /// The least severe level written.
    public var logLevel: Logger.Level = .info
    /// Metadata added to every line, as `StreamLogHandler` adds it.
    public var metadataProvider: Logger.MetadataProvider?
    /// This handler's metadata, on every line it writes.
    public var metadata = Logger.Metadata() {
        didSet { prettyMetadata = LogLineHandler.prettify(metadata) }
    }

    private let label: String
    private let output: @Sendable ([UInt8]) -> Void
    private var prettyMetadata: String?

    /// A handler writing to standard error.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.init(label: label, metadataProvider: metadataProvider, output: LogLineHandler.writeToStandardError)
    }

    /// A handler handing each finished line (newline included) to `output`.
    init(label: String, metadataProvider: Logger.MetadataProvider? = nil, output: @escaping @Sendable ([UInt8]) -> Void) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.output = output
    }

    /// One item of ``metadata``.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes `event` as one line.
    public func log(event: LogEvent) {
        var pretty = prettyMetadata
        let provided = metadataProvider?.get() ?? [:]
        if !provided.isEmpty || !(event.metadata ?? [:]).isEmpty || event.error != nil {
            var merged = metadata
            merged.merge(provided) { _, new in new }
            merged.merge(event.metadata ?? [:]) { _, new in new }
            if let error = event.error {
                merged["error.message"] = "\(error)"
                merged["error.type"] = "\(String(reflecting: type(of: error)))"
            }
            pretty = LogLineHandler.prettify(merged)
        }
        let message = event.message.description
        output(line(level: event.level, pretty: pretty, source: event.source, messageLength: message.utf8.count) {
            $0.appendUTF8(message)
        })
    }

    /// Writes the line ``log(event:)`` writes for a message of this level,
    /// source and text, the text appended as bytes by `message`: no
    /// `String`, `Logger.Message` or `LogEvent` is built. For the line of
    /// every flow (``FlowLog``); only for a handler without a
    /// ``metadataProvider``, whose metadata this line could not ask for.
    func write(level: Logger.Level, source: String, messageLength: Int, message: (inout [UInt8]) -> Void) {
        output(line(level: level, pretty: prettyMetadata, source: source, messageLength: messageLength, message))
    }

    private func line(level: Logger.Level, pretty: String?, source: String, messageLength: Int,
                      _ message: (inout [UInt8]) -> Void) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(64 + label.utf8.count + (pretty?.utf8.count ?? 0) + source.utf8.count + messageLength)
        line.appendUTF8(LogLineHandler.timestamp())
        line.append(UInt8(ascii: " "))
        line.appendUTF8(level.rawValue)
        if !label.isEmpty {
            line.append(UInt8(ascii: " "))
            line.appendUTF8(label)
        }
        line.append(UInt8(ascii: ":"))
        if let pretty {
            line.append(UInt8(ascii: " "))
            line.appendUTF8(pretty)
        }
        line.appendUTF8(" [")
        line.appendUTF8(source)
        line.appendUTF8("] ")
        message(&line)
        line.append(UInt8(ascii: "\n"))
        return line
    }

    private static func prettify(_ metadata: Logger.Metadata) -> String? {
        if metadata.isEmpty { return nil }
        return metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    /// The local time as `%Y-%m-%dT%H:%M:%S%z`, formatted once per second.
    static func timestamp() -> String {
        let now = time(nil)
        if let kept = lastTimestamp.withLock({ $0.second == now ? $0.text : nil }) { return kept }
        var seconds = now
        var local = tm()
        guard localtime_r(&seconds, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        let text = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        lastTimestamp.withLock { $0 = (now, text) }
        return text
    }

    private static let lastTimestamp = Mutex<(second: time_t, text: String)>((-1, ""))

    private static let writeToStandardError: @Sendable ([UInt8]) -> Void = { LogLineOutput.standardError.write($0) }

    /// Writes the lines still waiting for the end of an event loop's batch
    /// (``LogLineOutput``); the process does this at exit by itself.
    public static func flushStandardError() { LogLineOutput.standardError.flush() }
}

extension [UInt8] {
    /// Appends a string's UTF-8 bytes in one copy.
    mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
