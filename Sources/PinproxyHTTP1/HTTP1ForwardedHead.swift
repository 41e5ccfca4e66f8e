/// A forwarded head ready for the wire, and what its sender must know of it.
public struct HTTP1ForwardedHead: Hashable, Sendable {
    /// The start line and header fields, ending with the empty line.
    public var bytes: [UInt8]
    /// How the body must be written: with ``HTTP1ChunkedEncoder`` for
    /// `.chunked`, as is for `.contentLength`, and for `.untilClose` as is
    /// followed by closing the connection.
    public var framing: HTTP1BodyFraming
    /// For a response, whether the client connection may stay open
    /// afterwards (``HTTP1ResponseHead/keepAlive`` of the head the bytes
    /// spell); for a request, whether the client asked to keep it open.
    public var keepAlive: Bool

    public init(bytes: [UInt8], framing: HTTP1BodyFraming, keepAlive: Bool) {
        self.bytes = bytes
        self.framing = framing
        self.keepAlive = keepAlive
    }
}

/// Forwarded heads written straight to bytes, without building them first.
///
/// The result is byte for byte what building the head with
/// ``requestForUpstream(_:via:)`` or ``responseForClient(_:to:closeConnection:via:)``
/// and calling `serialized()` gives: the received fields that stay are
/// copied from the received head as they are, with the few values the rules
/// replace, followed by the fields the rules add, in the order they add
/// them. Received heads that are not wire-safe or not indexed (see
/// ``HTTPHeaders``) are built and serialized the long way.
extension HTTP1Forwarding {
    /// ``requestForUpstream(_:via:)`` serialized; with `host`, its `Host`
    /// field is first replaced as `replaceOrAdd(name: "Host", value: host)`
    /// would (a reverse proxy naming the origin instead of itself).
    public static func serializedRequestForUpstream(
        _ head: HTTP1RequestHead, via: String? = defaultVia, host: String? = nil
    ) -> HTTP1ForwardedHead {
        let plan = RequestPlan(head)
        guard let dropped = HopByHop.dropped(in: head.headers, keepingUpgrade: plan.upgrading) else {
            var forwarded = requestForUpstream(head, via: via)
            if let host { forwarded.headers.replaceOrAdd(name: "Host", value: host) }
            return HTTP1ForwardedHead(bytes: forwarded.serialized(), framing: forwarded.framing, keepAlive: head.keepAlive)
        }
        var fields = ForwardedFields(head.headers, dropping: dropped.positions)
        if let urlHost = plan.host { fields.replaceOrAddHost(urlHost) }
        if plan.upgrading { fields.append(.connectionUpgrade) }
        if plan.keepsTETrailers { fields.append(.teTrailers) }
        if let length = plan.contentLength { fields.setContentLength(length) }
        if plan.addsChunked { fields.append(.transferEncodingChunked) }
        if let via { fields.appendVia(viaValue(version: head.version, via: via)) }
        if let host { fields.replaceOrAddHost(host) }
        let framing = plan.framing
        let targetText = plan.target.description
        let (edits, added) = fields.finish()
        let bound = head.method.utf8.count + targetText.utf8.count + 2 + HTTP1HeadWriter.versionBound + 2
            + HTTP1HeadWriter.sizeBound(of: head.headers) + edits.sizeBound + added.sizeBound + 2
        let bytes = HTTP1HeadWriter.write(bound: bound) { out in
            out.appendSanitized(head.method)
            out.append(Byte.space)
            out.appendSanitized(targetText)
            out.append(Byte.space)
            out.append(HTTPVersion.http1_1)
            out.appendCRLF()
            out.append(head.headers, edits: edits)
            added.write(to: &out)
            out.appendCRLF()
        }
        return HTTP1ForwardedHead(bytes: bytes, framing: framing, keepAlive: head.keepAlive)
    }

