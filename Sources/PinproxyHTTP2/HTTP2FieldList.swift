internal import CNGHTTP2
import PinproxyHTTP1

/// Field text as HTTP/1 reads it: UTF-8 when valid, else one Latin-1
/// scalar per byte, so that no byte is lost.
enum HTTP2FieldText {
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        // Field text is ASCII nearly always, and ASCII needs no validation:
        // `String(validating:as:)` is generic and not specialised here, and
        // cost ~25,000 instructions per relayed request (callgrind, about a
        // seventh of the proxy's work under h2load); decoding checked ASCII
        // costs a few hundred.
        if isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }

    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var any: UInt8 = 0
        for byte in bytes { any |= byte }
        return any < 0x80
    }
}

/// Fields laid out for nghttp2: one byte buffer and the `nghttp2_nv` array
/// pointing into it. The array is valid for the duration of
/// ``withNV(lent:_:)``; the bytes, lent to nghttp2 uncopied, are kept by the
/// session until the frame is encoded (``storage``).
struct HTTP2FieldList {
    private var bytes: [UInt8] = []
    private var spans: [(name: Range<Int>, value: Range<Int>)] = []

    /// Fields already checked (or built by the session itself), laid out
    /// in one pass (``init(count:byteCount:_:)``).
    init(checked fields: [(name: String, value: String)]) {
        let size = fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        self.init(count: fields.count, byteCount: size) { list in
            for field in fields { list.add(name: field.name, value: field.value) }
        }
    }

    /// Fields to send, checked first: pseudo-header fields as the session
    /// built them, regular names lower-cased and checked as tokens, values
    /// without CR, LF or NUL, and no connection-specific field (RFC 9113 §8.2).
    ///
    /// Names are lower-cased and checked where they are laid out, byte by
    /// byte: a name that is not ASCII is no token either way, and this runs
    /// for every field of every relayed head (the `String.lowercased()` and
    /// `Set<String>` lookups it replaces were ~20,000 instructions a request).
    init(sending fields: [(name: String, value: String)]) throws(HTTP2Error) {
        reserve(fields)
        for field in fields {
            let name = append(field.name), value = append(field.value)
            spans.append((name, value))
            guard field.name.utf8.first != UInt8(ascii: ":") else { continue }
            let ok = bytes.withUnsafeMutableBufferPointer { all -> (name: Bool, value: Bool) in
                let base = all.baseAddress!
                for i in name where base[i] &- 0x41 < 26 { base[i] |= 0x20 }
                return (!name.isEmpty && nghttp2_check_header_name(base + name.lowerBound, name.count) != 0,
                        nghttp2_check_header_value(base + value.lowerBound, value.count) != 0)
            }
            guard ok.name else { throw HTTP2Error(.invalidHead, "the field name '\(field.name)' is not a token") }
            guard ok.value else { throw HTTP2Error(.invalidHead, "the value of '\(field.name)' contains CR, LF or NUL") }
            if HTTP2FieldRules.isConnectionSpecific(name: bytes[name], value: field.value) {
                throw HTTP2Error(.invalidHead, "'\(field.name)' is connection-specific and has no place in HTTP/2 (RFC 9113 §8.2.2)")
            }
        }
        // Never empty, so the buffer always has a base address.
        bytes.append(0)
    }

    /// Fields laid out as they are (checked already, or made by the
    /// session) in one pass: `byteCount` is the exact size of every name and
    /// value `write` adds, so the bytes are copied once each into a buffer of
    /// that size. (Appending each text to a growing array cost ~140
    /// instructions a name or value.)
    init(count: Int, byteCount: Int, _ write: (inout Writer) -> Void) {
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        spans.reserveCapacity(count)
        // One byte more, never written by a field: never empty, so the
        // buffer always has a base address.
        bytes = [UInt8](writingAtMost: byteCount + 1) { buffer in
            var writer = Writer(buffer: buffer, spans: spans)
            spans = []
            write(&writer)
            buffer[writer.offset] = 0
            swap(&spans, &writer.spans)
            return writer.offset + 1
        }
        self.spans = spans
    }

    /// Writes fields into the buffer of ``init(count:byteCount:_:)``.
    struct Writer {
        fileprivate let buffer: UnsafeMutableBufferPointer<UInt8>
        fileprivate var spans: [(name: Range<Int>, value: Range<Int>)]
        fileprivate var offset = 0

        fileprivate init(buffer: UnsafeMutableBufferPointer<UInt8>, spans: [(name: Range<Int>, value: Range<Int>)]) {
            self.buffer = buffer
            self.spans = spans
        }

