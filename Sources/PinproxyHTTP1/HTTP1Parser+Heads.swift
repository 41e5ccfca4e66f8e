// The parser's side of heads and message ends: field lines handed to the
// ``HTTP1HeadReader`` (trailer fields kept here), a complete head turned
// into events and a body state, and how a message ends. The state it
// touches is the parser's own (internal to the module, not public).
extension HTTP1Parser {

    mutating func addField(_ line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) {
        if line.first == Byte.space || line.first == Byte.tab {
            throw HTTP1Error.malformed("obsolete line folding (a field line starting with whitespace) is not accepted")
        }
        if state == .headers { return try head.addField(line, raw: raw, limits: limits) }
        guard fields.count < limits.maxHeaderCount else {
            throw Self.tooLarge("more than \(limits.maxHeaderCount) header fields")
        }
        fields.addWireSafe(try HTTP1Syntax.parseField(line))
    }

    /// Emits the head whose field section `emptyLine` (without its LF) ended.
    mutating func completeHead(into events: inout [HTTP1Event], emptyLine: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) {
        let completed = try head.complete(emptyLine: emptyLine, into: &events)
        requestSwitch = completed.switchTo
        responseToConnect = completed.answersConnect
        currentStatus = completed.status
        begin(framing: completed.framing, into: &events)
    }

    mutating func begin(framing: HTTP1BodyFraming, into events: inout [HTTP1Event]) {
        resetTrailers()
        switch framing {
        case .none, .contentLength(0): endMessage(trailers: HTTPHeaders(), into: &events)
        case .contentLength(let length): state = .body(remaining: length)
        case .chunked: state = .chunkSize
        case .untilClose: state = .untilClose
        }
    }

    mutating func endMessage(trailers: HTTPHeaders, into events: inout [HTTP1Event]) {
        events.append(.end(trailers: trailers))
        switch mode {
        case .request:
            switch requestSwitch {
            case .tunnel: state = .upgradePending
            case .upgrade where pausesAfterUpgradeRequest: state = .paused
            default: state = .startLine
            }
        case .response:
            if currentStatus == 101 || (responseToConnect && (200..<300).contains(currentStatus)) {
                state = .upgradePending
            } else {
                state = .startLine
            }
        }
        resetMessage()
    }

    /// Empties the trailer list; one that is empty already was never
    /// added to, so it is left as it is (most messages have no trailers).
    @inline(__always)
    mutating func resetTrailers() {
        if !fields.isEmpty { fields = HTTPHeaders() }
    }

    mutating func resetMessage() {
        head.discardStartLine()
        resetTrailers()
        requestSwitch = .none
        sectionBytes = 0
    }
}
