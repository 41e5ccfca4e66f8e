#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte values of the HTTP/1 grammar.
package enum Byte {
    package static let cr: UInt8 = 0x0d
    package static let lf: UInt8 = 0x0a
    package static let space: UInt8 = 0x20
    package static let tab: UInt8 = 0x09
    package static let colon: UInt8 = 0x3a
    package static let comma: UInt8 = 0x2c
    package static let semicolon: UInt8 = 0x3b
    package static let zero: UInt8 = 0x30
    package static let nine: UInt8 = 0x39
}

/// Byte-level helpers of the HTTP/1 hot path.
///
/// Heads are ASCII in practice, and for ASCII text a byte-wise answer is the
/// same as the `Character`-wise one the readable code gives (apart from CRLF,
/// which never occurs inside a parsed field). The fast paths here therefore
/// check for ASCII and leave anything else to the general code, so that
/// results never depend on which path ran.
enum HTTP1Bytes {
    /// The offset of the first `byte` in `buffer[from...]`, found with `memchr`
    /// (vectorised in libc, unlike a byte loop).
    @inline(__always)
    static func firstIndex(of byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from start: Int = 0) -> Int? {
        guard start < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let found = memchr(base + start, Int32(byte), buffer.count - start) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// The bytes of a literal, which live as long as the program.
    @inline(__always)
    static func buffer(_ literal: StaticString) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
    }

