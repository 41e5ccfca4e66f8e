import PinproxyHTTP1
import PinproxyHTTP2
import PinproxyTLS

extension OriginServer {
    /// One connection that chose `h2`: an ``HTTP2Session`` (server role) fed
    /// from the blocking TLS stream. Each request is recorded when its head
    /// arrives, as an HTTP/1.1 request is, and answered once its body (if any)
    /// has ended; the connection ends when the client closes it or the session
    /// has nothing left to read or write (GOAWAY both ways).
    func serveHTTP2(_ stream: TLSBlockingStream) {
        guard let session = try? HTTP2Session(role: .server) else { return }
        let body = Array(greeting.utf8)
        var open: Set<HTTP2StreamID> = []
        while true {
            for event in session.takeEvents() {
                switch event {
                case .request(let id, let head, let endStream):
                    record(method: head.method, target: head.path ?? head.authority ?? "?",
                           scenario: head.headers.first(name: ScenarioMarker.header))
                    if endStream { answer(id, body: body, on: session) } else { open.insert(id) }
                case .data(let id, let bytes, let endStream):
                    session.consume(bytes.count, on: id)
                    if endStream, open.remove(id) != nil { answer(id, body: body, on: session) }
                case .trailers(let id, _):
                    if open.remove(id) != nil { answer(id, body: body, on: session) }
                case .streamClosed(let id, _):
                    open.remove(id)
                default:
                    break
                }
            }
            let output = session.takeOutput()
            if !output.isEmpty {
                guard (try? stream.send(output)) != nil else { return }
            }
            if session.isFinished {
                stream.shutdown()
                return
            }
            guard let chunk = try? stream.readChunk(), !chunk.isEmpty else { return }
            session.receive(chunk)
        }
    }

    /// `200 OK` with the greeting, as the HTTP/1.1 side answers.
    private func answer(_ id: HTTP2StreamID, body: [UInt8], on session: HTTP2Session) {
        let head = HTTP2ResponseHead(status: 200, headers: ["content-type": "text/plain", "content-length": String(body.count)])
        guard (try? session.sendResponse(head, on: id, endStream: false)) != nil else { return }
        try? session.sendData(body, on: id, endStream: true)
    }
}
