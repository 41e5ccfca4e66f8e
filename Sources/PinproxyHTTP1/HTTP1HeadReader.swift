/// Reads the heads of one direction of a connection for ``HTTP1Parser``:
/// the start line and the field lines as the parser hands them over, then,
/// at the empty line, the complete head with the framing of its message
/// (RFC 9112 §6.3).
///
/// Lines that repeat the previous head's are not parsed again
/// (``HTTP1HeadMemory``). In response mode it keeps the methods of the
/// requests still to be answered, oldest first: a response's framing
/// depends on the request it answers (HEAD, CONNECT).
struct HTTP1HeadReader: Sendable {
    /// A parsed start line, kept until its head is complete.
    enum StartLine: Sendable {
        case request(method: String, target: HTTP1RequestTarget, version: HTTPVersion)
        case response(version: HTTPVersion, status: Int, reason: String)
    }

    /// What a request switches the connection to once it ends.
    enum RequestSwitch: Sendable {
        case none
        /// A CONNECT request: the rest is tunnel data.
        case tunnel
        /// A request asking for `Upgrade`.
        case upgrade
    }

    /// What a completed head means for the rest of its message.
    struct Completed {
        var framing: HTTP1BodyFraming
        /// (Requests) what the connection switches to once the message ends.
        var switchTo = RequestSwitch.none
        /// (Responses) the status, and whether the response answers a CONNECT.
        var status = 0
        var answersConnect = false
    }

    let mode: HTTP1Parser.Mode
    private(set) var start: StartLine?
    /// The previous head, whose repeated lines are reused rather than
    /// parsed; it also collects the fields of the head being read.
    private(set) var memory = HTTP1HeadMemory()
    /// Field count of the previous head, to reserve room for the next one at once.
    private var lastFieldCount = 8
    /// Methods of requests whose responses are still to come, oldest first.
    private var pendingMethods: [String] = []
    private var pendingMethodsStart = 0

    init(mode: HTTP1Parser.Mode) { self.mode = mode }

    /// Fields of the head being read so far.
    var fieldCount: Int { memory.count }

    /// Records that a request with `method` was sent (see ``HTTP1Parser/expectResponse(toMethod:)``).
    mutating func expectResponse(toMethod method: String) {
        pendingMethods.append(method)
    }

