/// Writes one head into one array, allocated once at a bound of its size
/// worked out beforehand: every piece is a `memcpy` into place rather than
/// an `Array.append` with its capacity and uniqueness checks.
///
/// The bound is an upper one: fields with names that are not tokens are
/// dropped, and ``HTTP1Serializer/sanitized(_:)`` never makes text longer.
struct HTTP1HeadWriter {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0

    /// `HTTP/` and two decimal `Int`s with a dot.
    static let versionBound = 5 + 2 * decimalBound + 1
    /// The longest decimal `Int`, sign included.
    static let decimalBound = 20

    /// At least the bytes ``append(_:)-(HTTPHeaders)`` writes for `headers`.
    static func sizeBound(of headers: HTTPHeaders) -> Int {
        if let lines = headers.wireLines { return lines.count }
        var size = 0
        for index in headers.fields.indices {
            size += headers.fields[index].name.utf8.count + headers.fields[index].value.utf8.count + 4
        }
        return size
    }

    /// The bytes `body` writes, in an array of at most `bound` bytes.
    static func write(bound: Int, _ body: (inout HTTP1HeadWriter) -> Void) -> [UInt8] {
        [UInt8](writingAtMost: max(bound, 1)) { buffer in
            var writer = HTTP1HeadWriter(base: buffer.baseAddress!, capacity: buffer.count)
            body(&writer)
            return writer.count
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        precondition(count < capacity, "head size bound exceeded")
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        precondition(bytes.count <= capacity - count, "head size bound exceeded")
        guard let source = bytes.baseAddress else { return }
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    mutating func appendCRLF() {
        append(Byte.cr)
        append(Byte.lf)
    }

    /// `value` in decimal, as `String(value)` writes it.
    mutating func appendDecimal(_ value: Int) {
        if value >= 100 && value < 1000 {
            // Status codes.
            precondition(3 <= capacity - count, "head size bound exceeded")
            base[count] = Byte.zero + UInt8(truncatingIfNeeded: value / 100)
            base[count + 1] = Byte.zero + UInt8(truncatingIfNeeded: value / 10 % 10)
            base[count + 2] = Byte.zero + UInt8(truncatingIfNeeded: value % 10)
            count += 3
            return
        }
        guard value >= 0 else {
            String(value).withUTF8Bytes { append($0) }
            return
        }
        var digits = 1
        var rest = value / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        precondition(digits <= capacity - count, "head size bound exceeded")
        rest = value
        for offset in stride(from: digits - 1, through: 0, by: -1) {
            base[count + offset] = Byte.zero + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        count += digits
    }

    /// `HTTP/1.1`, as ``HTTPVersion/description`` spells it.
    mutating func append(_ version: HTTPVersion) {
        if version == .http1_1 { return append(HTTP1Bytes.buffer("HTTP/1.1")) }
        if version == .http1_0 { return append(HTTP1Bytes.buffer("HTTP/1.0")) }
        append(HTTP1Bytes.buffer("HTTP/"))
        appendDecimal(version.major)
        append(UInt8(ascii: "."))
        appendDecimal(version.minor)
    }

    /// ``HTTP1Serializer/sanitized(_:)`` of `text`; printable ASCII, nearly
    /// all text, is copied as it is.
    mutating func appendSanitized(_ text: String) {
        let copied = text.withUTF8Bytes { bytes -> Bool in
            guard HTTP1Bytes.isPrintableASCII(bytes)
                || !bytes.contains(where: { $0 == Byte.cr || $0 == Byte.lf || $0 == 0 }) else { return false }
            append(bytes)
            return true
        }
        if !copied { HTTP1Serializer.sanitized(text).withUTF8Bytes { append($0) } }
    }

    /// Changes to wire-safe received fields on their way out: positions left
    /// out, and new values at up to two positions (`Host`, `Content-Length`).
    struct FieldEdits {
        enum Value {
            case text(String)
            case number(Int)
        }

        var removed: HTTPFieldIndex.Positions
        private(set) var first: (position: Int, value: Value)?
        private(set) var second: (position: Int, value: Value)?
        /// The highest position replaced, or -1: the ints alone, so that
        /// looking at them copies no value.
        private(set) var highestReplaced = -1

        init(removed: HTTPFieldIndex.Positions) { self.removed = removed }

        mutating func replace(_ position: Int, with text: String) { add((position, .text(text))) }
        mutating func replace(_ position: Int, withNumber number: Int) { add((position, .number(number))) }

        private mutating func add(_ replacement: (position: Int, value: Value)) {
            highestReplaced = max(highestReplaced, replacement.position)
            if first == nil { first = replacement } else { second = replacement }
        }

        /// At least the bytes the new values add.
        var sizeBound: Int {
            func bound(_ replacement: (position: Int, value: Value)?) -> Int {
                switch replacement?.value {
                case .text(let text)?: return text.utf8.count
                case .number?: return HTTP1HeadWriter.decimalBound
                case nil: return 0
                }
            }
            return bound(first) + bound(second)
        }

        /// The new value at `position`, if any.
        func value(at position: Int) -> Value? {
            if let first, first.position == position { return first.value }
            if let second, second.position == position { return second.value }
            return nil
        }
    }

    /// The wire-safe `headers` with `edits` applied, as ``append(_:)-(HTTPHeaders)`` writes fields.
    mutating func append(_ headers: HTTPHeaders, edits: FieldEdits) {
        assert(headers.isWireSafe)
        if let lines = headers.wireLines { return append(lines, of: headers, edits: edits) }
        let replacing = edits.first != nil
        for index in headers.fields.indices where !edits.removed.contains(index) {
            headers.fields[index].name.withUTF8Bytes { append($0) }
            append(Byte.colon)
            append(Byte.space)
            switch replacing ? edits.value(at: index) : nil {
            case .text(let text)?: appendSanitized(text)
            case .number(let number)?: appendDecimal(number)
            case nil: headers.fields[index].value.withUTF8Bytes { append($0) }
            }
            appendCRLF()
        }
    }

    /// `headers` with `edits` applied, from the lines they were received as
    /// (``HTTPHeaders/wireLines``): the runs of fields that go out unchanged
    /// are copied whole, and only a replaced field is written from its parts.
    /// Each field's line is `name: value` CRLF, so its length is known
    /// without looking for its end.
    private mutating func append(_ lines: [UInt8], of headers: HTTPHeaders, edits: FieldEdits) {
        lines.withUnsafeBufferPointer { bytes in
            // Past the last field removed or replaced, the rest goes in one copy.
            let last = max(edits.removed.highest, edits.highestReplaced)
            if last < 0 { return append(bytes) }
            headers.fields.withUnsafeBufferPointer { fields in
                var run = 0
                var offset = 0
                for index in 0...last {
                    let nameLength = fields[index].name.utf8.count
                    let end = offset + nameLength + 2 + fields[index].value.utf8.count + 2
                    let removed = edits.removed.contains(index)
                    let value = removed || index > edits.highestReplaced ? nil : edits.value(at: index)
                    if removed || value != nil {
                        append(UnsafeBufferPointer(rebasing: bytes[run..<offset]))
                        run = end
                        switch value {
                        case .text(let text)?:
                            append(UnsafeBufferPointer(rebasing: bytes[offset..<(offset + nameLength + 2)]))
                            appendSanitized(text)
                            appendCRLF()
                        case .number(let number)?:
                            append(UnsafeBufferPointer(rebasing: bytes[offset..<(offset + nameLength + 2)]))
                            appendDecimal(number)
                            appendCRLF()
                        case nil:
                            break
                        }
                    }
                    offset = end
                }
                append(UnsafeBufferPointer(rebasing: bytes[run...]))
            }
        }
    }

    /// Each field whose name is a token as `name: value` CRLF; the others are dropped.
    mutating func append(_ headers: HTTPHeaders) {
        if let lines = headers.wireLines {
            // Received as they are written, and not changed since.
            lines.withUnsafeBufferPointer { append($0) }
            return
        }
        if headers.isWireSafe {
            // Nothing to drop or replace: copy.
            for index in headers.fields.indices {
                headers.fields[index].name.withUTF8Bytes { append($0) }
                append(Byte.colon)
                append(Byte.space)
                headers.fields[index].value.withUTF8Bytes { append($0) }
                appendCRLF()
            }
            return
        }
        for index in headers.fields.indices {
            let written = headers.fields[index].name.withUTF8Bytes { name -> Bool in
                guard HTTP1Bytes.isToken(name) else { return false }
                append(name)
                return true
            }
            guard written else { continue }
            append(Byte.colon)
            append(Byte.space)
            appendSanitized(headers.fields[index].value)
            appendCRLF()
        }
    }
}