    /// Whether every byte is below 0x80, eight bytes at a time.
    static func isASCII(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        let count = buffer.count
        var index = 0
        let raw = UnsafeRawPointer(base)
        while index + 8 <= count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < count {
            if base[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    /// Whether every byte is printable ASCII (0x20–0x7e), eight bytes at a
    /// time: such text needs no per-byte checks for control bytes, CR, LF,
    /// NUL or UTF-8, which is what field values and start lines nearly always are.
    static func isPrintableASCII(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        let count = buffer.count
        var index = 0
        let raw = UnsafeRawPointer(base)
        while index + 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            // A byte below 0x20, a 0x7f byte (zero after xor), or a byte with the high bit set.
            let below20 = (word &- 0x2020_2020_2020_2020) & ~word
            let xor7F = word ^ 0x7f7f_7f7f_7f7f_7f7f
            let is7F = (xor7F &- 0x0101_0101_0101_0101) & ~xor7F
            if (below20 | is7F | word) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte < 0x20 || byte >= 0x7f { return false }
            index += 1
        }
        return true
    }

    /// `tchar` of RFC 9110 §5.6.2 as two 64-bit masks, one bit per ASCII byte:
    /// DIGIT, ALPHA and ``!#$%&'*+-.^_`|~``.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool { tokenBit(byte) != 0 }

    /// 1 when `byte` is a `tchar`, else 0, without branches: names mix
    /// letters (upper mask) and `-` (lower mask) too irregularly to predict.
    @inline(__always)
    private static func tokenBit(_ byte: UInt8) -> UInt64 {
        let low: UInt64 = 0x03ff_6cfa_0000_0000  // 0x00–0x3f
        let high: UInt64 = 0x57ff_ffff_c7ff_fffe // 0x40–0x7f
        let value = UInt64(byte)
        let isHigh = 0 &- ((value >> 6) & 1)
        let mask = low ^ ((low ^ high) & isHigh)
        return (mask >> (value & 63)) & ~(value >> 7) & 1
    }

    /// Whether `buffer` is a non-empty token (a valid field name or method).
    @inline(__always)
    static func isToken(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var all: UInt64 = 1
        for byte in buffer { all &= tokenBit(byte) }
        return !buffer.isEmpty && all == 1
    }

    /// Whether `bytes` are `String(value)`: the decimal digits of a
    /// non-negative `value`, without leading zeros.
    static func isDecimal(_ bytes: UnsafeBufferPointer<UInt8>, of value: Int) -> Bool {
        guard value >= 0, !bytes.isEmpty else { return false }
        var rest = value
        var index = bytes.count
        while index > 0 {
            index -= 1
            guard bytes[index] == Byte.zero + UInt8(truncatingIfNeeded: rest % 10) else { return false }
            rest /= 10
            if rest == 0 { return index == 0 }
        }
        return false
    }

    /// Whether `a` and `b` hold the same bytes.
    @inline(__always)
    static func equals(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        return memcmp(x, y, a.count) == 0
    }

    /// ASCII case-insensitive equality of two byte runs (RFC 9110 §5.1 names, §5.6.2 tokens).
    @inline(__always)
    static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in 0..<a.count where !equalsIgnoringCase(a[index], b[index]) { return false }
        return true
    }

    /// ASCII case-insensitive equality of two bytes: only A–Z and a–z fold.
    @inline(__always)
    static func equalsIgnoringCase(_ x: UInt8, _ y: UInt8) -> Bool {
        if x == y { return true }
        let folded = x | 0x20
        return folded == y | 0x20 && folded >= 0x61 && folded <= 0x7a
    }

    /// Whether `element` is `lowercasedToken` ignoring ASCII case;
    /// `lowercasedToken` must be lower-case ASCII.
    @inline(__always)
    static func equalsLowercased(_ element: UnsafeBufferPointer<UInt8>, _ lowercasedToken: UnsafeBufferPointer<UInt8>) -> Bool {
        guard element.count == lowercasedToken.count else { return false }
        for index in 0..<element.count {
            var byte = element[index]
            if byte >= 0x41 && byte <= 0x5a { byte |= 0x20 }
            if byte != lowercasedToken[index] { return false }
        }
        return true
    }

    /// `buffer` without leading and trailing spaces and tabs.
    @inline(__always)
    static func trimmingWhitespace(_ buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var start = 0
        var end = buffer.count
        while start < end, buffer[start] == Byte.space || buffer[start] == Byte.tab { start += 1 }
        while end > start, buffer[end - 1] == Byte.space || buffer[end - 1] == Byte.tab { end -= 1 }
        return UnsafeBufferPointer(rebasing: buffer[start..<end])
    }

    /// Calls `body` with each comma-separated element of `list`, trimmed of
    /// spaces and tabs and possibly empty, until `body` returns true.
    /// Only for ASCII lists (see the type's note).
    @inline(__always)
    static func anyListElement(_ list: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        var elements = ListElements(list)
        while let element = elements.next() {
            if body(element) { return true }
        }
        return false
    }

    /// The comma-separated elements of an ASCII list, trimmed of spaces and
    /// tabs, empty ones included (`a,,b` has three), as `split(separator:
    /// ",", omittingEmptySubsequences: false)` gives them.
    struct ListElements: IteratorProtocol {
        private let list: UnsafeBufferPointer<UInt8>
        private var start = 0

        init(_ list: UnsafeBufferPointer<UInt8>) { self.list = list }

        mutating func next() -> UnsafeBufferPointer<UInt8>? {
            guard start <= list.count else { return nil }
            let end = firstIndex(of: Byte.comma, in: list, from: start) ?? list.count
            defer { start = end + 1 }
            return trimmingWhitespace(UnsafeBufferPointer(rebasing: list[start..<end]))
        }
    }
}

extension String {
    /// Calls `body` with the string's UTF-8 bytes, without copying them when
    /// the string is stored contiguously (always for native Swift strings).
    @inline(__always)
    func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}

extension String {
    /// The string with ASCII letters lower-cased and every other byte as it is: the
    /// string itself (no copy) when it has no upper-case letter, as most field names
    /// an HTTP/2 leg or a modern server sends. (`lowercased()` maps Unicode: ~180
    /// instructions a field name.)
    package var asciiLowercased: String {
        let upper = withUTF8Bytes { bytes in bytes.contains { $0 &- 0x41 < 26 } }
        guard upper else { return self }
        return withUTF8Bytes { bytes in
            let count = bytes.count
            return String(unsafeUninitializedCapacity: count) { buffer in
                var i = 0
                while i < count {
                    let byte = bytes[i]
                    buffer[i] = byte &- 0x41 < 26 ? byte | 0x20 : byte
                    i += 1
                }
                return count
            }
        }
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xf)])
}

/// Shows untrusted bytes in a message: printable ASCII as is, the rest as `\xNN`.
func quoted(_ bytes: some Collection<UInt8>) -> String {
    var out = "'"
    for byte in bytes {
        if byte >= 0x20 && byte < 0x7f && byte != 0x27 { out.unicodeScalars.append(UnicodeScalar(byte)) }
        else { out += "\\x" + hex(byte).dropFirst(2) }
    }
    return out + "'"
}
