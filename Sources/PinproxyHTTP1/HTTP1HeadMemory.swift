/// The previous head read on a connection, kept so that lines of the next
/// head that repeat it reuse what was parsed instead of parsing it again.
///
/// Keep-alive connections repeat themselves: a client sends much the same
/// request each time, and a server's response heads differ in `Date` at
/// most. Start lines and field lines are parsed from their bytes alone, so a
/// line with the same bytes as the remembered one parses to the same result;
/// that result is reused, sharing its strings instead of building new ones.
/// A head whose field lines all repeat, in order, shares the previous head's
/// field storage and costs no allocation at all, and a field section that
/// repeats byte for byte is recognised with one comparison.
///
/// Lines are remembered as they arrived, line endings included (a line
/// ending in LF alone is a different line from the same one ending in CRLF).
/// Only small heads are remembered, so a connection holds at most a few KiB
/// for this, whatever its peer sends.
struct HTTP1HeadMemory: Sendable {
    /// The most bytes of start line, and of field lines, remembered.
    static let maxBytes = 4 * 1024
    /// The most fields remembered.
    static let maxFields = 64

    private var startLineBytes: [UInt8] = []
    private var startLine: HTTP1HeadReader.StartLine?

    /// The previous head's fields; its field lines back to back, each with
    /// its LF, and where each ends; and the empty line that ended it (empty
    /// when the section is not remembered).
    private var previous = HTTPHeaders()
    private var previousLines: [UInt8] = []
    private var previousEnds: [Int] = []
    private var previousEmptyLine: [UInt8] = []
    /// The longest line of the previous section, its line ending left out.
    private var previousLongestLine = 0
    /// The first line of the previous section that does not spell its field
    /// as `name: value` CRLF (`Int.max` when every line does).
    private var previousFirstOdd = Int.max

    /// The head being read. While its lines repeat the previous head's, in
    /// order, they are only counted (``repeated``); from the first line that
    /// differs on, fields and lines are collected here.
    private var fields = HTTPHeaders()
    private var lines: [UInt8] = []
    private var ends: [Int] = []
    private var repeated = 0
    private var diverged = false
    /// The first collected line that may not spell its field as `name: value` CRLF.
    private var firstOdd = Int.max
    /// Whether the head being read is still small enough to remember.
    private var rememberable = true

    /// The number of fields of the head being read.
    var count: Int { diverged ? fields.count : repeated }

    // MARK: Start lines

    /// The parsed start line, when `line` is the remembered one byte for byte.
    @inline(__always)
    func startLine(matching line: UnsafeBufferPointer<UInt8>) -> HTTP1HeadReader.StartLine? {
        guard let startLine, startLineBytes.withUnsafeBufferPointer({ HTTP1Bytes.equals($0, line) }) else { return nil }
        return startLine
    }

    /// Remembers that `line` parsed to `startLine`.
    mutating func remember(_ startLine: HTTP1HeadReader.StartLine, from line: UnsafeBufferPointer<UInt8>) {
        startLineBytes.removeAll(keepingCapacity: true)
        guard line.count <= Self.maxBytes else {
            self.startLine = nil
            return
        }
        startLineBytes.append(contentsOf: line)
        self.startLine = startLine
    }

    // MARK: Whole sections

    /// When `bytes` begin with the previous head's whole field section, byte
    /// for byte up to and including its empty line: its size, the count of
    /// its fields and its longest line, which are all the parser needs to
    /// check its limits again. Only at the start of a field section.
    func repeatedSection(at bytes: UnsafeBufferPointer<UInt8>) -> (size: Int, fields: Int, longestLine: Int)? {
        guard count == 0, !previousEmptyLine.isEmpty else { return nil }
        let fieldBytes = previousLines.count
        let size = fieldBytes + previousEmptyLine.count
        guard bytes.count >= size else { return nil }
        let same = previousLines.withUnsafeBufferPointer { lines in
            previousEmptyLine.withUnsafeBufferPointer { empty in
                HTTP1Bytes.equals(lines, UnsafeBufferPointer(rebasing: bytes[..<fieldBytes]))
                    && HTTP1Bytes.equals(empty, UnsafeBufferPointer(rebasing: bytes[fieldBytes..<size]))
            }
        }
        return same ? (size, previous.count, previousLongestLine) : nil
    }

    /// Takes the fields of the section ``repeatedSection(at:)`` found.
    mutating func takeRepeatedSection() { repeated = previous.count }

    /// The length of the previous head's empty line without its LF (1 for CRLF, 0 for LF).
    var emptyLineLength: Int { previousEmptyLine.count - 1 }

    // MARK: Fields

    /// Adds the field on `line` (without its line ending) to the head being
    /// read: the previous head's field when the line repeats it, else parsed.
    /// `raw` is the line as it arrived, without its LF only.
    /// Parsed fields are wire-safe (``HTTPHeaders/isWireSafe``): a name is a
    /// token and control bytes are refused in values.
    /// `reserving` is a guess of the head's field count.
    mutating func addField(_ line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>, reserving: Int) throws(HTTP1Error) {
        let index = count
        if !diverged {
            if repeats(index, raw) {
                repeated += 1
                return
            }
            diverge(reserving: max(reserving, index + 1))
            fields.addWireSafe(try parsed(line, raw: raw, at: index))
        } else if repeats(index, raw) {
            if index >= previousFirstOdd { firstOdd = min(firstOdd, index) }
            fields.addWireSafe(previous.fields[index])
        } else {
            fields.addWireSafe(try parsed(line, raw: raw, at: index))
        }
        guard rememberable else { return }
        if lines.count + raw.count + 1 > Self.maxBytes || fields.count > Self.maxFields {
            rememberable = false
            return
        }
        lines.append(contentsOf: raw)
        lines.append(Byte.lf)
        ends.append(lines.count)
    }

