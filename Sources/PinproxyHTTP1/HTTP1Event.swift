/// One step of an HTTP/1.x byte stream, as ``HTTP1Parser`` reports it.
///
/// Every message is reported as a head, zero or more body slices and an
/// end; 1xx interim responses too (head then end, never a body). Body slices
/// share storage with the array that was fed, so whole bodies are never
/// accumulated by the parser.
public enum HTTP1Event: Hashable, Sendable {
    /// A request line and its header fields.
    case requestHead(HTTP1RequestHead)
    /// A status line and its header fields (interim 1xx responses included).
    case responseHead(HTTP1ResponseHead)
    /// A piece of the message body, with any chunked framing removed.
    case body(ArraySlice<UInt8>)
    /// The message is complete; `trailers` holds chunked trailer fields, if any.
    case end(trailers: HTTPHeaders)
    /// The connection switched protocols (101, a 2xx answer to CONNECT, or a
    /// CONNECT request): HTTP parsing has stopped, and `tail` holds the bytes
    /// that followed the head in the same read, to be relayed untouched.
    case upgrade(tail: ArraySlice<UInt8>)
    /// Bytes fed after ``upgrade(tail:)``, passed through untouched.
    case raw(ArraySlice<UInt8>)
}

extension HTTP1Event {
    /// Whether this is a message's ``end(trailers:)``.
    public var isEnd: Bool {
        if case .end = self { return true }
        return false
    }
}