    /// Reads a start line (without its line ending; the parser checked its bytes).
    mutating func readStartLine(_ line: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) {
        if let remembered = memory.startLine(matching: line) {
            start = remembered
            return
        }
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

    /// Adds a field line of the head; `raw` is the line as it arrived (see ``HTTP1HeadMemory``).
    mutating func addField(_ line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>, limits: HTTP1Limits) throws(HTTP1Error) {
        guard memory.count < limits.maxHeaderCount else {
            throw HTTP1Parser.tooLarge("more than \(limits.maxHeaderCount) header fields")
        }
        try memory.addField(line, raw: raw, reserving: min(lastFieldCount, limits.maxHeaderCount))
    }

    /// Takes the field section at the start of `bytes` when it repeats the
    /// previous head's byte for byte: every line of it passed every check
    /// and parsed before, so only the limits, which may have changed since,
    /// are checked again (`room`: bytes the head may still take). Returns
    /// the section's size and its empty line (without LF), or nil to read
    /// line by line.
    mutating func takeRepeatedSection(
        at bytes: UnsafeBufferPointer<UInt8>, limits: HTTP1Limits, room: Int
    ) -> (size: Int, emptyLine: UnsafeBufferPointer<UInt8>)? {
        guard let section = memory.repeatedSection(at: bytes),
              section.longestLine <= limits.maxHeaderLineLength, section.fields <= limits.maxHeaderCount,
              section.size <= room else { return nil }
        memory.takeRepeatedSection()
        let emptyLine = UnsafeBufferPointer(rebasing: bytes[(section.size - 1 - memory.emptyLineLength)..<(section.size - 1)])
        return (section.size, emptyLine)
    }

    /// Completes the head whose field section `emptyLine` (without its LF)
    /// ended, and appends its event to `events` (moved there, not copied).
    mutating func complete(emptyLine: UnsafeBufferPointer<UInt8>, into events: inout [HTTP1Event]) throws(HTTP1Error) -> Completed {
        // Taken rather than copied: the start line is done with once its head is out.
        guard let start = start.take() else { throw HTTP1Error.malformed("header section without a start line") }
        let fields = memory.completeHead(emptyLine: emptyLine)
        lastFieldCount = max(fields.count, 1)
        switch start {
        case .request(let method, let target, let version):
            let framing = try Self.requestFraming(method: method, target: target, version: version, fields: fields)
            let head = HTTP1RequestHead(method: method, target: target, version: version, headers: fields, framing: framing)
            let switchTo: RequestSwitch = Self.isMethod(method, "CONNECT") ? .tunnel : head.requestsUpgrade ? .upgrade : .none
            events.append(.requestHead(head))
            return Completed(framing: framing, switchTo: switchTo)

        case .response(let version, let status, let reason):
            let method = answeredMethod(status: status)
            let framing: HTTP1BodyFraming
            if (100..<200).contains(status) || status == 204 || status == 304 || Self.isMethod(method, "HEAD")
                || (Self.isMethod(method, "CONNECT") && (200..<300).contains(status)) {
                framing = .none
            } else {
                framing = try HTTP1Syntax.framing(of: fields, version: version, isRequest: false)
            }
            events.append(.responseHead(HTTP1ResponseHead(version: version, status: status, reason: reason, headers: fields, framing: framing)))
            return Completed(framing: framing, status: status, answersConnect: Self.isMethod(method, "CONNECT"))
        }
    }

    /// Forgets a start line whose head will not complete (the message ended without it).
    mutating func discardStartLine() { start = nil }

    /// The method of the request a response with `status` answers (GET when
    /// none was recorded); a final response moves on to the next request,
    /// an interim one (1xx but 101) does not.
    private mutating func answeredMethod(status: Int) -> String {
        guard pendingMethodsStart < pendingMethods.count else { return "GET" }
        let method = pendingMethods[pendingMethodsStart]
        if (100..<200).contains(status) && status != 101 { return method }
        pendingMethodsStart += 1
        if pendingMethodsStart > 16, pendingMethodsStart * 2 > pendingMethods.count {
            pendingMethods.removeFirst(pendingMethodsStart)
            pendingMethodsStart = 0
        }
        return method
    }

    /// `method == name`, settled for most methods by their length, without
    /// the general string comparison. Exact for ASCII names without `K`, `;`
    /// or `` ` ``, the only ASCII characters another scalar is canonically
    /// equivalent to (U+212A, U+037E, U+1FEF): no string of another length
    /// equals such a name.
    @inline(__always)
    static func isMethod(_ method: String, _ name: String) -> Bool {
        method.utf8.count == name.utf8.count && method == name
    }

    static func requestFraming(
        method: String, target: HTTP1RequestTarget, version: HTTPVersion, fields: HTTPHeaders
    ) throws(HTTP1Error) -> HTTP1BodyFraming {
        let firstHostIndex = fields.firstIndex(.host)
        var hostCount = 0
        var index = firstHostIndex
        while let found = index {
            hostCount += 1
            index = fields.firstIndex(.host, from: found + 1)
        }
        let firstHost = firstHostIndex.map { fields.fields[$0].value }
        if hostCount > 1 {
            throw HTTP1Error.malformed("the request has \(hostCount) Host fields; exactly one is allowed")
        }
        // RFC 9112 §3.2: an origin-form request names its server only in Host,
        // so a missing or empty one leaves nothing to route by. In absolute
        // form the URI's authority wins (§3.2.2) and Host may be absent.
        // HTTP/1.0 may leave Host out (the proxy then names the server it
        // forwards to), but an empty one names an http URI with an empty host,
        // which RFC 9110 §4.2.1 says to reject, as nginx does for 1.0 and 1.1
        // alike: forwarded as HTTP/1.1, it would be a request the proxy itself
        // refuses.
        if case .origin = target {
            if let firstHost, firstHost.utf8.allSatisfy({ $0 == Byte.space || $0 == Byte.tab }) {
                throw HTTP1Error.malformed("the request's Host field is empty; it must name the server (RFC 9112 §3.2, RFC 9110 §4.2.1)")
            }
            if firstHost == nil, version == .http1_1 {
                throw HTTP1Error.malformed("an HTTP/1.1 request needs a Host field (RFC 9112 §3.2)")
            }
        }
        if isMethod(method, "CONNECT") {
            // A CONNECT request has no content; what follows is tunnel data.
            if fields.firstIndex(.transferEncoding) != nil {
                throw HTTP1Error(.ambiguousFraming, status: 400, "a CONNECT request cannot have a body")
            }
            return .none
        }
        return try HTTP1Syntax.framing(of: fields, version: version, isRequest: true)
    }
}
