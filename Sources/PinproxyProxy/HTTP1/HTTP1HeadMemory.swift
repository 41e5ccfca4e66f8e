/// The previous head read on a connection, kept so that lines of the next
/// head that repeat it reuse what was parsed instead of parsing it again.
///
/// Keep-alive connections repeat themselves: a client sends much the same
/// request each time, and a server's response heads differ in `Date` at
/// most. Start lines and field lines are parsed from their bytes alone, so a
/// line with the same bytes as the remembered one parses to the same result;
/// that result is reused, sharing its strings instead of building new ones.
/// A head whose field lines all repeat, in order, shares the previous head's
/// field storage and costs no allocation at all.
///
/// Only small heads are remembered, so a connection holds at most a few KiB
/// for this, whatever its peer sends.
struct HTTP1HeadMemory: Sendable {
    /// The most bytes of start line, and of field lines, remembered.
    static let maxBytes = 4 * 1024
    /// The most fields remembered.
    static let maxFields = 64

    private var startLineBytes: [UInt8] = []
    private var startLine: HTTP1Parser.StartLine?

    /// The previous head's fields, and its field lines back to back with
    /// where each one ends.
    private var previous = HTTPHeaders()
    private var previousLines: [UInt8] = []
    private var previousEnds: [Int] = []

    /// The head being read. While its lines repeat the previous head's, in
    /// order, they are only counted (``repeated``); from the first line that
    /// differs on, fields and lines are collected here.
    private var fields = HTTPHeaders()
    private var lines: [UInt8] = []
    private var ends: [Int] = []
    private var repeated = 0
    private var diverged = false
    /// Whether the head being read is still small enough to remember.
    private var rememberable = true

    /// The number of fields of the head being read.
    var count: Int { diverged ? fields.count : repeated }

    // MARK: Start lines

    /// The parsed start line, when `line` is the remembered one byte for byte.
    @inline(__always)
    func startLine(matching line: UnsafeBufferPointer<UInt8>) -> HTTP1Parser.StartLine? {
        guard let startLine, startLineBytes.withUnsafeBufferPointer({ HTTP1Bytes.equals($0, line) }) else { return nil }
        return startLine
    }

    /// Remembers that `line` parsed to `startLine`.
    mutating func remember(_ startLine: HTTP1Parser.StartLine, from line: UnsafeBufferPointer<UInt8>) {
        startLineBytes.removeAll(keepingCapacity: true)
        guard line.count <= Self.maxBytes else {
            self.startLine = nil
            return
        }
        startLineBytes.append(contentsOf: line)
        self.startLine = startLine
    }

    // MARK: Fields

    /// Adds the field on `line` (without its line ending) to the head being
    /// read: the previous head's field when the line repeats it, else parsed.
    /// Parsed fields are wire-safe (``HTTPHeaders/isWireSafe``): a name is a
    /// token and control bytes are refused in values.
    /// `reserving` is a guess of the head's field count.
    mutating func addField(_ line: UnsafeBufferPointer<UInt8>, reserving: Int) throws(HTTP1Error) {
        let index = count
        if !diverged {
            if repeats(index, line) {
                repeated += 1
                return
            }
            diverge(reserving: max(reserving, index + 1))
            fields.addWireSafe(try HTTP1Syntax.parseField(line))
        } else if repeats(index, line) {
            fields.addWireSafe(previous.fields[index])
        } else {
            fields.addWireSafe(try HTTP1Syntax.parseField(line))
        }
        guard rememberable else { return }
        if lines.count + line.count > Self.maxBytes || fields.count > Self.maxFields {
            rememberable = false
            return
        }
        lines.append(contentsOf: line)
        ends.append(lines.count)
    }

    /// The fields of the head just read, which are remembered for the next head.
    mutating func completeHead() -> HTTPHeaders {
        defer {
            fields = HTTPHeaders()
            lines.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            repeated = 0
            diverged = false
            rememberable = true
        }
        guard diverged else {
            if repeated < previous.count {
                // A prefix of the previous head: remember just that much.
                previous = HTTPHeaders(wireSafeFields: Array(previous.fields[..<repeated]))
                previousLines.removeSubrange((repeated == 0 ? 0 : previousEnds[repeated - 1])...)
                previousEnds.removeSubrange(repeated...)
            }
            return previous
        }
        if rememberable {
            previous = fields
            swap(&previousLines, &lines)
            swap(&previousEnds, &ends)
        } else {
            previous = HTTPHeaders()
            previousLines.removeAll(keepingCapacity: true)
            previousEnds.removeAll(keepingCapacity: true)
        }
        return fields
    }

    /// Whether `line` has the same bytes as the previous head's field line `index`.
    @inline(__always)
    private func repeats(_ index: Int, _ line: UnsafeBufferPointer<UInt8>) -> Bool {
        guard index < previousEnds.count else { return false }
        let start = index == 0 ? 0 : previousEnds[index - 1]
        let end = previousEnds[index]
        guard end - start == line.count else { return false }
        return previousLines.withUnsafeBufferPointer { HTTP1Bytes.equals(UnsafeBufferPointer(rebasing: $0[start..<end]), line) }
    }

    /// The first line that differs: the repeated ones become collected fields and lines.
    private mutating func diverge(reserving: Int) {
        diverged = true
        fields.reserveCapacity(reserving)
        for index in 0..<repeated { fields.addWireSafe(previous.fields[index]) }
        let prefix = repeated == 0 ? 0 : previousEnds[repeated - 1]
        lines.append(contentsOf: previousLines[..<prefix])
        ends.append(contentsOf: previousEnds[..<repeated])
        repeated = 0
    }
}
