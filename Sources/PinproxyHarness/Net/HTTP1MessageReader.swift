import PinproxyCertificates
import PinproxyHTTP1

/// Whole HTTP/1.1 messages, one at a time, from a blocking byte source, read with the proxy's
/// own parser (PinproxyHTTP1): the harness's origin, client and control-API client frame
/// messages exactly as the proxy does (Content-Length, chunked, until close).
struct HTTP1MessageReader {
    private var parser: HTTP1Parser
    private var events: [HTTP1Event] = []
    private var ended = false
    /// The next bytes, empty at the end of the stream.
    private let source: () throws -> [UInt8]

    init(_ mode: HTTP1Parser.Mode, source: @escaping () throws -> [UInt8]) {
        parser = HTTP1Parser(mode: mode)
        self.source = source
    }

    /// The next request with its whole body; nil when the stream ends between requests.
    mutating func nextRequest() throws -> (head: HTTP1RequestHead, body: [UInt8])? {
        guard let first = try nextEvent() else { return nil }
        guard case .requestHead(let head) = first else { throw PinproxyError(.connect, "the request did not start with a head") }
        return (head, try body())
    }

    /// The final response to a request made with `method` (interim 1xx responses skipped), with its whole body.
    mutating func response(toMethod method: String) throws -> (head: HTTP1ResponseHead, body: [UInt8]) {
        parser.expectResponse(toMethod: method)
        while true {
            guard let event = try nextEvent() else { throw PinproxyError(.connect, "no HTTP response came back") }
            guard case .responseHead(let head) = event else { continue }
            let body = try self.body()
            if head.isInformational { parser.expectResponse(toMethod: method); continue }
            return (head, body)
        }
    }

    /// The body of the message whose head was just read, up to its end.
    private mutating func body() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let event = try nextEvent() {
            switch event {
            case .body(let slice): bytes += slice
            case .end, .upgrade: return bytes
            default: continue
            }
        }
        throw PinproxyError(.connect, "the connection closed in the middle of an HTTP message")
    }

    private mutating func nextEvent() throws -> HTTP1Event? {
        while events.isEmpty {
            if ended { return nil }
            let chunk = try source()
            do {
                if chunk.isEmpty {
                    ended = true
                    events = try parser.finish()
                } else {
                    events = try parser.feed(chunk)
                }
            } catch {
                throw PinproxyError(.connect, "the peer broke HTTP/1.1: \(error.reason)")
            }
        }
        return events.removeFirst()
    }
}
