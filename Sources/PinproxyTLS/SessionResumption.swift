internal import COpenSSL
import PinproxyCertificates

/// Client side session resumption for one connection: the key its
/// upstream's sessions are cached under, the cached session it offered, and
/// which of the sessions it receives (TLS 1.2 sessions, TLS 1.3 tickets) the
/// cache keeps, with the chains they were verified with.
struct SessionResumption {
    let cache: TLSSessionCache
    let key: String
    /// The cached session offered to the upstream, if one was.
    private(set) var offered: CachedSession?

    /// Offers the session cached under `key`, if any, on `ssl` (before its handshake).
    init(cache: TLSSessionCache, key: String, offeringOn ssl: OpaquePointer) {
        self.cache = cache
        self.key = key
        guard let cached = cache.take(key) else { return }
        if SSL_set_session(ssl, cached.session) == 1 {
            offered = cached
        } else {
            ERR_clear_error()
        }
    }

    /// Keeps `session`, made or resumed by the connection. A session from a
    /// resumed handshake inherits the chains of the session it resumed;
    /// otherwise `ownChains` gives the connection's (nil: not verified, not
    /// kept). Returns whether the cache took the reference.
    func keep(_ session: OpaquePointer, resumed: Bool,
              ownChains: () -> (peer: [Certificate], verified: [Certificate])?) -> Bool {
        guard SSL_SESSION_is_resumable(session) == 1 else { return false }
        let chains: (peer: [Certificate], verified: [Certificate])
        if resumed {
            guard let offered else { return false }
            chains = (offered.peerChain, offered.verifiedChain)
        } else {
            guard let own = ownChains() else { return false }
            chains = own
        }
        cache.store(CachedSession(takingOwnership: session, peerChain: chains.peer, verifiedChain: chains.verified), for: key)
        return true
    }

    /// Forgets the upstream's sessions (its handshake failed): the next connection starts afresh.
    func forget() { cache.forget(key) }
}
