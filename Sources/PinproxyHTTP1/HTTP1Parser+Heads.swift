// The parser's head completion and message framing: what a complete head
// becomes (events, framing, what the message switches to) and how a message
// ends. Split from HTTP1Parser.swift by concept; the state it touches is the
// parser's own (internal to the module, not public).
extension HTTP1Parser {

    mutating func addField(_ line: UnsafeBufferPointer<UInt8>, raw: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) {
        if line.first == Byte.space || line.first == Byte.tab {
            throw HTTP1Error.malformed("obsolete line folding (a field line starting with whitespace) is not accepted")
        }
        let isHead = state == .headers
        guard (isHead ? memory.count : fields.count) < limits.maxHeaderCount else {
            throw Self.tooLarge("more than \(limits.maxHeaderCount) header fields")
        }
        if isHead {
            try memory.addField(line, raw: raw, reserving: min(lastFieldCount, limits.maxHeaderCount))
        } else {
            fields.addWireSafe(try HTTP1Syntax.parseField(line))
        }
    }

    /// Emits the head whose field section `emptyLine` (without its LF) ended.
    mutating func completeHead(into events: inout [HTTP1Event], emptyLine: UnsafeBufferPointer<UInt8>) throws(HTTP1Error) {
        // Taken rather than copied: the start line is done with once its head is out.
        guard let start = start.take() else { throw HTTP1Error.malformed("header section without a start line") }
        fields = memory.completeHead(emptyLine: emptyLine)
        lastFieldCount = max(fields.count, 1)
        switch start {
        case .request(let method, let target, let version):
            let framing = try Self.requestFraming(method: method, target: target, version: version, fields: fields)
            let head = HTTP1RequestHead(method: method, target: target, version: version, headers: fields, framing: framing)
            requestSwitch = Self.isMethod(method, "CONNECT") ? .tunnel : head.requestsUpgrade ? .upgrade : .none
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
            responseToConnect = Self.isMethod(method, "CONNECT")
            let framing: HTTP1BodyFraming
            if (100..<200).contains(status) || status == 204 || status == 304 || Self.isMethod(method, "HEAD")
                || (Self.isMethod(method, "CONNECT") && (200..<300).contains(status)) {
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

    mutating func begin(framing: HTTP1BodyFraming, into events: inout [HTTP1Event]) {
        fields = HTTPHeaders()
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

    mutating func resetMessage() {
        start = nil
        fields = HTTPHeaders()
        requestSwitch = .none
        sectionBytes = 0
    }
}
