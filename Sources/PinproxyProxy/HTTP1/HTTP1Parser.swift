/// An incremental HTTP/1.x parser for one direction of one connection.
///
/// Feed it whatever bytes arrived; it returns the events they complete and
/// keeps only what it needs to finish the current line (bounded by
/// ``HTTP1Limits``). Work is linear in the input however it is split, so a
/// client that sends one byte at a time costs no more than one that sends all
/// at once. Bodies are never buffered: ``HTTP1Event/body(_:)`` slices share
/// storage with the fed array.
///
/// Framing follows RFC 9112 §6.3 and refuses what could be read two ways
/// (request smuggling): Content-Length together with Transfer-Encoding,
/// differing Content-Length values, Transfer-Encoding in HTTP/1.0, and any
/// transfer coding but `chunked`. Obsolete line folding, whitespace before a
/// field's colon and bare CR are refused too. Empty lines before a start line
/// are skipped (RFC 9112 §2.2), and a bare LF ends a line like CRLF does.
///
/// A request parser stops after a CONNECT request (the rest is tunnel data)
/// and, by default, pauses after a request that asks for an `Upgrade` until the
/// caller says whether the server switched (``acceptUpgrade()`` /
/// ``declineUpgrade()``). A response parser must be told the method of each
/// request it answers (``expectResponse(toMethod:)``), to know that answers to
/// HEAD have no body and that a 2xx answer to CONNECT starts a tunnel.
///
/// After an error the parser stays failed and rethrows it. In response mode
/// errors carry status 502, since it is the upstream that misbehaved.
public struct HTTP1Parser: Sendable {
    /// Which side of an exchange the bytes come from.
    public enum Mode: Hashable, Sendable {
        /// Bytes from a client.
        case request
        /// Bytes from a server.
        case response
    }

    public let mode: Mode
    public var limits: HTTP1Limits
    /// Whether a request parser waits after a request asking for `Upgrade`.
    /// Turn it off when the proxy strips `Upgrade` before forwarding.
    public var pausesAfterUpgradeRequest: Bool

    private enum State: Sendable {
        case startLine
        case headers
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case untilClose
        case paused
        case upgradePending
        case upgraded
        case finished
        case failed(HTTP1Error)
    }

    private enum StartLine: Sendable {
        case request(method: String, target: HTTP1RequestTarget, version: HTTPVersion)
        case response(version: HTTPVersion, status: Int, reason: String)
    }

    private var state: State = .startLine
    /// The incomplete line carried over from the previous feed.
    private var line: [UInt8] = []
    /// Bytes of the current head or trailer section so far, line endings included.
    private var sectionBytes = 0
    private var start: StartLine?
    private var fields = HTTPHeaders()
    private var currentRequest: HTTP1RequestHead?
    /// Methods of requests whose responses are still to come, oldest first.
    private var pendingMethods: [String] = []
    private var pendingMethodsStart = 0
    private var currentResponseMethod = "GET"
    private var pausedBytes: [UInt8] = []

    /// A parser for `mode` with the given limits.
    public init(mode: Mode, limits: HTTP1Limits = .default, pausesAfterUpgradeRequest: Bool = true) {
        self.mode = mode
        self.limits = limits
        self.pausesAfterUpgradeRequest = pausesAfterUpgradeRequest
    }

    // MARK: - Public operations

    /// Records that a request with `method` was sent, so its response is framed right.
    /// Call once per forwarded request, in order; without it a response is read as an answer to GET.
    public mutating func expectResponse(toMethod method: String) {
        pendingMethods.append(method)
    }

    /// Whether the parser holds bytes while waiting for ``acceptUpgrade()`` or ``declineUpgrade()``.
    /// A connection should stop reading from the client meanwhile.
    public var isAwaitingUpgradeDecision: Bool {
        if case .paused = state { return true }
        return false
    }

    /// Whether parsing stopped for good after a protocol switch.
    public var isUpgraded: Bool {
        switch state {
        case .upgraded, .upgradePending: return true
        default: return false
        }
    }