    /// The field on `line`, noting whether `raw` spells it as `name: value` CRLF.
    private mutating func parsed(_ line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>, at index: Int) throws(HTTP1Error) -> HTTPHeaders.Field {
        let field = try HTTP1Syntax.parseField(line)
        if !Self.spells(field, raw) { firstOdd = min(firstOdd, index) }
        return field
    }

    /// Whether `raw` (without its LF) is exactly `name: value` CR: no other
    /// whitespace, and every value byte kept as it is by the decoding.
    private static func spells(_ field: HTTPHeaders.Field, _ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        field.name.withUTF8Bytes { name in
            field.value.withUTF8Bytes { value in
                guard raw.count == name.count + 2 + value.count + 1, raw[raw.count - 1] == Byte.cr,
                      raw[name.count] == Byte.colon, raw[name.count + 1] == Byte.space else { return false }
                return HTTP1Bytes.equals(name, UnsafeBufferPointer(rebasing: raw[..<name.count]))
                    && HTTP1Bytes.equals(value, UnsafeBufferPointer(rebasing: raw[(name.count + 2)..<(raw.count - 1)]))
            }
        }
    }

    /// The fields of the head just read, which are remembered for the next
    /// head; `emptyLine` is the line that ended it, without its LF. When
    /// every line of the head was remembered and spells its field as
    /// `name: value` CRLF, the fields carry those lines
    /// (``HTTPHeaders/wireLines``), shared with the memory's own copy.
    mutating func completeHead(emptyLine: UnsafeBufferPointer<UInt8>) -> HTTPHeaders {
        guard diverged else {
            if repeated < previous.count {
                // A prefix of the previous head: remember just that much.
                previous = HTTPHeaders(wireSafeFields: Array(previous.fields[..<repeated]))
                previousLines.removeSubrange((repeated == 0 ? 0 : previousEnds[repeated - 1])...)
                previousEnds.removeSubrange(repeated...)
                previousLongestLine = longestLine(previousLines, previousEnds)
                if previousFirstOdd >= repeated { previous.keepReceivedLines(previousLines) }
            }
            repeated = 0
            rememberEmptyLine(emptyLine)
            return previous
        }
        defer {
            fields = HTTPHeaders()
            lines.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            diverged = false
            rememberable = true
            firstOdd = Int.max
        }
        if rememberable {
            swap(&previousLines, &lines)
            swap(&previousEnds, &ends)
            previousFirstOdd = firstOdd
            if firstOdd >= fields.count { fields.keepReceivedLines(previousLines) }
            previous = fields
            previousLongestLine = longestLine(previousLines, previousEnds)
            rememberEmptyLine(emptyLine)
        } else {
            previous = HTTPHeaders()
            previousLines.removeAll(keepingCapacity: true)
            previousEnds.removeAll(keepingCapacity: true)
            previousEmptyLine.removeAll(keepingCapacity: true)
            previousFirstOdd = Int.max
        }
        return fields
    }

    private mutating func rememberEmptyLine(_ emptyLine: UnsafeBufferPointer<UInt8>) {
        // Mostly the same CRLF as last time.
        if previousEmptyLine.count == emptyLine.count + 1, emptyLine.last == previousEmptyLine.first { return }
        previousEmptyLine.removeAll(keepingCapacity: true)
        previousEmptyLine.append(contentsOf: emptyLine)
        previousEmptyLine.append(Byte.lf)
    }

    /// Whether `raw` has the same bytes as the previous head's field line `index` (without its LF).
    @inline(__always)
    private func repeats(_ index: Int, _ raw: UnsafeBufferPointer<UInt8>) -> Bool {
        guard index < previousEnds.count else { return false }
        let start = index == 0 ? 0 : previousEnds[index - 1]
        let end = previousEnds[index] - 1
        guard end - start == raw.count else { return false }
        return previousLines.withUnsafeBufferPointer { HTTP1Bytes.equals(UnsafeBufferPointer(rebasing: $0[start..<end]), raw) }
    }

    /// The first line that differs: the repeated ones become collected fields and lines.
    private mutating func diverge(reserving: Int) {
        diverged = true
        firstOdd = previousFirstOdd < repeated ? previousFirstOdd : Int.max
        fields.reserveCapacity(reserving)
        for index in 0..<repeated { fields.addWireSafe(previous.fields[index]) }
        let prefix = repeated == 0 ? 0 : previousEnds[repeated - 1]
        lines.append(contentsOf: previousLines[..<prefix])
        ends.append(contentsOf: previousEnds[..<repeated])
        repeated = 0
    }

    /// The longest of `lines` (ending where `ends` say), without CRLF or LF.
    private func longestLine(_ lines: [UInt8], _ ends: [Int]) -> Int {
        var longest = 0
        var start = 0
        for end in ends {
            let length = end - start - 1 - (end - 2 >= start && lines[end - 2] == Byte.cr ? 1 : 0)
            longest = max(longest, length)
            start = end
        }
        return longest
    }
}
