import Foundation
import PinproxyCertificates
import PinproxyTLS

extension ChainFetcher {
    /// The chain a server presented, and whether a proxy in between could reach the server.
    public struct Presented: Sendable {
        public var chain: [Certificate]
        /// Through a proxy: why it could not reach the upstream (its own `502`), nil when it did
        /// or when there was no proxy. The chain is then the proxy's stand-in, forged without
        /// the upstream's (pinproxy completes the handshake so that it can say why in a 502).
        public var upstreamFailure: String?
    }

    /// ``fetch(host:port:serverName:timeout:proxy:)``, and through a proxy one `HEAD /` on the
    /// tunnel after the handshake, to learn whether the proxy reached the upstream.
    public static func fetchPresented(host: String, port: UInt16, serverName: String? = nil, timeout: TimeInterval = 10,
                                      proxy: (host: String, port: UInt16)? = nil) throws -> Presented {
        var failure: String?
        let chain = try fetchChain(host: host, port: port, serverName: serverName, timeout: timeout, proxy: proxy) { tls in
            if proxy != nil { failure = proxyFailure(tls, endpoint: display(host: host, port: port)) }
        }
        return Presented(chain: chain, upstreamFailure: failure)
    }

    /// Sends `HEAD /` with `Connection: close` and reads the answer to its end (bounded by the
    /// socket's timeout and 64 KiB). A proxy that could not reach the upstream answers itself,
    /// with a `Proxy-Status` error (RFC 9209; pinproxy's `502`, or `403` when the target is the
    /// proxy); the reason its body gives is returned. Anything else — an answer of the
    /// upstream, even an error, a timeout — is nil: only the proxy's own refusal is reported.
    static func proxyFailure(_ tls: TLSBlockingStream, endpoint: String) -> String? {
        let request = Array("HEAD / HTTP/1.1\r\nHost: \(endpoint)\r\nUser-Agent: pinproxy-pin\r\nConnection: close\r\n\r\n".utf8)
        guard (try? tls.write(request)) != nil else { return nil }
        // Read to the close (Connection: close); what came before a timeout still counts.
        var answer: [UInt8] = []
        while answer.count < 64 * 1024, let chunk = try? tls.read(), !chunk.isEmpty { answer += chunk }
        let text = String(decoding: answer, as: UTF8.self)
        guard let headEnd = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<headEnd.lowerBound].split(separator: "\r\n")
        // The proxy's own answer carries RFC 9209's Proxy-Status with an error; an error
        // response the upstream sent (through the proxy) does not.
        guard head.dropFirst().contains(where: { $0.lowercased().hasPrefix("proxy-status:") && $0.contains("error=") }) else { return nil }
        // pinproxy's body: "502 Bad Gateway: the upstream …".
        let body = text[headEnd.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)
        if let colon = body.range(of: ": "), body.first?.isNumber == true { return String(body[colon.upperBound...]) }
        return body.isEmpty ? String(head.first ?? "") : body
    }
}