    /// Whether the parser is between messages with nothing buffered: a close now loses nothing.
    public var isIdle: Bool {
        if case .startLine = state { return line.isEmpty }
        return false
    }

    /// Parses `bytes` and returns the events they complete.
    ///
    /// Throws ``HTTP1Error`` on input that is not acceptable; events of
    /// earlier messages in the same call are then dropped, since the
    /// connection is answered with the error and closed.
    public mutating func feed(_ bytes: [UInt8]) throws(HTTP1Error) -> [HTTP1Event] {
        var events: [HTTP1Event] = []
        do {
            try run(bytes, from: bytes.startIndex, into: &events)
        } catch {
            var failure = error
            if mode == .response, failure.status != 502, failure.code != .truncated { failure.status = 502 }
            state = .failed(failure)
            throw failure
        }
        return events
    }

    /// Parses the bytes in `buffer` (copied once, so that body slices can outlive it).
    public mutating func feed(_ buffer: UnsafeRawBufferPointer) throws(HTTP1Error) -> [HTTP1Event] {
        try feed(Array(buffer))
    }

    /// Reports that the peer closed its side: ends a body delimited by close,
    /// and throws ``HTTP1Error/Code/truncated`` when a message was cut short.
    public mutating func finish() throws(HTTP1Error) -> [HTTP1Event] {
        func truncated(_ what: String) -> HTTP1Error {
            HTTP1Error(.truncated, status: mode == .request ? 400 : 502, "the connection closed \(what)")
        }
        let failure: HTTP1Error
        switch state {
        case .startLine:
            if line.isEmpty || line.allSatisfy({ $0 == Byte.cr }) {
                state = .finished
                return []
            }
            failure = truncated("in the middle of the \(mode == .request ? "request" : "status") line")
        case .headers:
            failure = truncated("before the end of the header section")
        case .body(let remaining):
            failure = truncated("with \(remaining) bytes of the body still to come")
        case .chunkSize, .chunkData, .chunkDataEnd:
            failure = truncated("in the middle of a chunked body")
        case .trailers:
            failure = truncated("before the end of the trailer section")
        case .untilClose:
            resetMessage()
            state = .finished
            return [.end(trailers: HTTPHeaders())]
        case .paused, .upgradePending, .upgraded, .finished:
            return []
        case .failed(let error):
            throw error
        }
        state = .failed(failure)
        throw failure
    }

    /// The server switched protocols for the paused upgrade request: parsing
    /// stops, and the bytes the client sent meanwhile are returned for relaying.
    public mutating func acceptUpgrade() -> [UInt8] {
        guard case .paused = state else { return [] }
        state = .upgraded
        defer { pausedBytes = [] }
        return pausedBytes
    }

    /// The server did not switch protocols: parsing resumes with the bytes held meanwhile.
    public mutating func declineUpgrade() throws(HTTP1Error) -> [HTTP1Event] {
        guard case .paused = state else { return [] }
        state = .startLine
        let held = pausedBytes
        pausedBytes = []
        return try feed(held)
    }

    // MARK: - The state machine

    private mutating func run(_ bytes: [UInt8], from start: Int, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        var index = start
        let end = bytes.endIndex
        while index < end {
            switch state {
            case .startLine, .headers, .trailers, .chunkSize:
                guard let complete = try takeLine(bytes, &index) else { return }
                try handle(line: complete, into: &events)

            case .body(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[index..<(index + count)]))
                index += count
                if count == remaining { endMessage(trailers: HTTPHeaders(), into: &events) }
                else { state = .body(remaining: remaining - count) }

            case .chunkData(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[index..<(index + count)]))
                index += count
                state = count == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - count)

            case .chunkDataEnd(let sawCR):
                let byte = bytes[index]
                index += 1
                if byte == Byte.lf { state = .chunkSize }
                else if byte == Byte.cr && !sawCR { state = .chunkDataEnd(sawCR: true) }
                else { throw HTTP1Error(.badChunk, status: 400, "chunk data is longer than its declared size") }

