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
