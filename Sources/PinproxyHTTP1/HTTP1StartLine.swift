/// Request lines, status lines and chunk-size lines (RFC 9112 §3, §4, §7.1),
/// read straight from the bytes of one line without its line ending.
extension HTTP1Syntax {
    /// `METHOD target HTTP/1.1`, with single spaces.
    static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1Error)
        -> (method: String, target: HTTP1RequestTarget, version: HTTPVersion) {
        // Exactly two spaces make the three parts.
        let firstSpace = HTTP1Bytes.firstIndex(of: Byte.space, in: line)
        let secondSpace = firstSpace.flatMap { HTTP1Bytes.firstIndex(of: Byte.space, in: line, from: $0 + 1) }
        guard let firstSpace, let secondSpace, HTTP1Bytes.firstIndex(of: Byte.space, in: line, from: secondSpace + 1) == nil,
              firstSpace > 0, secondSpace > firstSpace + 1 else {
            throw HTTP1Error.malformed(
                "the request line \(quoted(line.prefix(60))) is not 'METHOD target HTTP/1.1' with single spaces")
        }
        let methodBytes = UnsafeBufferPointer(rebasing: line[..<firstSpace])
        guard HTTP1Bytes.isToken(methodBytes) else {
            throw HTTP1Error.malformed("the method \(quoted(methodBytes.prefix(40))) is not a token")
        }
        let version = try parseVersion(UnsafeBufferPointer(rebasing: line[(secondSpace + 1)...]))
        let method = String(decoding: methodBytes, as: UTF8.self)
        let targetBytes = UnsafeBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        let targetText = String(decoding: targetBytes, as: UTF8.self)
        // Origin form is what ``parseTarget(_:method:)`` makes of a path for any
        // method but CONNECT; the usual request skips its string checks.
        if targetBytes[0] == UInt8(ascii: "/"), method != "CONNECT" { return (method, .origin(targetText), version) }
        let target = try parseTarget(targetText, method: method)
        return (method, target, version)
    }

    /// `HTTP/1.1 200 Reason`; the reason may be empty or missing.
    static func parseStatusLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1Error)
        -> (version: HTTPVersion, status: Int, reason: String) {
        guard line.count >= 12, line[8] == Byte.space else {
            throw HTTP1Error.malformed("the status line \(quoted(line.prefix(60))) is not 'HTTP/1.1 200 Reason'")
        }
        let version = try parseVersion(UnsafeBufferPointer(rebasing: line[0..<8]))
        let digits = line[9..<12]
        guard digits.allSatisfy({ $0 >= Byte.zero && $0 <= Byte.nine }), digits.first != Byte.zero,
              line.count == 12 || line[12] == Byte.space else {
            throw HTTP1Error.malformed("the status line \(quoted(line.prefix(60))) has no three-digit status code")
        }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - Byte.zero) }
        guard line.count > 13 else { return (version, status, "") }
        let reason = UnsafeBufferPointer(rebasing: line[13...])
        return (version, status, string(reason, isASCII: HTTP1Bytes.isASCII(reason)))
    }

    /// The size of a chunk in hex; extensions after `;` are checked for control bytes and ignored.
    static func parseChunkSize(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) -> Int {
        var size = 0
        var index = 0
        while index < line.count, let digit = hexValue(line[index]) {
            guard index < 15 else {
                throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is too large")
            }
            size = size * 16 + digit
            index += 1
        }
        guard index > 0 else {
            throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is not hexadecimal")
        }
        while index < line.count, line[index] == Byte.space || line[index] == Byte.tab { index += 1 }
        // Chunk extensions are allowed and ignored.
        guard index == line.count || line[index] == Byte.semicolon else {
            throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is not hexadecimal")
        }
        for byte in line[index...] where byte < 0x20 && byte != Byte.tab || byte == 0x7f {
            throw HTTP1Error(.badChunk, status: 400, "a chunk extension contains byte \(hex(byte))")
        }
        return size
    }
}
