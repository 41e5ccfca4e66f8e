import Foundation
import PinproxyCertificates
import PinproxyHTTP1

/// Asking an HTTP proxy for a tunnel (`CONNECT`), for the built-in client and `pin --connect`.
enum ProxyTunnel {
    /// Sends `CONNECT authority` on `socket` and reads the proxy's answer head, byte by byte
    /// so that nothing of what follows in the tunnel is read with it. Returns the status and
    /// the status line; throws when the proxy closes, times out or does not speak HTTP.
    /// `proxy` names the proxy in errors.
    static func open(_ socket: LoopbackSocket, to authority: String, proxy: String,
                     headers: [(String, String)] = []) throws -> (status: Int, statusLine: String) {
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        do { try socket.send(Array((request + "\r\n").utf8)) } catch let error as PinproxyError {
            throw PinproxyError(.connect, "\(proxy): cannot send CONNECT (\(error.reason))")
        }
        var parser = HTTP1Parser(mode: .response)
        parser.expectResponse(toMethod: "CONNECT")
        var seen: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            guard seen.count < 16 * 1024 else { throw PinproxyError(.connect, "\(proxy): the answer to CONNECT has no end of head") }
            let n = read(socket.fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else {
                let why = n == 0 ? "closed the connection" : errno == EAGAIN ? "did not answer in time" : String(cString: strerror(errno))
                throw PinproxyError(.connect, "\(proxy): the proxy \(why) before answering CONNECT \(authority)")
            }
            seen.append(byte)
            let statusLine = String(decoding: seen.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
            let events: [HTTP1Event]
            do { events = try parser.feed([byte]) } catch {
                throw PinproxyError(.connect, "\(proxy): not an HTTP proxy (it answered CONNECT with '\(statusLine.prefix(80))')")
            }
            for case .responseHead(let head) in events where !head.isInformational {
                return (head.status, statusLine)
            }
        }
    }
}