    /// ``responseForClient(_:to:closeConnection:via:)`` serialized, with the
    /// framing and keep-alive of the head that builds.
    public static func serializedResponseForClient(
        _ head: HTTP1ResponseHead, to request: HTTP1RequestHead,
        closeConnection: Bool = false, via: String? = defaultVia
    ) -> HTTP1ForwardedHead {
        let upgrading = head.status == 101
        guard let dropped = HopByHop.dropped(in: head.headers, keepingUpgrade: upgrading) else {
            let forwarded = responseForClient(head, to: request, closeConnection: closeConnection, via: via)
            return HTTP1ForwardedHead(bytes: forwarded.serialized(), framing: forwarded.framing, keepAlive: forwarded.keepAlive)
        }
        var fields = ForwardedFields(head.headers, dropping: dropped.positions)
        let plan = ResponsePlan(head, to: request, closeConnection: closeConnection)
        switch plan.contentLength {
        case .set(let length): fields.setContentLength(length)
        case .remove: fields.removeContentLength()
        case .keep: break
        }
        if plan.addsChunked { fields.append(.transferEncodingChunked) }
        switch plan.connection {
        case .upgrade?: fields.append(.connectionUpgrade)
        case .close?: fields.append(.connectionClose)
        case .keepAlive?: fields.append(.connectionKeepAlive)
        case nil: break
        }
        if let via { fields.appendVia(viaValue(version: head.version, via: via)) }
        let (edits, added) = fields.finish()
        let bound = HTTP1HeadWriter.versionBound + 1 + HTTP1HeadWriter.decimalBound + 1 + head.reason.utf8.count + 2
            + HTTP1HeadWriter.sizeBound(of: head.headers) + edits.sizeBound + added.sizeBound + 2
        let bytes = HTTP1HeadWriter.write(bound: bound) { out in
            out.append(HTTPVersion.http1_1)
            out.append(Byte.space)
            out.appendDecimal(head.status)
            out.append(Byte.space)
            out.appendSanitized(head.reason)
            out.appendCRLF()
            out.append(head.headers, edits: edits)
            added.write(to: &out)
            out.appendCRLF()
        }
        return HTTP1ForwardedHead(bytes: bytes, framing: plan.framing, keepAlive: plan.keepAlive)
    }
}

/// The fields of a forwarded head as edits to the received ones while the
/// rules are applied: which stay, the new values of the first `Host` and
/// `Content-Length` that stay, and the fields added after them, in the
/// order ``HTTP1Forwarding`` adds them.
///
/// The received fields are wire-safe and indexed, and every `Connection`,
/// `TE` and `Transfer-Encoding` among them was dropped as hop-by-hop, so
/// added fields with those names never meet received ones.
private struct ForwardedFields {
    let received: HTTPHeaders
    /// Received positions that do not go out.
    private var removed: HTTPFieldIndex.Positions
    /// The new value of the first received `Host` that stays, if replaced.
    private var hostValue: String?
    /// The new value of the first received `Content-Length` that stays, if replaced.
    private var contentLengthValue: Int?
    private var added = AddedFields()

    init(_ received: HTTPHeaders, dropping removed: HTTPFieldIndex.Positions) {
        self.received = received
        self.removed = removed
    }

    /// `add(name:value:)` of a literal field.
    mutating func append(_ kind: AddedFields.Kind) { added.append(kind) }

    /// `add(name: "Via", value:)`.
    mutating func appendVia(_ value: String) { added.appendVia(value) }

    /// `replaceOrAdd(name: "Host", value:)` on the list so far.
    mutating func replaceOrAddHost(_ value: String) {
        if let first = nextStaying(.host, from: 0) {
            hostValue = value
            removeStaying(.host, from: first + 1)
        } else {
            added.replaceOrAddHost(value)
        }
    }

    /// ``HTTPHeaders/setContentLength(_:)`` on the list so far (no `Content-Length` is added before it).
    mutating func setContentLength(_ length: Int) {
        guard let first = nextStaying(.contentLength, from: 0) else {
            added.appendContentLength(length)
            return
        }
        if nextStaying(.contentLength, from: first + 1) == nil,
           received.fields[first].value.withUTF8Bytes({ HTTP1Bytes.isDecimal($0, of: length) }) {
            return
        }
        contentLengthValue = length
        removeStaying(.contentLength, from: first + 1)
    }

