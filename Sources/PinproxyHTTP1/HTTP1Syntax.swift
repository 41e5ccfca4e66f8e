import PinproxyBase

/// The grammar pieces of RFC 9110/9112 the parser is built from.
enum HTTP1Syntax {
    /// `tchar` of RFC 9110 §5.6.2.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool { HTTP1Bytes.isTokenByte(byte) }

    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }

    /// Field values are UTF-8 in practice; anything else is kept byte for byte as Latin-1.
    static func string(_ bytes: some Collection<UInt8>) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var out = String.UnicodeScalarView()
        for byte in bytes { out.append(UnicodeScalar(byte)) }
        return String(out)
    }

    /// ``string(_:)`` for bytes already known to be ASCII or not: ASCII is
    /// valid UTF-8, so it is decoded without a second validation.
    @inline(__always)
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, isASCII: Bool) -> String {
        isASCII ? String(decoding: bytes, as: UTF8.self) : string(bytes)
    }

    /// `HTTP/1.0` or `HTTP/1.1` (a higher 1.x minor is read as 1.1, RFC 9110 §6.2).
    static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) -> HTTPVersion {
        // The two versions seen in practice, checked before the general code and its messages.
        if bytes.count == 8, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"), bytes[2] == UInt8(ascii: "T"),
           bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/"), bytes[5] == UInt8(ascii: "1"),
           bytes[6] == UInt8(ascii: "."), let minor = digit(bytes[7]) {
            return minor == 0 ? .http1_0 : .http1_1
        }
        let text = Array(bytes)
        let prefix = Array("HTTP/".utf8)
        guard text.count >= 5, Array(text.prefix(5)) == prefix else {
            throw HTTP1Error.malformed("\(quoted(text.prefix(20))) is not an HTTP version")
        }
        guard text.count == 8, text[6] == UInt8(ascii: "."),
              let major = digit(text[5]), let minor = digit(text[7]) else {
            if text == Array("HTTP/2".utf8) || text == Array("HTTP/3".utf8) {
                throw HTTP1Error(.unsupportedVersion, status: 505, "\(quoted(text)) is not supported here; only HTTP/1.x")
            }
            throw HTTP1Error.malformed("\(quoted(text.prefix(20))) is not an HTTP version")
        }
        guard major == 1 else {
            let hint = major == 2 ? " (HTTP/2 with prior knowledge is not accepted on this port)" : ""
            throw HTTP1Error(.unsupportedVersion, status: 505, "HTTP/\(major).\(minor) is not supported; only HTTP/1.0 and HTTP/1.1\(hint)")
        }
        return minor == 0 ? .http1_0 : .http1_1
    }

    private static func digit(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    /// One `name: value` field line (RFC 9112 §5), without its line ending.
    ///
    /// A value that is printable ASCII (nearly all) is accepted eight bytes
    /// at a time; otherwise one pass refuses control bytes and finds out
    /// whether it is ASCII, which then needs no UTF-8 validation.
    static func parseField(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) -> HTTPHeaders.Field {
        guard let colon = line.firstIndex(of: Byte.colon) else {
            throw HTTP1Error.malformed("the header line \(quoted(line.prefix(60))) has no ':'")
        }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        guard !name.isEmpty else { throw HTTP1Error.malformed("a header line has an empty name") }
        guard HTTP1Bytes.isToken(name) else {
            if let last = name.last, last == Byte.space || last == Byte.tab {
                throw HTTP1Error.malformed("the header name \(quoted(name.prefix(40))) is followed by whitespace before ':'")
            }
            throw HTTP1Error.malformed("the header name \(quoted(name.prefix(40))) contains characters a name cannot have")
        }
        let value = HTTP1Bytes.trimmingWhitespace(UnsafeBufferPointer(rebasing: line[(colon + 1)...]))
        var isASCII = true
        if !HTTP1Bytes.isPrintableASCII(value) {
            var high: UInt8 = 0
            for byte in value {
                if (byte < 0x20 && byte != Byte.tab) || byte == 0x7f {
                    throw HTTP1Error.malformed("the header \(quoted(name.prefix(40))) contains control byte \(hex(byte))")
                }
                high |= byte
            }
            isASCII = high < 0x80
        }
        // Names are tokens, so ASCII.
        return HTTPHeaders.Field(name: String(decoding: name, as: UTF8.self), value: string(value, isASCII: isASCII))
    }

    /// How a message with these fields is delimited (RFC 9112 §6.3), refusing ambiguity.
    static func framing(of fields: HTTPHeaders, version: HTTPVersion, isRequest: Bool) throws(HTTP1Error) -> HTTP1BodyFraming {
        // Both found through the field index, without comparing names.
        let hasTransferEncoding = fields.firstIndex(.transferEncoding) != nil
        let firstContentLength = fields.firstIndex(.contentLength)
        let hasContentLength = firstContentLength != nil
        if hasTransferEncoding {
            if hasContentLength {
                throw HTTP1Error(.ambiguousFraming, status: 400,
                                 "the message has both Content-Length and Transfer-Encoding, which could be read two ways")
            }
            if version == .http1_0 {
                throw HTTP1Error(.ambiguousFraming, status: 400, "Transfer-Encoding is not allowed in an HTTP/1.0 message")
            }
            if isExactlyChunked(fields) { return .chunked }
            let codings = fields.tokens(name: "Transfer-Encoding")
            guard !codings.isEmpty else { throw HTTP1Error.malformed("Transfer-Encoding is empty") }
            for coding in codings where coding != "chunked" {
                throw HTTP1Error(.unsupportedTransferCoding, status: 501,
                                 "the transfer coding \(quoted(coding.utf8.prefix(40))) is not supported; only chunked is")
            }
            guard codings.count == 1 else {
                throw HTTP1Error.malformed("chunked is applied more than once in Transfer-Encoding")
            }
            return .chunked
        }
        if var index = firstContentLength {
            var length: Int?
            while true {
                try addContentLength(fields.fields[index].value, to: &length)
                guard let next = fields.firstIndex(.contentLength, from: index + 1) else { break }
                index = next
            }
            return .contentLength(length ?? 0)
        }
        return isRequest ? .none : .untilClose
    }

    /// Whether the Transfer-Encoding elements are exactly one `chunked` (the
    /// only accepted case), found without building the token list.
    private static func isExactlyChunked(_ fields: HTTPHeaders) -> Bool {
        var chunked = 0
        var index = fields.firstIndex(.transferEncoding)
        while let found = index {
            index = fields.firstIndex(.transferEncoding, from: found + 1)
            let ok = fields.fields[found].value.withUTF8Bytes { list -> Bool in
                guard HTTP1Bytes.isASCII(list) else { return false }
                return !HTTP1Bytes.anyListElement(list) { element in
                    guard !element.isEmpty else { return false }
                    guard HTTP1Bytes.equalsLowercased(element, chunkedBytes) else { return true }
                    chunked += 1
                    return false
                }
            }
            guard ok else { return false }
        }
        return chunked == 1
    }

    private static var chunkedBytes: UnsafeBufferPointer<UInt8> { HTTP1Bytes.buffer("chunked") }

    /// Folds the lengths listed in one Content-Length value into `length`,
    /// refusing anything but digits and any value that differs from another.
    private static func addContentLength(_ field: String, to length: inout Int?) throws(HTTP1Error) {
        enum Outcome { case length(Int), notANumber, conflict(Int, Int) }
        let known = length
        // ASCII values are read byte by byte, element by element, stopping at
        // the first bad element just as the general code does.
        let outcome: Outcome? = field.withUTF8Bytes { list in
            guard HTTP1Bytes.isASCII(list) else { return nil }
            var current = known
            var elements = HTTP1Bytes.ListElements(list)
            while let text = elements.next() {
                guard !text.isEmpty, text.count <= 18 else { return .notANumber }
                var value = 0
                for byte in text {
                    guard byte >= Byte.zero && byte <= Byte.nine else { return .notANumber }
                    value = value * 10 + Int(byte - Byte.zero)
                }
                if let current, current != value { return .conflict(current, value) }
                current = value
            }
            return current.map(Outcome.length)
        }
        switch outcome {
        case .length(let value)?:
            length = value
        case .notANumber?:
            throw HTTP1Error.malformed("Content-Length \(quoted(field.utf8.prefix(40))) is not a number")
        case .conflict(let previous, let value)?:
            throw HTTP1Error(.ambiguousFraming, status: 400, "conflicting Content-Length values \(previous) and \(value)")
        case nil:
            try addContentLengthGeneral(field, to: &length)
        }
    }

    private static func addContentLengthGeneral(_ field: String, to length: inout Int?) throws(HTTP1Error) {
        for element in field.split(separator: ",", omittingEmptySubsequences: false) {
            let text = element.trimmingHTTPWhitespace()
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(text) else {
                throw HTTP1Error.malformed("Content-Length \(quoted(field.utf8.prefix(40))) is not a number")
            }
            if let length, length != value {
                throw HTTP1Error(.ambiguousFraming, status: 400,
                                 "conflicting Content-Length values \(length) and \(value)")
            }
            length = value
        }
    }

    /// The request target, in the form `method` requires (RFC 9112 §3.2).
    static func parseTarget(_ text: String, method: String) throws(HTTP1Error) -> HTTP1RequestTarget {
        func bad(_ why: String) -> HTTP1Error { HTTP1Error(.badTarget, status: 400, why) }
        if method == "CONNECT" {
            let (host, port) = try parseAuthority(text, defaultPort: nil, bad: bad)
            return .authority(host: host, port: port)
        }
        if text == "*" {
            guard method == "OPTIONS" else { throw bad("the target '*' is only allowed with OPTIONS") }
            return .asterisk
        }
        if text.hasPrefix("/") { return .origin(text) }
        guard let separator = text.range(of: "://") else {
            throw bad("the target \(quoted(text.utf8.prefix(60))) is neither a path nor an absolute http:// URL")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw bad("the scheme \(quoted(scheme.utf8.prefix(20))) is not supported; use http or https")
        }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = String(rest[..<authorityEnd])
        if authority.contains("@") { throw bad("credentials in the URL are not accepted") }
        let (host, port) = try parseAuthority(authority, defaultPort: scheme == "https" ? 443 : 80, bad: bad)
        var path = String(rest[authorityEnd...])
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        return .absolute(HTTP1AbsoluteURL(scheme: scheme, host: host, port: port, path: path))
    }

    /// `host:port` with a validated host and a port in 1–65535; the port may be
    /// omitted only when there is a default.
    static func parseAuthority(
        _ text: String, defaultPort: Int?, bad: (String) -> HTTP1Error
    ) throws(HTTP1Error) -> (HostName, Int) {
        var hostText = Substring(text)
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad("the IPv6 address in \(quoted(text.utf8.prefix(60))) has no ']'") }
            hostText = text[...close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw bad("unexpected text after the IPv6 address in \(quoted(text.utf8.prefix(60)))") }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            hostText = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        let port: Int
        if let portText {
            guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(portText), (1...65535).contains(value) else {
                throw bad("the port \(quoted(portText.utf8.prefix(20))) is not a number from 1 to 65535")
            }
            port = value
        } else if let defaultPort {
            port = defaultPort
        } else {
            throw bad("the CONNECT target \(quoted(text.utf8.prefix(60))) has no port; it must be host:port")
        }
        let host: HostName
        do {
            host = try HostName(validating: String(hostText))
        } catch let error as PinproxyError {
            throw bad(error.reason)
        } catch {
            throw bad("the host \(quoted(hostText.utf8.prefix(60))) is not valid")
        }
        if host.isWildcard { throw bad("the host \(quoted(hostText.utf8.prefix(60))) is a wildcard") }
        return (host, port)
    }
}
