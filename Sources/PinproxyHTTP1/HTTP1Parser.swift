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
/// then (``HTTP1HeadMemory``). Heads are read by an ``HTTP1HeadReader``; the
/// parser keeps the lines, the body framing and the state between messages.
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

    // No case carries more than a count, so checking the state on every line is a plain compare.
    var state: State = .startLine
    /// Why parsing stopped, once it has; rethrown on every later call.
    var failure: HTTP1Error?
    /// The incomplete line carried over from the previous feed.
    var line: [UInt8] = []
    /// Bytes of the current head or trailer section so far, line endings included.
    var sectionBytes = 0
    /// Fields of the trailer section being read.
    var fields = HTTPHeaders()
    /// Start lines and field sections, and (response mode) the methods of the requests answered.
    var head: HTTP1HeadReader
    /// What the request being read asks for once it ends (request mode).
    var requestSwitch = HTTP1HeadReader.RequestSwitch.none
    /// Whether the response being read answers a CONNECT request.
    var responseToConnect = false
    /// Bytes that came after a request that paused the parser, until it resumes.
    var pausedBytes: [UInt8] = []
    /// Status of the response being read (response mode).
    var currentStatus = 0

    /// A parser for `mode` with the given limits.
    public init(mode: Mode, limits: HTTP1Limits = .default, pausesAfterUpgradeRequest: Bool = true) {
        self.mode = mode
        self.limits = limits
        self.pausesAfterUpgradeRequest = pausesAfterUpgradeRequest
        head = HTTP1HeadReader(mode: mode)
    }

    // MARK: - Public operations

    /// Records that a request with `method` was sent, so its response is framed right.
    /// Call once per forwarded request, in order; without it a response is read as an answer to GET.
    public mutating func expectResponse(toMethod method: String) {
        head.expectResponse(toMethod: method)
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
        try feed(bytes, into: &events, keepingCompleteMessages: false)
    }

    /// As ``feed(_:into:)``, except that on error the events of the messages
    /// this call completed before it stay in `events` (up to its last `.end`):
    /// for a reader that can still use a complete response its peer followed
    /// with bytes that are no HTTP. The error is thrown all the same.
    public mutating func feedKeepingCompleteMessages(_ bytes: ArraySlice<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) {
        try feed(bytes, into: &events, keepingCompleteMessages: true)
    }

    private mutating func feed(_ bytes: ArraySlice<UInt8>, into events: inout [HTTP1Event], keepingCompleteMessages: Bool) throws(HTTP1Error) {
        let kept = events.count
        do {
            try run(bytes, into: &events)
        } catch {
            let complete = keepingCompleteMessages ? events[kept...].lastIndex(where: \.isEnd).map { $0 + 1 } : nil
            events.removeSubrange((complete ?? kept)...)
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
    var stoppingError: HTTP1Error { failure ?? HTTP1Error(.stopped, status: 400, "the parser has failed") }

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
}
