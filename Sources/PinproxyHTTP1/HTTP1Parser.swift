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
///
/// Lines are read where they lie in the fed bytes; only a line split across
/// feeds is copied. Heads on one connection mostly repeat the previous one,
/// so lines with the same bytes as the previous head's reuse what was parsed
/// then (``HTTP1HeadMemory``).
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

    /// Where in the byte stream the parser is.
    enum State: Hashable, Sendable {
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
        /// Stopped by ``failure``.
        case failed
    }

    enum RequestSwitch: Sendable {
        case none
        /// A CONNECT request: the rest is tunnel data.
        case tunnel
        /// A request asking for `Upgrade`.
        case upgrade
    }

    /// A parsed start line, kept until its head is complete.
    enum StartLine: Sendable {
        case request(method: String, target: HTTP1RequestTarget, version: HTTPVersion)
        case response(version: HTTPVersion, status: Int, reason: String)
    }

    // No case carries more than a count, so checking the state on every line is a plain compare.
    var state: State = .startLine
    /// Why parsing stopped, once it has; rethrown on every later call.
    var failure: HTTP1Error?
    /// The incomplete line carried over from the previous feed.
    private var line: [UInt8] = []
    /// Bytes of the current head or trailer section so far, line endings included.
    var sectionBytes = 0
    var start: StartLine?
    var fields = HTTPHeaders()
    /// Field count of the previous head, to reserve room for the next one at once.
    var lastFieldCount = 8
    /// The previous head, whose repeated lines are reused rather than parsed;
    /// it also collects the fields of the head being read (``fields`` holds trailers).
    var memory = HTTP1HeadMemory()
    /// What the request being read asks for once it ends (request mode).
    var requestSwitch = RequestSwitch.none
    /// Methods of requests whose responses are still to come, oldest first.
    var pendingMethods: [String] = []
    var pendingMethodsStart = 0
    /// Whether the response being read answers a CONNECT request.
    var responseToConnect = false
    private var pausedBytes: [UInt8] = []
    /// Status of the response being read (response mode).
    var currentStatus = 0

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
        events.reserveCapacity(4)  // a head, a body slice and an end, without regrowing
        try feed(bytes[...], into: &events)
        return events
    }

    /// Parses `bytes` and returns the events they complete, like ``feed(_:)-([UInt8])``
    /// but without copying a slice into an array first: body events share
    /// storage with `bytes`.
    public mutating func feed(_ bytes: ArraySlice<UInt8>) throws(HTTP1Error) -> [HTTP1Event] {
        var events: [HTTP1Event] = []
        events.reserveCapacity(4)
        try feed(bytes, into: &events)
        return events
    }

    /// Parses `bytes` and appends the events they complete to `events`, so
    /// that a caller can reuse one array for every read.
    ///
    /// On error, the events this call appended are removed again (as
    /// ``feed(_:)-([UInt8])`` drops them) and the error is thrown; what was
    /// in `events` before stays.
    public mutating func feed(_ bytes: ArraySlice<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        let kept = events.count
        do {
            try run(bytes, into: &events)
        } catch {
            events.removeSubrange(kept...)
            var failure = error
            if mode == .response, failure.status != 502, failure.code != .truncated { failure.status = 502 }
            fail(failure)
            throw failure
        }
    }

    private mutating func fail(_ error: HTTP1Error) {
        failure = error
        state = .failed
    }

    /// The error that stopped the parser (always set once the state is `.failed`).
    private var stoppingError: HTTP1Error { failure ?? HTTP1Error(.stopped, status: 400, "the parser has failed") }

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
        case .failed:
            throw stoppingError
        }
        fail(failure)
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

    private mutating func run(_ bytes: ArraySlice<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        try bytes.withUnsafeBufferPointer { (buffer) throws(HTTP1Error) in
            try run(bytes, buffer, into: &events)
        }
        if case .upgradePending = state {
            events.append(.upgrade(tail: []))
            state = .upgraded
        }
    }

    /// The state machine over `buffer`, the bytes of `bytes`: lines are read
    /// from the buffer in place, and body events are slices of `bytes`.
    private mutating func run(
        _ bytes: ArraySlice<UInt8>, _ buffer: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) {
        let base = bytes.startIndex
        var index = 0
        let end = buffer.count
        while index < end {
            switch state {
            case .startLine, .headers, .trailers, .chunkSize:
                guard try takeLine(buffer, &index, into: &events) else { return }

            case .body(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[(base + index)..<(base + index + count)]))
                index += count
                if count == remaining { endMessage(trailers: HTTPHeaders(), into: &events) }
                else { state = .body(remaining: remaining - count) }

            case .chunkData(let remaining):
                let count = min(remaining, end - index)
                events.append(.body(bytes[(base + index)..<(base + index + count)]))
                index += count
                state = count == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - count)

            case .chunkDataEnd(let sawCR):
                let byte = buffer[index]
                index += 1
                if byte == Byte.lf { state = .chunkSize }
                else if byte == Byte.cr && !sawCR { state = .chunkDataEnd(sawCR: true) }
                else { throw HTTP1Error(.badChunk, status: 400, "chunk data is longer than its declared size") }

            case .untilClose:
                events.append(.body(bytes[(base + index)...]))
                index = end

            case .paused:
                guard pausedBytes.count + (end - index) <= limits.maxBufferedWhilePaused else {
                    throw HTTP1Error.malformed(
                        "the client sent more than \(limits.maxBufferedWhilePaused) bytes before its upgrade request was answered")
                }
                pausedBytes.append(contentsOf: bytes[(base + index)...])
                index = end

            case .upgradePending:
                events.append(.upgrade(tail: bytes[(base + index)...]))
                state = .upgraded
                index = end

            case .upgraded:
                events.append(.raw(bytes[(base + index)...]))
                index = end

            case .finished:
                throw HTTP1Error(.stopped, status: 400, "bytes arrived after the end of the stream")

            case .failed:
                throw stoppingError
            }
        }
    }

    /// Takes one complete line and handles it, or keeps the partial line for
    /// the next feed and returns false. Checks limits as bytes arrive, so an
    /// endless line fails as soon as it is too long.
    ///
    /// A line that arrived whole is handled where it lies in `buffer`; only a
    /// line split across feeds is assembled in ``line``.
    private mutating func takeLine(
        _ buffer: UnsafeBufferPointer<UInt8>, _ index: inout Int, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) -> Bool {
        let end = buffer.count
        if state == .headers, line.isEmpty, memory.count == 0, try takeRepeatedSection(buffer, &index, into: &events) { return true }
        let newline = HTTP1Bytes.firstIndex(of: Byte.lf, in: buffer, from: index)
        let chunk = UnsafeBufferPointer(rebasing: buffer[index..<(newline ?? end)])

        if case .startLine = state {
            if line.isEmpty, let first = chunk.first { try Self.checkFirstByte(first, mode: mode) }
            try Self.checkStartLineBytes(chunk, mode: mode)
        }
        let length = line.count + chunk.count
        let lengthWithoutCR = newline != nil && (chunk.last ?? line.last) == Byte.cr ? length - 1 : length
        try Self.checkLineLength(lengthWithoutCR, soFar: line, chunk: chunk, state: state, mode: mode, limits: limits)
        if state.isSection, sectionBytes + length + (newline == nil ? 0 : 1) > limits.maxHeaderBlockSize {
            throw Self.tooLarge("the header section is larger than \(limits.maxHeaderBlockSize) bytes")
        }

        guard let newline else {
            line.append(contentsOf: chunk)
            index = end
            return false
        }
        index = newline + 1
        if state.isSection { sectionBytes += length + 1 }
        if line.isEmpty {
            try handle(rawLine: chunk, into: &events)
        } else {
            var whole = line
            line = []
            whole.append(contentsOf: chunk)
            try whole.withUnsafeBufferPointer { (whole) throws(HTTP1Error) in try handle(rawLine: whole, into: &events) }
        }
        return true
    }

    /// At the start of a field section, takes the whole section when it
    /// repeats the previous head's byte for byte: every line of it passed
    /// every check and parsed before, so only the limits, which may have
    /// changed since, are checked again. Returns false to read line by line.
    private mutating func takeRepeatedSection(
        _ buffer: UnsafeBufferPointer<UInt8>, _ index: inout Int, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) -> Bool {
        guard let section = memory.repeatedSection(at: UnsafeBufferPointer(rebasing: buffer[index...])),
              section.longestLine <= limits.maxHeaderLineLength, section.fields <= limits.maxHeaderCount,
              sectionBytes + section.size <= limits.maxHeaderBlockSize else { return false }
        memory.takeRepeatedSection()
        sectionBytes += section.size
        let emptyLine = UnsafeBufferPointer(rebasing: buffer[(index + section.size - 1 - memory.emptyLineLength)..<(index + section.size - 1)])
        index += section.size
        try completeHead(into: &events, emptyLine: emptyLine)
        return true
    }

    /// Handles a complete line that may still end in CR, refusing a bare CR inside it.
    private mutating func handle(rawLine: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        var complete = rawLine
        if complete.last == Byte.cr { complete = UnsafeBufferPointer(rebasing: complete[..<(complete.count - 1)]) }
        if HTTP1Bytes.firstIndex(of: Byte.cr, in: complete) != nil {
            throw HTTP1Error.malformed("a line contains a bare CR; lines end with CRLF")
        }
        try handle(line: complete, raw: rawLine, into: &events)
    }

    /// Handles a complete line without its line ending; `raw` is the same
    /// line as it arrived, without its LF only (for ``HTTP1HeadMemory``).
    private mutating func handle(
        line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]
    ) throws(HTTP1Error) {
        switch state {
        case .startLine:
            if line.isEmpty {
                sectionBytes = 0 // empty lines between messages are not part of a head
                return
            }
            if let remembered = memory.startLine(matching: line) {
                start = remembered
            } else {
                let parsed: StartLine
                if mode == .request {
                    let (method, target, version) = try HTTP1Syntax.parseRequestLine(line)
                    parsed = .request(method: method, target: target, version: version)
                } else {
                    let (version, status, reason) = try HTTP1Syntax.parseStatusLine(line)
                    parsed = .response(version: version, status: status, reason: reason)
                }
                memory.remember(parsed, from: line)
                start = parsed
            }
            state = .headers
        case .headers:
            if line.isEmpty { try completeHead(into: &events, emptyLine: raw) } else { try addField(line, raw: raw) }
        case .trailers:
            if line.isEmpty { endMessage(trailers: fields, into: &events) } else { try addField(line, raw: raw) }
        case .chunkSize:
            let size = try HTTP1Syntax.parseChunkSize(line)
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
}
