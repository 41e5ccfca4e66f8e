/// The checks made on each line as its bytes arrive: the first byte, the
/// bytes of a start line, and the length limits.
///
/// They are static and take what they need: a method on the parser would be
/// handed a copy of the whole parser (several hundred bytes) on every call.
extension HTTP1Parser {
    static func checkFirstByte(_ byte: UInt8, mode: Mode) throws(HTTP1Error) {
        guard mode == .request else {
            if byte == 0x16 || byte == 0x15 {
                throw HTTP1Error(.tlsOnPlainPort, status: 502, "the server answered with TLS where plain HTTP was expected")
            }
            return
        }
        if byte == 0x16 {
            throw HTTP1Error(
                .tlsOnPlainPort, status: 400,
                "a TLS handshake arrived where a plain HTTP request was expected; "
                    + "send CONNECT host:port (https_proxy=http://...) or an http:// URL to this port")
        }
        // A SOCKS greeting opens with its version: the client was set up for another kind of proxy.
        if byte == 0x04 || byte == 0x05 {
            throw HTTP1Error.malformed("this is not HTTP: it looks like a SOCKS\(byte) greeting; pinproxy is an HTTP proxy "
                                       + "(http_proxy/https_proxy=http://HOST:PORT), not a SOCKS one")
        }
    }

    /// Start lines are ASCII; refusing control bytes as they arrive makes
    /// binary garbage fail on its first bytes instead of after 8 KiB.
    static func checkStartLineBytes(_ chunk: UnsafeBufferPointer<UInt8>, mode: Mode) throws(HTTP1Error) {
        // The usual line is printable ASCII up to its CR, which passes below; say so at word speed.
        let beforeCR = chunk.last == Byte.cr ? UnsafeBufferPointer(rebasing: chunk[..<(chunk.count - 1)]) : chunk
        if HTTP1Bytes.isPrintableASCII(beforeCR) { return }
        for byte in chunk where byte < 0x20 || byte == 0x7f || (mode == .request && byte >= 0x80) {
            if byte == Byte.cr || byte == Byte.tab && mode == .response { continue }
            throw HTTP1Error.malformed(
                "this is not HTTP: the \(mode == .request ? "request" : "status") line contains byte \(hex(byte))")
        }
    }

    /// Refuses a line of `length` bytes (line ending excluded) that is over
    /// the limit for lines read in `state`; `soFar` and `chunk` are its bytes.
    static func checkLineLength(
        _ length: Int, soFar: [UInt8], chunk: UnsafeBufferPointer<UInt8>, state: State, mode: Mode, limits: HTTP1Limits
    ) throws(HTTP1Error) {
        switch state {
        case .startLine:
            guard length > limits.maxStartLineLength else { return }
            if mode == .request, soFar.contains(Byte.space) || chunk.contains(Byte.space) {
                throw HTTP1Error(.uriTooLong, status: 414,
                                 "the request line is longer than \(limits.maxStartLineLength) bytes")
            }
            throw HTTP1Error.malformed("the start line is longer than \(limits.maxStartLineLength) bytes without a space")
        case .headers, .trailers:
            guard length > limits.maxHeaderLineLength else { return }
            let name = (soFar + chunk).prefix { $0 != Byte.colon }.prefix(40)
            throw tooLarge("the header field \(quoted(name)) is longer than \(limits.maxHeaderLineLength) bytes")
        case .chunkSize:
            guard length > limits.maxChunkLineLength else { return }
            throw HTTP1Error(.badChunk, status: 400, "a chunk-size line is longer than \(limits.maxChunkLineLength) bytes")
        default:
            return
        }
    }

    static func tooLarge(_ reason: String) -> HTTP1Error {
        HTTP1Error(.headerTooLarge, status: 431, reason)
    }
}

extension HTTP1Parser.State {
    /// Whether lines read here count toward the head (or trailer) size limit.
    var isSection: Bool {
        switch self {
        case .startLine, .headers, .trailers: return true
        default: return false
        }
    }
}
