extension HTTP1RequestHead {
    /// The request line and header fields as bytes, ending with the empty line.
    ///
    /// The target is written in the form it has; use
    /// ``HTTP1Forwarding/requestForUpstream(_:via:)`` first to turn an
    /// absolute-form target into origin-form for an origin server.
    public func serialized() -> [UInt8] {
        let targetText = target.description
        let bound = method.utf8.count + targetText.utf8.count + 2 + HTTP1HeadWriter.versionBound + 2
            + HTTP1HeadWriter.sizeBound(of: headers) + 2
        return HTTP1HeadWriter.write(bound: bound) { out in
            out.appendSanitized(method)
            out.append(Byte.space)
            out.appendSanitized(targetText)
            out.append(Byte.space)
            out.append(version)
            out.appendCRLF()
            out.append(headers)
            out.appendCRLF()
        }
    }
}

extension HTTP1ResponseHead {
    /// The status line and header fields as bytes, ending with the empty line.
    public func serialized() -> [UInt8] {
        let bound = HTTP1HeadWriter.versionBound + 1 + HTTP1HeadWriter.decimalBound + 1 + reason.utf8.count + 2
            + HTTP1HeadWriter.sizeBound(of: headers) + 2
        return HTTP1HeadWriter.write(bound: bound) { out in
            out.append(version)
            out.append(Byte.space)
            out.appendDecimal(status)
            out.append(Byte.space)
            out.appendSanitized(reason)
            out.appendCRLF()
            out.append(headers)
            out.appendCRLF()
        }
    }
}

/// Writing heads safely: whatever code put into a head, the bytes on the wire
/// stay one well-formed head (no CR, LF or NUL can split or end it early).
enum HTTP1Serializer {
    static let crlf: [UInt8] = [Byte.cr, Byte.lf]

    /// `text` with CR, LF and NUL replaced by spaces.
    static func sanitized(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == Byte.cr || $0 == Byte.lf || $0 == 0 }) else { return text }
        return String(text.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" || $0 == "\0" ? " " : $0 })
    }
}

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
        var size = 0
        for index in headers.fields.indices {
            size += headers.fields[index].name.utf8.count + headers.fields[index].value.utf8.count + 4
        }
        return size
    }

    /// The bytes `body` writes, in an array of at most `bound` bytes.
    static func write(bound: Int, _ body: (inout HTTP1HeadWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: max(bound, 1)) { buffer, initialized in
            var writer = HTTP1HeadWriter(base: buffer.baseAddress!, capacity: buffer.count)
            body(&writer)
            initialized = writer.count
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

        init(removed: HTTPFieldIndex.Positions) { self.removed = removed }

        mutating func replace(_ position: Int, with text: String) { add((position, .text(text))) }
        mutating func replace(_ position: Int, withNumber number: Int) { add((position, .number(number))) }

        private mutating func add(_ replacement: (position: Int, value: Value)) {
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

    /// Each field whose name is a token as `name: value` CRLF; the others are dropped.
    mutating func append(_ headers: HTTPHeaders) {
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

/// Chunked transfer coding (RFC 9112 §7.1) for bodies streamed without a known length.
public enum HTTP1ChunkedEncoder {
    /// One chunk holding `bytes`: size line, data, CRLF. Empty input gives no
    /// bytes, since an empty chunk would end the body.
    public static func chunk(_ bytes: some Collection<UInt8>) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 20)
        appendSizeLine(bytes.count, to: &out)
        out.append(contentsOf: bytes)
        out.append(Byte.cr)
        out.append(Byte.lf)
        return out
    }

    /// The size line of a chunk of `size` bytes, for writing large data
    /// without copying it: write this, then the data, then ``chunkTrailer``.
    public static func chunkHeader(size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20)
        appendSizeLine(size, to: &out)
        return out
    }

    /// `size` in lower-case hex, as `String(size, radix: 16)` writes it, and CRLF.
    static func appendSizeLine(_ size: Int, to out: inout [UInt8]) {
        if size < 0 {
            out.append(contentsOf: String(size, radix: 16).utf8)
        } else {
            // From the highest non-zero nibble down (one digit for zero).
            var shift = max(0, (Int.bitWidth - 4) - (size.leadingZeroBitCount / 4) * 4)
            while shift >= 0 {
                let digit = UInt8(truncatingIfNeeded: (size >> shift) & 0xf)
                out.append(digit < 10 ? Byte.zero + digit : UInt8(ascii: "a") + digit - 10)
                shift -= 4
            }
        }
        out.append(Byte.cr)
        out.append(Byte.lf)
    }

    /// The CRLF that closes a chunk's data.
    public static let chunkTrailer: [UInt8] = HTTP1Serializer.crlf

    /// The last chunk, the trailer fields and the final empty line.
    public static func end(trailers: HTTPHeaders = HTTPHeaders()) -> [UInt8] {
        HTTP1HeadWriter.write(bound: 5 + HTTP1HeadWriter.sizeBound(of: trailers)) { out in
            out.append(HTTP1Bytes.buffer("0\r\n"))
            out.append(trailers)
            out.appendCRLF()
        }
    }
}

/// Responses the proxy writes itself.
public enum HTTP1Response {
    /// A complete response that tells the client what went wrong and closes:
    /// `Connection: close`, a `text/plain` body with the status and `reason`.
    public static func error(status: Int, reason: String, headers extra: HTTPHeaders = HTTPHeaders()) -> [UInt8] {
        let body = Array("\(status) \(reasonPhrase(for: status)): \(reason)\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: String(body.count))
        headers.add(name: "Connection", value: "close")
        for field in extra { headers.replaceOrAdd(name: field.name, value: field.value) }
        let head = HTTP1ResponseHead(status: status, headers: headers, framing: .contentLength(body.count))
        return head.serialized() + body
    }

    /// The answer to a parse error: its status and reason.
    public static func error(_ error: HTTP1Error) -> [UInt8] {
        self.error(status: error.status, reason: error.reason)
    }

    /// `HTTP/1.1 100 Continue`, for a client that sent `Expect: 100-continue`.
    public static let `continue`: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The answer to an accepted CONNECT; what follows is the tunnel.
    public static let connectionEstablished: [UInt8] = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// The standard reason phrase for `status`, or "Unknown".
    public static func reasonPhrase(for status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 103: return "Early Hints"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 407: return "Proxy Authentication Required"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Unknown"
        }
    }
}
