import PinproxyCertificates
import PinproxyTLS

/// The harness's TLS: the proxy's own engine (``TLSConnection``, ``TLSContext``) driven over
/// blocking loopback sockets by ``TLSBlockingStream``, for the built-in client and the origin.
enum HarnessTLS {
    /// The protocols the origin accepts by ALPN, in its order of preference: HTTP/2 when the
    /// client offers it, as a current HTTPS server does.
    static let serverProtocols = ["h2", "http/1.1"]

    /// The origin's context: `chain` (leaf first) with `key`, to every client.
    static func origin(chain: [Certificate], key: PrivateKey) throws -> TLSContext {
        try TLSContext.server(presenting: chain, key: key, alpn: serverProtocols)
    }

    /// A client connection on `socket`, not yet shaken hands, offering `alpn` and sending
    /// `serverName` as SNI (DNS names only), whose certificate check is `decision`'s.
    static func client(over socket: LoopbackSocket, serverName: String, alpn: [String],
                       decision: TLSChainDecision) throws -> TLSBlockingStream {
        let connection = try TLSConnection(context: TLSContext.client(alpn: alpn, decision: decision))
        if let name = try? HostName(validating: serverName) { try connection.configureClient(serverName: name) }
        return TLSBlockingStream(connection, over: socket)
    }

    /// A server connection on an accepted `socket`.
    static func server(over socket: LoopbackSocket, context: TLSContext) throws -> TLSBlockingStream {
        TLSBlockingStream(try TLSConnection(context: context), over: socket)
    }
}

extension TLSBlockingStream {
    /// The protocol the peers agreed on by ALPN, if any.
    var alpn: String? { connection.sessionInfo.alpn }
    /// The negotiated protocol version (`TLSv1.3`).
    var version: String { connection.sessionInfo.version }
}

extension TLSStreamError {
    /// The error as the harness reports it, `during` what (`the TLS handshake`, `reading`).
    func connectError(during what: String) -> PinproxyError {
        switch kind {
        case .timedOut: return PinproxyError(.connect, "timed out during \(what)")
        case .closed, .transport: return PinproxyError(.connect, "the peer closed the connection during \(what)")
        default:
            let errors = failure?.openSSLErrors ?? []
            return PinproxyError(.connect, "\(what) failed: \(errors.last ?? reason)", openSSLErrors: errors)
        }
    }
}

extension TLSBlockingStream {
    /// ``read(maxBytes:)``, failing as the harness reports it.
    func readChunk() throws -> [UInt8] {
        do { return try read() } catch { throw error.connectError(during: "reading") }
    }

    /// ``write(_:)``, failing as the harness reports it.
    func send(_ bytes: [UInt8]) throws {
        do { try write(bytes) } catch { throw error.connectError(during: "writing") }
    }
}
