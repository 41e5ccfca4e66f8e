import Foundation

/// JSON written straight into a reusable byte buffer, for the capture files.
///
/// The capture writers encode every flow twice (a HAR entry and a JSON line)
/// and used `JSONEncoder`, which builds a tree of boxed values per record and
/// then serializes it: under `--har --events` that was most of the proxy's
/// CPU per request. Writing the bytes directly, into a buffer kept from one
/// group of records to the next, costs a small fraction of that (see
/// docs/proxy.md, "Capture cost").
///
/// Commas are placed by the writer: every value and key goes through
/// ``separate()``, so callers only open and close containers and name keys.
struct JSONOutput {
    /// The document so far.
    var bytes: [UInt8]
    /// Whether the next value is the first in its container (no comma before it).
    private var first = true
    /// Whether a key was just written, so the next value follows its colon.
    private var afterKey = false

    init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its storage.
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        first = true
        afterKey = false
    }

    /// Starts a new top-level value after the bytes so far (the next line,
    /// the next entry after a separator written with ``raw(_:)``).
    mutating func nextDocument() {
        first = true
        afterKey = false
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
        } else if !first {
            bytes.append(UInt8(ascii: ","))
        }
        first = false
    }

    /// Appends bytes that are not a JSON value (a newline between lines, a file's framing).
    mutating func raw(_ text: [UInt8]) {
        bytes.append(contentsOf: text)
    }

    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        first = true
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// A member name; the next value written is its value. Names are ASCII
    /// identifiers chosen in this module, so they need no escaping.
    mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { escape($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Copies runs of bytes that need no escaping in one go; escapes quotes,
    /// backslashes and control characters (RFC 8259 section 7).
    private mutating func escape(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
            start = index + 1
            bytes.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
            case 0x0a: bytes.append(UInt8(ascii: "n"))
            case 0x0d: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0c: bytes.append(UInt8(ascii: "f"))
            default:
                bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          JSONOutput.hex[Int(byte >> 4)], JSONOutput.hex[Int(byte & 0x0f)]])
            }
        }
        if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
    }

    mutating func number(_ value: Int) {
        separate()
        if value >= 0 && value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var magnitude = value.magnitude
        // 24 bytes hold the 20 digits and sign of any Int64.
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var position = buffer.count
            repeat {
                position -= 1
                buffer[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                position -= 1
                buffer[position] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[position...]))
        }
    }

    /// A finite number in Swift's shortest round-tripping form (`10.0`,
    /// `0.25`, `1e-07`: all valid JSON); JSON has no infinities or NaN, so
    /// those are written as -1, HAR's "not applicable".
    mutating func number(_ value: Double) {
        guard value.isFinite else { return number(-1) }
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? JSONOutput.trueBytes : JSONOutput.falseBytes)
    }

    mutating func null() {
        separate()
        bytes.append(contentsOf: JSONOutput.nullBytes)
    }

    private static let trueBytes: [UInt8] = Array("true".utf8)
    private static let falseBytes: [UInt8] = Array("false".utf8)
    private static let nullBytes: [UInt8] = Array("null".utf8)

    /// A date as ISO 8601 in UTC with milliseconds, `2026-11-24T10:11:31.123Z`:
    /// the form `Date.ISO8601FormatStyle(includingFractionalSeconds: true)`
    /// writes, built from `gmtime_r` instead of a formatter per call.
    mutating func date(_ date: Date) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        appendTimestamp(date)
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendTimestamp(_ date: Date) {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, abs(milliseconds) < 2.5e14 else {
            bytes.append(contentsOf: HARFormat.timestamp(date).utf8)
            return
        }
        let total = Int64(milliseconds)
        var seconds = time_t(total >= 0 ? total / 1000 : (total - 999) / 1000)
        let millis = Int(total - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(millis, 3)
        bytes.append(UInt8(ascii: "Z"))
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
