internal import COpenSSL
internal import CPinproxyShims
import PinproxyCertificates

/// Client side session resumption (see ``SessionResumption``): offering an
/// upstream's cached session, and keeping the sessions it hands out.
extension TLSConnection {
    /// Offers a cached session for the upstream at `address`:`port` named
    /// `serverName` (call after ``configureClient(serverName:)``, before the
    /// handshake), and keeps the sessions this connection receives for the
    /// next one. Does nothing when the context keeps no session cache.
    public func offerSession(address: String, port: Int, serverName: HostName) {
        precondition(!isServer)
        guard let cache = context.sessionCache else { return }
        let key = TLSSessionCache.key(address: address, port: port, serverName: serverName)
        resumption = SessionResumption(cache: cache, key: key, offeringOn: ssl)
    }

    /// Whether the handshake resumed a cached session (no certificate was
    /// sent or verified on this connection: the chains are those verified
    /// when the session was made).
    public var isResumed: Bool { SSL_session_reused(ssl) == 1 }

    /// The session made or resumed by this connection, offered to OpenSSL's
    /// new-session callback. Returns whether the cache keeps the reference.
    func receivedSession(_ session: OpaquePointer) -> Bool {
        resumption?.keep(session, resumed: isResumed) {
            if context.trust != .insecure && SSL_get_verify_result(ssl) != X509_V_OK { return nil }
            let verified = ownVerifiedChain
            if context.trust != .insecure && verified.isEmpty { return nil }
            return (ownPeerCertificates, verified)
        } ?? false
    }

    /// A failed handshake forgets the upstream's sessions: the next connection starts afresh.
    func noteHandshakeFailure() { resumption?.forget() }

    /// Turns on the client session cache of `ctx`, with sessions stored only through ``receivedSession(_:)``.
    static func enableClientSessions(_ ctx: OpaquePointer) {
        _ = pp_SSL_CTX_set_session_cache_mode(ctx, pp_SSL_SESS_CACHE_CLIENT() | Int(SSL_SESS_CACHE_NO_INTERNAL_STORE))
        SSL_CTX_sess_set_new_cb(ctx) { ssl, session in
            guard let ssl, let session, let connection = TLSConnection.owner(of: ssl) else { return 0 }
            return connection.receivedSession(session) ? 1 : 0
        }
    }
}
