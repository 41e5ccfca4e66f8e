internal import CNGHTTP2

/// Field text as HTTP/1 reads it: UTF-8 when valid, else one Latin-1
/// scalar per byte, so that no byte is lost.
enum HTTP2FieldText {
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(byte)) }
        return String(scalars)
    }
}

/// Fields laid out for nghttp2: one byte buffer and the `nghttp2_nv` array
/// pointing into it, valid for the duration of ``withNV(_:)`` (nghttp2
/// copies what it is given).
struct HTTP2FieldList {
    private var bytes: [UInt8] = []
    private var spans: [(name: Range<Int>, value: Range<Int>)] = []

    /// Fields already checked (or built by the session itself).
    init(checked fields: [(name: String, value: String)]) {
        for field in fields {
            let nameStart = bytes.count
            bytes.append(contentsOf: field.name.utf8)
            let valueStart = bytes.count
            bytes.append(contentsOf: field.value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<bytes.count))
        }
        // Never empty, so the buffer always has a base address.
        bytes.append(0)
    }

    /// Fields to send, checked first: pseudo-header fields as the session
    /// built them, regular names lower-cased and checked as tokens, values
    /// without CR, LF or NUL, and no connection-specific field (RFC 9113 §8.2).
    init(sending fields: [(name: String, value: String)]) throws(HTTP2Error) {
        var lowered: [(name: String, value: String)] = []
        lowered.reserveCapacity(fields.count)
        for field in fields {
            if field.name.hasPrefix(":") {
                lowered.append(field)
                continue
            }
            let name = field.name.lowercased()
            guard name.utf8.count > 0, Self.check(name, nghttp2_check_header_name) else {
                throw HTTP2Error(.invalidHead, "the field name '\(field.name)' is not a token")
            }
            guard Self.check(field.value, nghttp2_check_header_value) else {
                throw HTTP2Error(.invalidHead, "the value of '\(field.name)' contains CR, LF or NUL")
            }
            if HTTP2FieldRules.isConnectionSpecific(name: name, value: field.value) {
                throw HTTP2Error(.invalidHead, "'\(field.name)' is connection-specific and has no place in HTTP/2 (RFC 9113 §8.2.2)")
            }
            lowered.append((name, field.value))
        }
        self.init(checked: lowered)
    }

    private static func check(_ text: String, _ checker: (UnsafePointer<UInt8>?, Int) -> Int32) -> Bool {
        var copy = text
        return copy.withUTF8 { checker($0.baseAddress, $0.count) != 0 }
    }

    func withNV<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeMutablePointer(mutating: buffer.baseAddress!)
            let nva = spans.map { span in
                nghttp2_nv(
                    name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                    namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
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
