import Foundation

/// JSON written straight into a growable byte buffer, for the capture files.
///
/// The capture writers encode every flow twice (a HAR entry and a JSON line)
/// and used `JSONEncoder`, which builds a tree of boxed values per record and
/// then serializes it: under `--har --events` that cost about 1.1 million
/// instructions per request, 15 times the proxying itself. Writing the bytes
/// directly, with unchecked stores into memory reserved ahead and kept from
/// one group of records to the next, costs a small fraction of that (see
/// docs/proxy.md, "Capture cost").
///
/// Non-copyable: it owns its memory and frees it in `deinit`. Commas are
/// placed by the writer: every value and key goes through ``separate()``,
/// so callers only open and close containers and name keys.
struct JSONOutput: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0
    /// Whether the next value is the first in its container (no comma before it).
    private var first = true
    /// Whether a key was just written, so the next value follows its colon.
    private var afterKey = false
    /// The last values of each kind written and their bytes, replayed while
    /// the next flow repeats them (see ``JSONReplay``).
    let replay = JSONReplay()

    init(capacity: Int = 1024) {
        self.capacity = max(64, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// A copy of the document so far.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Calls `body` with the document so far, without copying it.
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Empties the buffer, keeping its memory.
    mutating func reset() {
        count = 0
        nextDocument()
    }

    /// Starts a new top-level value after the bytes so far (the next line,
    /// the next entry after a separator written with ``raw(_:)``).
    mutating func nextDocument() {
        first = true
        afterKey = false
    }

    // MARK: Storage

    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Stores one byte; the caller reserved room.
    @inline(__always)
    private mutating func store(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    private mutating func append(_ byte: UInt8) {
        reserve(1)
        store(byte)
    }

    private mutating func append(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let source = buffer.baseAddress, buffer.count > 0 else { return }
        reserve(buffer.count)
        (base + count).update(from: source, count: buffer.count)
        count += buffer.count
    }

    /// Appends bytes that are not a JSON value (a newline between lines, a file's framing).
    mutating func raw(_ text: [UInt8]) {
        text.withUnsafeBufferPointer { append($0) }
    }

    // MARK: Structure

    private mutating func separate() {
        if afterKey {
            afterKey = false
        } else if !first {
            append(UInt8(ascii: ","))
        }
        first = false
    }

    mutating func beginObject() {
        separate()
        append(UInt8(ascii: "{"))
        first = true
    }

    mutating func endObject() {
        append(UInt8(ascii: "}"))
        first = false
    }

    mutating func beginArray() {
        separate()
        append(UInt8(ascii: "["))
        first = true
    }

    mutating func endArray() {
        append(UInt8(ascii: "]"))
        first = false
    }

    /// A member name; the next value written is its value. Names are ASCII
    /// identifiers chosen in this module, so they need no escaping.
    mutating func key(_ name: StaticString) {
        separate()
        reserve(name.utf8CodeUnitCount + 3)
        store(UInt8(ascii: "\""))
        (base + count).update(from: name.utf8Start, count: name.utf8CodeUnitCount)
        count += name.utf8CodeUnitCount
        store(UInt8(ascii: "\""))
        store(UInt8(ascii: ":"))
        afterKey = true
    }

    // MARK: Values

    mutating func string(_ value: String) {
        separate()
        var value = value
        value.withUTF8 { escape($0) }
    }

    private static let hex: StaticString = "0123456789abcdef"

    /// The string in quotes, with quotes, backslashes and control
    /// characters escaped (RFC 8259 section 7) and everything else copied,
    /// run by run.
    private mutating func escape(_ utf8: UnsafeBufferPointer<UInt8>) {
        reserve(utf8.count + 2)
        store(UInt8(ascii: "\""))
        guard let source = utf8.baseAddress else {
            store(UInt8(ascii: "\""))
            return
        }
        let end = utf8.count
        var index = 0
        while index < end {
            let start = index
            // Eight bytes at a time while none needs escaping, then byte by byte.
            while index + 8 <= end, !JSONOutput.needsEscape(UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)) {
                index += 8
            }
            while index < end {
                let byte = source[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                index += 1
            }
            if index > start {
                (base + count).update(from: source + start, count: index - start)
                count += index - start
            }
            guard index < end else { break }
            let byte = source[index]
            index += 1
            // At most six bytes for this one, and room kept for the rest and the closing quote.
            reserve(6 + end - index + 1)
            store(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): store(byte)
            case 0x0a: store(UInt8(ascii: "n"))
            case 0x0d: store(UInt8(ascii: "r"))
            case 0x09: store(UInt8(ascii: "t"))
            case 0x08: store(UInt8(ascii: "b"))
            case 0x0c: store(UInt8(ascii: "f"))
            default:
                store(UInt8(ascii: "u"))
                store(UInt8(ascii: "0"))
                store(UInt8(ascii: "0"))
                store(JSONOutput.hex.utf8Start[Int(byte >> 4)])
                store(JSONOutput.hex.utf8Start[Int(byte & 0x0f)])
            }
        }
        store(UInt8(ascii: "\""))
    }

    /// Whether any of eight bytes is below 0x20, a quote or a backslash
    /// (the classic "has a zero byte" test; a false positive only sends
    /// those bytes through the byte-by-byte loop).
    @inline(__always)
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let control = (word &- ones &* 0x20) & ~word & highs != 0
        return control || hasZero(word ^ (ones &* 0x22)) || hasZero(word ^ (ones &* 0x5c))
    }

    mutating func number(_ value: Int) {
        separate()
        reserve(20)
        if value < 0 { store(UInt8(ascii: "-")) }
        digits(value.magnitude, width: 1)
    }

    /// `value` in decimal, at least `width` digits (zero-padded); the caller reserved room.
    private mutating func digits(_ value: UInt, width: Int) {
        var length = 1, rest = value / 10
        while rest > 0 {
            length += 1
            rest /= 10
        }
        length = max(length, width)
        var remaining = value
        for position in stride(from: count + length - 1, through: count, by: -1) {
            base[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        }
        count += length
    }

    /// A number to a thousandth (`10`, `0.25`, `-1`, `3.142`): capture
    /// numbers are milliseconds, so that is a microsecond, and it spares
    /// the shortest-round-trip conversion. JSON has no infinities or NaN:
    /// those are written as -1, HAR's "not applicable".
    mutating func number(_ value: Double) {
        guard value.isFinite else { return number(-1) }
        let thousandths = value * 1000
        guard abs(thousandths) < 9e15 else {
            separate()
            var text = value.description
            text.withUTF8 { append($0) }
            return
        }
        separate()
        reserve(24)
        // Rounded half away from zero, as `rounded()` does, but by adding a
        // half and truncating: a conversion instruction, not a call into libm.
        let scaled = Int64(thousandths + (thousandths < 0 ? -0.5 : 0.5))
        if scaled < 0 { store(UInt8(ascii: "-")) }
        digits(UInt(scaled.magnitude / 1000), width: 1)
        var fraction = UInt(scaled.magnitude % 1000)
        guard fraction > 0 else { return }
        var width = 3
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        store(UInt8(ascii: "."))
        digits(fraction, width: width)
    }

    mutating func bool(_ value: Bool) {
        separate()
        let text: StaticString = value ? "true" : "false"
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// A date as ISO 8601 in UTC with milliseconds, `2026-11-24T10:11:31.123Z`:
    /// the form `Date.ISO8601FormatStyle(includingFractionalSeconds: true)`
    /// writes, built from `gmtime_r` instead of a formatter per call, once
    /// per second (the dates of a group mostly share their second).
    mutating func date(_ date: Date) {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 2.5e14 else {
            separate()
            var text = "\"" + HARFormat.timestamp(date) + "\""
            text.withUTF8 { append($0) }
            return
        }
        let total = Int64(milliseconds)
        let second = total / 1000
        if second != replay.dateSecond { replay.datePrefix = JSONOutput.datePrefix(second: second) }
        replay.dateSecond = second
        writeRecorded(replay.datePrefix)
        reserve(5)
        digits(UInt(total % 1000), width: 3)
        store(UInt8(ascii: "Z"))
        store(UInt8(ascii: "\""))
    }

    /// `"2026-11-24T10:11:31.`: a date's opening quote and everything before its milliseconds.
    private static func datePrefix(second: Int64) -> [UInt8] {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var output = JSONOutput(capacity: 64)
        output.reserve(21)
        output.store(UInt8(ascii: "\""))
        output.digits(UInt(parts.tm_year + 1900), width: 4)
        output.store(UInt8(ascii: "-"))
        output.digits(UInt(parts.tm_mon + 1), width: 2)
        output.store(UInt8(ascii: "-"))
        output.digits(UInt(parts.tm_mday), width: 2)
        output.store(UInt8(ascii: "T"))
        output.digits(UInt(parts.tm_hour), width: 2)
        output.store(UInt8(ascii: ":"))
        output.digits(UInt(parts.tm_min), width: 2)
        output.store(UInt8(ascii: ":"))
        output.digits(UInt(parts.tm_sec), width: 2)
        output.store(UInt8(ascii: "."))
        return output.bytes
    }

    /// Writes one value (or a run of members, starting with a key) through
    /// `write`, and puts the bytes written into `bytes` (its memory kept).
    mutating func recording(into bytes: inout [UInt8], _ write: (inout JSONOutput) -> Void) {
        separate()
        let start = count
        afterKey = true  // the separator is written; the value's own must not be
        write(&self)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: UnsafeBufferPointer(start: base + start, count: count - start))
    }

    /// Bytes written before by ``recording(into:_:)``, as the next value (or run of members).
    mutating func writeRecorded(_ bytes: [UInt8]) {
        separate()
        bytes.withUnsafeBufferPointer { append($0) }
        first = false
    }

    // Optional members are left out when nil, as `encodeIfPresent` does.

    mutating func field(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    mutating func field(_ name: StaticString, _ value: Int?) {
        guard let value else { return }
        key(name)
        number(value)
    }

    mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        number(value)
    }

    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    mutating func field(_ name: StaticString, _ value: Date?) {
        guard let value else { return }
        key(name)
        date(value)
    }
}
