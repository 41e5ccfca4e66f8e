internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyBase
import PinproxyCertificates

/// One resumable upstream session with what the proxy learnt when the full
/// handshake that made it was verified: the chain the peer sent and the chain
/// the verifier built. A resumed handshake carries no certificates, so these
/// stand in for them.
final class CachedSession: @unchecked Sendable {
    // Sendable: immutable after init; an SSL_SESSION is reference counted
    // atomically and only read by SSL_set_session.
    let session: OpaquePointer
    let peerChain: [Certificate]
    let verifiedChain: [Certificate]
    /// TLS 1.3 tickets are offered once (RFC 8446, C.4); TLS 1.2 sessions may be offered again.
    let isSingleUse: Bool
    private let expires: time_t

    /// Takes over one reference to `session`.
    init(takingOwnership session: OpaquePointer, peerChain: [Certificate], verifiedChain: [Certificate]) {
        self.session = session
        self.peerChain = peerChain
        self.verifiedChain = verifiedChain
        self.isSingleUse = SSL_SESSION_get_protocol_version(session) == TLS1_3_VERSION
        self.expires = SSL_SESSION_get_time(session) + SSL_SESSION_get_timeout(session)
    }

    deinit { SSL_SESSION_free(session) }

    func isExpired(now: time_t) -> Bool { now >= expires }
}

/// Upstream sessions for resumption, per upstream: the address connected to,
/// the port, and the server name (both the SNI sent and the name the
/// certificate was verified for).
///
/// A cache belongs to one client ``TLSContext``, so the trust store, the
/// verification mode and the client certificate a session was made under are
/// those of every connection that may resume it. Only sessions from
/// handshakes that passed verification are stored (or, for an insecure
/// context, that completed); a failed handshake forgets the upstream's
/// sessions, and a full handshake offered instead of resumption is verified
/// as any other.
final class TLSSessionCache: @unchecked Sendable {
    // Sendable: all state behind the lock; shared by every event loop.
    private struct Slot {
        var sessions: [CachedSession]
        var stamp: UInt64
    }

    private var slots: [String: Slot] = [:]
    private var clock: UInt64 = 0
    private let lock = NSLock()
    /// Upstreams remembered; the least recently stored is forgotten first.
    let capacity: Int
    /// Sessions kept per upstream (a TLS 1.3 server sends two tickets by default).
    let perUpstream: Int

    init(capacity: Int = 2048, perUpstream: Int = 4) {
        self.capacity = capacity
        self.perUpstream = perUpstream
    }

    static func key(address: String, port: Int, serverName: HostName) -> String {
        "\(address) \(port) \(serverName)"
    }

    /// A session to offer to `key`: a TLS 1.3 ticket leaves the cache, a TLS
    /// 1.2 session stays for the next connection too. Expired ones are dropped.
    func take(_ key: String) -> CachedSession? {
        let now = time(nil)
        lock.lock()
        defer { lock.unlock() }
        guard var slot = slots[key] else { return nil }
        while let last = slot.sessions.last {
            if last.isExpired(now: now) {
                slot.sessions.removeLast()
                continue
            }
            if last.isSingleUse { slot.sessions.removeLast() }
            slots[key] = slot.sessions.isEmpty ? nil : slot
            return last
        }
        slots[key] = nil
        return nil
    }

    func store(_ session: CachedSession, for key: String) {
        lock.lock()
        defer { lock.unlock() }
        clock &+= 1
        var slot = slots[key] ?? Slot(sessions: [], stamp: clock)
        // A TLS 1.2 session replaces the upstream's others: it is reused, not consumed.
        if !session.isSingleUse { slot.sessions.removeAll() }
        slot.sessions.append(session)
        if slot.sessions.count > perUpstream { slot.sessions.removeFirst(slot.sessions.count - perUpstream) }
        slot.stamp = clock
        slots[key] = slot
        if slots.count > capacity, let oldest = slots.min(by: { $0.value.stamp < $1.value.stamp })?.key {
            slots[oldest] = nil
        }
    }

    func forget(_ key: String) {
        lock.lock()
        slots[key] = nil
        lock.unlock()
    }

    /// Sessions held, over all upstreams.
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return slots.values.reduce(0) { $0 + $1.sessions.count }
    }
}