        mutating func add(name: StaticString, value: String) {
            let name = write(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            spans.append((name, write(value)))
        }

        mutating func add(name: String, value: String) {
            let name = write(name)
            spans.append((name, write(value)))
        }

        /// `name` lower-cased (ASCII letters only, as ``Swift/String/asciiLowercased`` does) where it is laid out.
        mutating func add(lowercasing name: String, value: String) {
            let name = write(name)
            let base = buffer.baseAddress!
            for index in name where base[index] &- 0x41 < 26 { base[index] |= 0x20 }
            spans.append((name, write(value)))
        }

        mutating func add(_ fields: [HTTPHeaders.Field]) {
            fields.withUnsafeBufferPointer { fields in
                for index in fields.indices {
                    let name = write(fields[index].name)
                    spans.append((name, write(fields[index].value)))
                }
            }
        }

        /// `:status` with its three digits (100 to 999), without making a `String` of them.
        mutating func add(status: Int) {
            let name = write(UnsafeBufferPointer(start: StaticString(":status").utf8Start, count: 7))
            precondition(offset + 3 < buffer.count, "a field list's size was counted short")
            buffer[offset] = UInt8(ascii: "0") + UInt8(status / 100 % 10)
            buffer[offset + 1] = UInt8(ascii: "0") + UInt8(status / 10 % 10)
            buffer[offset + 2] = UInt8(ascii: "0") + UInt8(status % 10)
            offset += 3
            spans.append((name, (offset - 3)..<offset))
        }

        private mutating func write(_ text: String) -> Range<Int> {
            if let range = text.utf8.withContiguousStorageIfAvailable({ write($0) }) { return range }
            var text = text
            return text.withUTF8 { write($0) }
        }

        private mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int> {
            let start = offset
            // The last byte is the terminator's.
            precondition(start + bytes.count < buffer.count, "a field list's size was counted short")
            if let source = bytes.baseAddress, !bytes.isEmpty {
                (buffer.baseAddress! + start).update(from: source, count: bytes.count)
            }
            offset = start + bytes.count
            return start..<offset
        }
    }

    /// The bytes of `fields`' names and values.
    static func byteCount(_ fields: [HTTPHeaders.Field]) -> Int {
        fields.withUnsafeBufferPointer { fields in
            var size = 0
            for index in fields.indices { size += fields[index].name.utf8.count + fields[index].value.utf8.count }
            return size
        }
    }

    /// Room for every byte and span at once: one allocation each.
    private mutating func reserve(_ fields: [(name: String, value: String)]) {
        var size = 1
        for field in fields { size += field.name.utf8.count + field.value.utf8.count }
        bytes.reserveCapacity(size)
        spans.reserveCapacity(fields.count)
    }

    /// Appends `text`'s bytes (copied whole from its storage, not byte by
    /// byte through `String.UTF8View`: ~170 instructions a field less); where they went.
    /// Native text is read through its contiguous UTF-8 view.
    private mutating func append(_ text: String) -> Range<Int> {
        let start = bytes.count
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            var text = text
            text.withUTF8 { bytes.append(contentsOf: $0) }
        }
        return start..<bytes.count
    }

    /// The bytes every `nghttp2_nv` of ``withNV(lent:_:)`` points into:
    /// names and values, one after another.
    var storage: [UInt8] { bytes }

    /// Calls `body` with the fields as `nghttp2_nv`, laid out on the stack.
    ///
    /// `lent`: the `nghttp2_nv` say `NGHTTP2_NV_FLAG_NO_COPY_NAME` and
    /// `NGHTTP2_NV_FLAG_NO_COPY_VALUE`, so nghttp2 neither copies nor
    /// lower-cases the bytes; the caller keeps ``storage`` alive until
    /// nghttp2 has encoded the frame (``HTTP2Session/lend(_:to:)``), and every
    /// name is lower case already (each way a list is made sees to that).
    func withNV<R>(lent: Bool = false, _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        let flags = UInt8(lent ? NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue
                               : NGHTTP2_NV_FLAG_NONE.rawValue)
        return bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeMutablePointer(mutating: buffer.baseAddress!)
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(spans.count, 1)) { nva in
                for (index, span) in spans.enumerated() {
                    nva.initializeElement(at: index, to: nghttp2_nv(
                        name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                        namelen: span.name.count, valuelen: span.value.count, flags: flags))
                }
                return body(nva.baseAddress!, spans.count)
            }
        }
    }
}

/// Which fields HTTP/2 forbids (RFC 9113 §8.2.2).
enum HTTP2FieldRules {
    /// Lower-cased names of the fields that describe one HTTP/1.1 connection.
    static let connectionSpecific: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]

    /// Whether a lower-cased `name` with `value` may not appear in HTTP/2:
    /// a connection-specific field, or `te` with anything but `trailers`.
    static func isConnectionSpecific(name: String, value: String) -> Bool {
        if connectionSpecific.contains(name) { return true }
        return name == "te" && value.trimmingCharacters(in: " \t").lowercased() != "trailers"
    }

    /// The same for a lower-cased name as bytes; most names are none of
    /// these, which their length alone tells.
    static func isConnectionSpecific(name: ArraySlice<UInt8>, value: String) -> Bool {
        switch name.count {
        case 2, 7, 10, 16, 17: break
        default: return false
        }
        return isConnectionSpecific(name: String(decoding: name, as: UTF8.self), value: value)
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let drop = Set(set.unicodeScalars)
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop.contains($0) }),
              let last = scalars.lastIndex(where: { !drop.contains($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
