import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyTLS

/// Where a client connection goes: straight to the origin, or through an HTTP
/// proxy with `CONNECT`.
public struct ClientRoute: Sendable {
    /// The address the TCP connection is made to (the proxy or the origin).
    public var host: String
    public var port: Int
    /// The `CONNECT` authority sent first, when going through a proxy.
    public var connectAuthority: String?

    public init(host: String, port: Int, connectAuthority: String? = nil) {
        self.host = host
        self.port = port
        self.connectAuthority = connectAuthority
    }
}

/// What one client connection did and saw.
public struct ClientRun: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The client refused the chain inside the handshake and sent an alert.
        case refusedInHandshake
        /// The handshake completed; the client refused and closed without a request.
        case closedAfterHandshake
        /// The client accepted, sent its request and read this response.
        case responded(status: Int, body: String)
        /// The connection failed for a reason of its own (not the client's decision).
        case failed(String)
    }

    /// The chain the server presented, leaf first (empty if none was received).
    public var presented: [Certificate] = []
    /// The client's decision, once a chain was received.
    public var decision: ClientDecision?
    /// The client's local port: the proxy names the connection by it.
    public var localPort = 0
    public var outcome: Outcome = .failed("not started")
    /// The negotiated TLS version, when the handshake completed.
    public var tlsVersion: String?
    /// The protocol the server chose by ALPN (`h2`, `http/1.1`), once it did: in TLS 1.3 it
    /// comes before the certificate, so a client that refused in the handshake knows it too.
    public var alpn: String?
}

/// The harness's own client: a real TLS connection (CONNECT, SNI, ALPN) whose
/// trust decision is the emulated library's, taken at the moment that library
/// takes it (see ``ClientModel``). It sends its request only when it accepts,
/// over HTTP/2 when the server chose `h2`, else over HTTP/1.1: the protocol
/// changes nothing before the request, so it cannot change a verdict.
public enum BuiltInClient {
    /// Runs one connection offering `alpn`. `decide` judges the presented chain; `request`
    /// is sent if it proceeds.
    public static func run(route: ClientRoute, serverName: String, request: ClientRequest,
                           alpn: [String] = ClientModel.applicationProtocols, timeout: TimeInterval = 5,
                           decide: @escaping @Sendable ([Certificate]) -> ClientDecision) -> ClientRun {
        var run = ClientRun()
        let socket: LoopbackSocket
        do {
            socket = try LoopbackSocket.connect(host: route.host, port: route.port, timeout: timeout)
        } catch let error as PinproxyError {
            run.outcome = .failed(error.reason)
            return run
        } catch {
            run.outcome = .failed("\(error)")
            return run
        }
        defer { socket.close() }
        run.localPort = socket.localPort
        do {
            if let authority = route.connectAuthority {
                let proxy = ChainFetcher.display(host: route.host, port: UInt16(clamping: route.port))
                let answer = try ProxyTunnel.open(socket, to: authority, proxy: proxy, headers: [("User-Agent", "pinproxy-check")])
                guard answer.status == 200 else {
                    run.outcome = .failed("the proxy answered CONNECT with '\(answer.statusLine)'")
                    return run
                }
            }
            let record = DecisionRecord()
            let judge = TLSChainDecision { chain in
                let decision = decide(chain)
                record.decision = decision
                return decision.refusal != .handshake
            }
            let stream = try HarnessTLS.client(over: socket, serverName: serverName, alpn: alpn, decision: judge)
            do {
                try stream.handshake()
            } catch {
                run.presented = judge.presented
                run.decision = record.decision
                run.alpn = stream.alpn
                run.outcome = judge.refused ? .refusedInHandshake : .failed(error.connectError(during: "the TLS handshake").reason)
                return run
            }
            run.presented = judge.presented
            run.decision = record.decision
            run.tlsVersion = stream.version
            run.alpn = stream.alpn
            guard let decision = record.decision else {
                run.outcome = .failed("the handshake completed without a certificate to judge")
                return run
            }
            if !decision.proceeds {
                stream.shutdown()
                run.outcome = .closedAfterHandshake
                return run
            }
            let (status, body): (Int, String)
            if stream.alpn == "h2" {
                (status, body) = try HTTP2ClientExchange.run(request, over: stream)
            } else {
                try stream.send(request.http1)
                var reader = HTTP1MessageReader(.response) { try stream.readChunk() }
                let response = try reader.response(toMethod: request.method)
                (status, body) = (response.head.status, String(decoding: response.body, as: UTF8.self))
            }
            stream.shutdown()
            run.outcome = .responded(status: status, body: body)
        } catch let error as PinproxyError {
            run.outcome = .failed(error.reason)
        } catch {
            run.outcome = .failed("\(error)")
        }
        return run
    }

    /// The request the harness sends once a client accepts: it carries a fake secret
    /// (what an interceptor would read) and the scenario marker the origin records.
    public static func request(host: HostName, port: Int, scenario: String, secret: String) -> ClientRequest {
        ClientRequest(method: "GET", authority: port == 443 ? host.uriHost : "\(host.uriHost):\(port)", path: "/account",
                      headers: [("User-Agent", "pinproxy-check"), ("Authorization", "Bearer \(secret)"), (ScenarioMarker.header, scenario)])
    }
}

/// The decision taken inside the handshake, kept for after it.
private final class DecisionRecord: @unchecked Sendable {
    // Sendable: written inside SSL_connect and read after it, on the same thread.
    var decision: ClientDecision?
}