            case .untilClose:
                events.append(.body(bytes[index..<end]))
                index = end

            case .paused:
                guard pausedBytes.count + (end - index) <= limits.maxBufferedWhilePaused else {
                    throw HTTP1Error.malformed(
                        "the client sent more than \(limits.maxBufferedWhilePaused) bytes before its upgrade request was answered")
                }
                pausedBytes.append(contentsOf: bytes[index..<end])
                index = end

            case .upgradePending:
                events.append(.upgrade(tail: bytes[index..<end]))
                state = .upgraded
                index = end

            case .upgraded:
                events.append(.raw(bytes[index..<end]))
                index = end

            case .finished:
                throw HTTP1Error(.stopped, status: 400, "bytes arrived after the end of the stream")

            case .failed(let error):
                throw error
            }
        }
        if case .upgradePending = state {
            events.append(.upgrade(tail: []))
            state = .upgraded
        }
    }

    /// Takes one complete line (without its line ending) or keeps the partial
    /// line for the next feed and returns nil. Checks limits as bytes arrive,
    /// so an endless line fails as soon as it is too long.
    private mutating func takeLine(_ bytes: [UInt8], _ index: inout Int) throws(HTTP1Error) -> [UInt8]? {
        let end = bytes.endIndex
        let newline = bytes[index..<end].firstIndex(of: Byte.lf)
        let chunkEnd = newline ?? end
        let chunk = bytes[index..<chunkEnd]

        if case .startLine = state {
            if line.isEmpty, let first = chunk.first { try checkFirstByte(first) }
            try checkStartLineBytes(chunk)
        }
        let length = line.count + chunk.count
        let lengthWithoutCR = newline != nil && (chunk.last ?? line.last) == Byte.cr ? length - 1 : length
        try checkLineLength(lengthWithoutCR, soFar: line, chunk: chunk)
        if isSectionState, sectionBytes + length + (newline == nil ? 0 : 1) > limits.maxHeaderBlockSize {
            throw tooLarge("the header section is larger than \(limits.maxHeaderBlockSize) bytes")
        }

        line.append(contentsOf: chunk)
        guard let newline else {
            index = end
            return nil
        }
        index = newline + 1
        if isSectionState { sectionBytes += line.count + 1 }
        var complete = line
        line.removeAll(keepingCapacity: true)
        if complete.last == Byte.cr { complete.removeLast() }
        if complete.contains(Byte.cr) {
            throw HTTP1Error.malformed("a line contains a bare CR; lines end with CRLF")
        }
        return complete
    }

    private var isSectionState: Bool {
        switch state {
        case .startLine, .headers, .trailers: return true
        default: return false
        }
    }

    private func checkFirstByte(_ byte: UInt8) throws(HTTP1Error) {
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
    }

    /// Start lines are ASCII; refusing control bytes as they arrive makes
    /// binary garbage fail on its first bytes instead of after 8 KiB.
    private func checkStartLineBytes(_ chunk: ArraySlice<UInt8>) throws(HTTP1Error) {
        for byte in chunk where byte < 0x20 || byte == 0x7f || (mode == .request && byte >= 0x80) {
            if byte == Byte.cr || byte == Byte.tab && mode == .response { continue }
            throw HTTP1Error.malformed(
                "this is not HTTP: the \(mode == .request ? "request" : "status") line contains byte \(hex(byte))")
        }
    }

    private func checkLineLength(_ length: Int, soFar: [UInt8], chunk: ArraySlice<UInt8>) throws(HTTP1Error) {
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

    private func tooLarge(_ reason: String) -> HTTP1Error {
        HTTP1Error(.headerTooLarge, status: 431, reason)
    }

    private mutating func handle(line: [UInt8], into events: inout [HTTP1Event]) throws(HTTP1Error) {
        switch state {
        case .startLine:
            if line.isEmpty {
                sectionBytes = 0 // empty lines between messages are not part of a head
                return
            }
            start = mode == .request ? try parseRequestLine(line) : try parseStatusLine(line)
            state = .headers
        case .headers:
            if line.isEmpty { try completeHead(into: &events) } else { try addField(line) }
        case .trailers:
            if line.isEmpty { endMessage(trailers: fields, into: &events) } else { try addField(line) }
        case .chunkSize:
            let size = try parseChunkSize(line)
            if size == 0 {
                fields = HTTPHeaders()
                sectionBytes = 0
                state = .trailers
            } else {
                state = .chunkData(remaining: size)
            }
        default:
            break
        }
    }

    // MARK: - Heads

    private mutating func addField(_ line: [UInt8]) throws(HTTP1Error) {
        if line.first == Byte.space || line.first == Byte.tab {
            throw HTTP1Error.malformed("obsolete line folding (a field line starting with whitespace) is not accepted")
        }
        guard fields.count < limits.maxHeaderCount else {
            throw tooLarge("more than \(limits.maxHeaderCount) header fields")
        }
        fields.add(try HTTP1Syntax.parseField(line))
    }

    private mutating func completeHead(into events: inout [HTTP1Event]) throws(HTTP1Error) {
        guard let start else { throw HTTP1Error.malformed("header section without a start line") }
        switch start {
        case .request(let method, let target, let version):
            let framing = try requestFraming(method: method, target: target, version: version)
            let head = HTTP1RequestHead(method: method, target: target, version: version, headers: fields, framing: framing)
            currentRequest = head
            events.append(.requestHead(head))
            begin(framing: framing, into: &events)

        case .response(let version, let status, let reason):
            let method = pendingMethodsStart < pendingMethods.count ? pendingMethods[pendingMethodsStart] : "GET"
            let isInterim = (100..<200).contains(status) && status != 101
            if !isInterim, pendingMethodsStart < pendingMethods.count {
                pendingMethodsStart += 1
                if pendingMethodsStart > 16, pendingMethodsStart * 2 > pendingMethods.count {
                    pendingMethods.removeFirst(pendingMethodsStart)
                    pendingMethodsStart = 0
                }
            }
            currentResponseMethod = method
            let framing: HTTP1BodyFraming
            if (100..<200).contains(status) || status == 204 || status == 304 || method == "HEAD"
                || (method == "CONNECT" && (200..<300).contains(status)) {
                framing = .none
            } else {
                framing = try HTTP1Syntax.framing(of: fields, version: version, isRequest: false)
            }
            let head = HTTP1ResponseHead(version: version, status: status, reason: reason, headers: fields, framing: framing)
            events.append(.responseHead(head))
            currentStatus = status
            begin(framing: framing, into: &events)
        }
    }

    private var currentStatus = 0

    private func requestFraming(method: String, target: HTTP1RequestTarget, version: HTTPVersion) throws(HTTP1Error) -> HTTP1BodyFraming {
        let hosts = fields["Host"]
        if hosts.count > 1 {
            throw HTTP1Error.malformed("the request has \(hosts.count) Host fields; exactly one is allowed")
        }
        // RFC 9112 §3.2: an origin-form request names its server only in Host,
        // so a missing or empty one leaves nothing to route by. In absolute
        // form the URI's authority wins (§3.2.2) and Host may be absent.
        if case .origin = target, version == .http1_1 {
            if hosts.isEmpty {
                throw HTTP1Error.malformed("an HTTP/1.1 request needs a Host field (RFC 9112 §3.2)")
            }
            if hosts[0].allSatisfy({ $0 == " " || $0 == "\t" }) {
                throw HTTP1Error.malformed("an HTTP/1.1 request needs a non-empty Host field naming the server (RFC 9112 §3.2)")
            }
        }
        if method == "CONNECT" {
            // A CONNECT request has no content; what follows is tunnel data.
            if fields.contains(name: "Transfer-Encoding") {
                throw HTTP1Error(.ambiguousFraming, status: 400, "a CONNECT request cannot have a body")
            }
            return .none
        }
        return try HTTP1Syntax.framing(of: fields, version: version, isRequest: true)
    }

    private mutating func begin(framing: HTTP1BodyFraming, into events: inout [HTTP1Event]) {
        fields = HTTPHeaders()
        switch framing {
        case .none, .contentLength(0): endMessage(trailers: HTTPHeaders(), into: &events)
        case .contentLength(let length): state = .body(remaining: length)
        case .chunked: state = .chunkSize
        case .untilClose: state = .untilClose
        }
    }

    private mutating func endMessage(trailers: HTTPHeaders, into events: inout [HTTP1Event]) {
        events.append(.end(trailers: trailers))
        switch mode {
        case .request:
            if let request = currentRequest, request.isConnect {
                state = .upgradePending
            } else if let request = currentRequest, request.requestsUpgrade, pausesAfterUpgradeRequest {
                state = .paused
            } else {
                state = .startLine
            }
        case .response:
            if currentStatus == 101 || (currentResponseMethod == "CONNECT" && (200..<300).contains(currentStatus)) {
                state = .upgradePending
            } else {
                state = .startLine
            }
        }
        resetMessage()
    }

    private mutating func resetMessage() {
        start = nil
        fields = HTTPHeaders()
        currentRequest = nil
        sectionBytes = 0
    }

    // MARK: - Start lines and chunk sizes

    private func parseRequestLine(_ line: [UInt8]) throws(HTTP1Error) -> StartLine {
        let parts = line.split(separator: Byte.space, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw HTTP1Error.malformed(
                "the request line \(quoted(line.prefix(60))) is not 'METHOD target HTTP/1.1' with single spaces")
        }
        guard parts[0].allSatisfy(HTTP1Syntax.isTokenByte) else {
            throw HTTP1Error.malformed("the method \(quoted(parts[0].prefix(40))) is not a token")
        }
        let version = try HTTP1Syntax.parseVersion(parts[2])
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = try HTTP1Syntax.parseTarget(String(decoding: parts[1], as: UTF8.self), method: method)
        return .request(method: method, target: target, version: version)
    }

    private func parseStatusLine(_ line: [UInt8]) throws(HTTP1Error) -> StartLine {
        guard line.count >= 12, line[8] == Byte.space else {
            throw HTTP1Error.malformed("the status line \(quoted(line.prefix(60))) is not 'HTTP/1.1 200 Reason'")
        }
        let version = try HTTP1Syntax.parseVersion(line[0..<8])
        let digits = line[9..<12]
        guard digits.allSatisfy({ $0 >= Byte.zero && $0 <= Byte.nine }), digits.first != Byte.zero,
              line.count == 12 || line[12] == Byte.space else {
            throw HTTP1Error.malformed("the status line \(quoted(line.prefix(60))) has no three-digit status code")
        }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - Byte.zero) }
        let reason = line.count > 13 ? HTTP1Syntax.string(line[13...]) : ""
        return .response(version: version, status: status, reason: reason)
    }

    private func parseChunkSize(_ line: [UInt8]) throws(HTTP1Error) -> Int {
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = HTTP1Syntax.hexValue(line[index]) {
            guard index - line.startIndex < 15 else {
                throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is too large")
            }
            size = size * 16 + digit
            index += 1
        }
        guard index > line.startIndex else {
            throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is not hexadecimal")
        }
        while index < line.endIndex, line[index] == Byte.space || line[index] == Byte.tab { index += 1 }
        // Chunk extensions are allowed and ignored.
        guard index == line.endIndex || line[index] == Byte.semicolon else {
            throw HTTP1Error(.badChunk, status: 400, "the chunk size \(quoted(line.prefix(40))) is not hexadecimal")
        }
        for byte in line[index...] where byte < 0x20 && byte != Byte.tab || byte == 0x7f {
            throw HTTP1Error(.badChunk, status: 400, "a chunk extension contains byte \(hex(byte))")
        }
        return size
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

enum Byte {
    static let cr: UInt8 = 0x0d
    static let lf: UInt8 = 0x0a
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon: UInt8 = 0x3a
    static let semicolon: UInt8 = 0x3b
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
}
