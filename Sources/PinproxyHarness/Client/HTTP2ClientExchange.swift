import PinproxyCertificates
import PinproxyHTTP2
import PinproxyTLS

/// The built-in client's exchange when the server chose `h2`: one stream on
/// an ``HTTP2Session`` (client role) over the blocking TLS stream, then
/// GOAWAY, as a library does that closes its connection after one request.
enum HTTP2ClientExchange {
    /// Sends `request` and reads its response to the end of the stream.
    static func run(_ request: ClientRequest, over stream: TLSBlockingStream) throws -> (status: Int, body: String) {
        let session: HTTP2Session
        let id: HTTP2StreamID
        do {
            session = try HTTP2Session(role: .client)
            id = try session.sendRequest(request.http2, endStream: true)
        } catch {
            throw PinproxyError(.connect, "the HTTP/2 request could not be made: \(error.reason)")
        }
        var status: Int?
        var body: [UInt8] = []
        while true {
            // The preface, SETTINGS and the request first; then acknowledgements and window updates.
            let output = session.takeOutput()
            if !output.isEmpty { try stream.send(output) }
            for event in session.takeEvents() {
                switch event {
                case .response(id, let head, _) where !head.isInformational:
                    status = head.status
                case .data(id, let bytes, _):
                    body += bytes
                    session.consume(bytes.count, on: id)
                case .streamClosed(id, let code):
                    guard code == .noError, let status else {
                        throw PinproxyError(.connect, "the HTTP/2 stream ended with \(code) before a whole response came back")
                    }
                    finish(session, over: stream)
                    return (status, String(decoding: body, as: UTF8.self))
                case .goAway(let last, let code, _) where last < id:
                    throw PinproxyError(.connect, "the server sent GOAWAY (\(code)) without processing the request")
                case .connectionError(let error):
                    throw PinproxyError(.connect, "the server broke HTTP/2: \(error.reason)")
                default:
                    break
                }
            }
            let chunk = try stream.readChunk()
            guard !chunk.isEmpty else {
                throw PinproxyError(.connect, "the server closed the connection before the HTTP/2 response ended")
            }
            session.receive(chunk)
        }
    }

    /// GOAWAY (and any acknowledgement still due), sent before the TLS close.
    private static func finish(_ session: HTTP2Session, over stream: TLSBlockingStream) {
        try? session.goAway(code: .noError)
        let output = session.takeOutput()
        if !output.isEmpty { try? stream.send(output) }
    }
}