    /// `remove(name: "Content-Length")` on the list so far.
    mutating func removeContentLength() { removeStaying(.contentLength, from: 0) }

    /// The first received field called `name` at or after `start` that stays.
    private func nextStaying(_ name: HTTPFieldIndex.Name, from start: Int) -> Int? {
        var found = received.firstIndex(name, from: start)
        while let position = found, removed.contains(position) { found = received.firstIndex(name, from: position + 1) }
        return found
    }

    private mutating func removeStaying(_ name: HTTPFieldIndex.Name, from start: Int) {
        var found = received.firstIndex(name, from: start)
        while let position = found {
            removed.insert(position)
            found = received.firstIndex(name, from: position + 1)
        }
    }

    /// The edits to the received fields and the fields added, to write with
    /// ``HTTP1HeadWriter/append(_:edits:)`` and ``AddedFields/write(to:)``.
    func finish() -> (edits: HTTP1HeadWriter.FieldEdits, added: AddedFields) {
        var edits = HTTP1HeadWriter.FieldEdits(removed: removed)
        if let hostValue, let position = nextStaying(.host, from: 0) { edits.replace(position, with: hostValue) }
        if let contentLengthValue, let position = nextStaying(.contentLength, from: 0) {
            edits.replace(position, withNumber: contentLengthValue)
        }
        return (edits, added)
    }
}

/// The fields the forwarding rules add to one head, in the order added.
///
/// Kept small and inline (a copy is a few words): each kind of field is
/// added at most once, so a kind's value has one slot, and `order` holds
/// the kinds in the order they were added, four bits each.
private struct AddedFields {
    enum Kind: UInt8 {
        case host = 1, connectionUpgrade, connectionClose, connectionKeepAlive, teTrailers, transferEncodingChunked
        case contentLength, via
    }

    private var order: UInt32 = 0
    private var count = 0
    private var host: String?
    private var via: String?
    private var contentLength = 0

    mutating func append(_ kind: Kind) {
        precondition(count < 8, "more fields added to a forwarded head than the rules add")
        order |= UInt32(kind.rawValue) << (4 * count)
        count += 1
    }

    /// `replaceOrAdd(name: "Host", value:)` among the added fields.
    mutating func replaceOrAddHost(_ value: String) {
        if host == nil { append(.host) }
        host = value
    }

    mutating func appendVia(_ value: String) {
        append(.via)
        via = value
    }

    mutating func appendContentLength(_ value: Int) {
        append(.contentLength)
        contentLength = value
    }

    var sizeBound: Int {
        // The longest literal field is `Transfer-Encoding: chunked` CRLF (28 bytes).
        count * (32 + HTTP1HeadWriter.decimalBound) + (host?.utf8.count ?? 0) + (via?.utf8.count ?? 0)
    }

    func write(to out: inout HTTP1HeadWriter) {
        var kinds = order
        while kinds != 0 {
            guard let kind = Kind(rawValue: UInt8(kinds & 0xf)) else { break }
            kinds >>= 4
            switch kind {
            case .host: write("Host: ", text: host ?? "", to: &out)
            case .connectionUpgrade: out.append(HTTP1Bytes.buffer("Connection: upgrade\r\n"))
            case .connectionClose: out.append(HTTP1Bytes.buffer("Connection: close\r\n"))
            case .connectionKeepAlive: out.append(HTTP1Bytes.buffer("Connection: keep-alive\r\n"))
            case .teTrailers: out.append(HTTP1Bytes.buffer("TE: trailers\r\n"))
            case .transferEncodingChunked: out.append(HTTP1Bytes.buffer("Transfer-Encoding: chunked\r\n"))
            case .contentLength:
                out.append(HTTP1Bytes.buffer("Content-Length: "))
                out.appendDecimal(contentLength)
                out.appendCRLF()
            case .via: write("Via: ", text: via ?? "", to: &out)
            }
        }
    }

    /// A field with a caller's text, sanitized as the serializer does.
    private func write(_ nameAndColon: StaticString, text: String, to out: inout HTTP1HeadWriter) {
        out.append(HTTP1Bytes.buffer(nameAndColon))
        out.appendSanitized(text)
        out.appendCRLF()
    }
}
