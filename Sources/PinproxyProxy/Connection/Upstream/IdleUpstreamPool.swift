import Foundation
import Synchronization

/// Idle upstream keep-alive connections, kept for the next client connection
/// to the same upstream: a new client connection then costs the client leg's
/// TLS handshake only, not the upstream's as well.
///
/// Measured with `pinproxy bench proxy --load new-connection` (a new client
/// TLS connection per request, nginx origin; docs/proxy.md, "New
/// connections"): the proxy's instructions per new connection fell from
/// 5.40 M (the upstream resumed) to 2.89 M (callgrind, two wrk connections),
/// its CPU time per request from about 900 µs to 600 µs or less.
///
/// What is kept, and when it is handed out again:
/// - only TLS connections whose chain was verified (not `--upstream-insecure`,
///   not plain HTTP) and that speak HTTP/1.1: an HTTP/2 connection's session
///   state belongs to the layer that used it;
/// - only after a complete exchange, the request fully sent and the response
///   fully read, with the upstream's keep-alive; never one with an exchange
///   unfinished;
/// - by upstream target (address, port, server name), the address actually
///   connected to (`--resolve` may change it) and the ALPN offered: the chain
///   the connection verified and its protocol go with it, so the attack
///   profiles see that genuine chain;
/// - while idle, any byte or end from the upstream closes it; before it is
///   handed out the socket is looked at once more (a `MSG_PEEK`), so one the
///   upstream closed a moment ago is not used;
/// - for ``Limits/idleTimeout`` at most, 30 s by default. An upstream with a
///   shorter keep-alive timeout (Apache's and Node's 5 s) closes it first,
///   and the pool drops it as the close arrives; only a request that crosses
///   that close on the way meets it, and goes again on a new connection when
///   that is safe (``UpstreamReplay``). It was 3 s, below every common
///   server's timeout, while such a request got a 502 (docs/proxy.md,
///   "Upstream first").
///
/// One pool per event loop (``IdleUpstreamPools``): a connection is used on
/// the queue it was made on.
final class IdleUpstreamPool: @unchecked Sendable {
    // Sendable: all state is touched only on `queue` (the loop's).
    struct Limits: Sendable {
        /// How long an idle connection is kept.
        var idleTimeout: TimeInterval = 30
        /// Idle connections kept per key: at least as many as the client
        /// connections to one upstream that end close together (with 4, the
        /// bench's 8 wrk connections often found none idle: the origin's CPU
        /// per request stayed at a third of a resumed handshake's; see
        /// docs/proxy.md). About 30 KiB each.
        var perKey = 16
        /// Idle connections kept by the pool (per event loop).
        var total = 256
    }

    /// What must match for a connection to be reused.
    struct Key: Hashable {
        /// Host name and SNI included: a connection serves only the name it was
        /// verified for, never another name on the same address, not even one
        /// its certificate covers (no coalescing; docs/proxy.md).
        var target: UpstreamTarget
        /// The address connected to: the configured one for the name, or the name itself.
        var connectHost: String
        /// The ALPN offer in place of the context's, if any.
        var alpn: [String]?
    }

    private struct Parked {
        let upstream: Upstream
        let token: UInt64
        /// The idle timeout's timer, cancelled when the connection leaves the pool.
        var expiry: LoopTimer?
    }

    let queue: DispatchQueue
    private let limits: Limits
    private var idle: [Key: [Parked]] = [:]
    private var count = 0
    private var nextToken: UInt64 = 0
    private var closed = false

    init(queue: DispatchQueue, limits: Limits) {
        self.queue = queue
        self.limits = limits
    }

    /// Keeps `upstream`, idle, for the next client connection with the same
    /// key; closes it when it cannot be kept.
    func park(_ upstream: Upstream) {
        assertOnQueue(queue)
        let key = upstream.poolKey
        // Given back twice (the client connection and its layer both let go of it): kept once.
        if idle[key]?.contains(where: { $0.upstream === upstream }) == true { return }
        guard !closed, upstream.mayBeReused, upstream.isOpenAndQuiet else { return upstream.closeIdle() }
        var list = idle[key] ?? []
        if list.count >= limits.perKey || count >= limits.total {
            // The oldest of this key makes room; a full pool keeps what it has.
            guard let oldest = list.first else { return upstream.closeIdle() }
            list.removeFirst()
            count -= 1
            oldest.expiry?.cancel()
            oldest.upstream.closeIdle()
        }
        nextToken &+= 1
        let token = nextToken
        // The upstream is held strongly, as the pool holds it: the timer is
        // cancelled when it leaves the pool (a weak reference would give the
        // upstream a side table, and every later retain the slow path).
        let expiry = queue.later(after: limits.idleTimeout) { [weak self] in
            self?.remove(upstream, token: token)
        }
        list.append(Parked(upstream: upstream, token: token, expiry: expiry))
        idle[key] = list
        count += 1
        upstream.rebind { [weak self] up, event in
            // Idle: whatever the upstream says ends the connection.
            if case .drained = event { return }
            self?.remove(up, token: token)
        }
        upstream.resumeReading()
    }

    /// An idle connection for `key`, most recently parked first, checked to
    /// be still open with nothing pending; nil when there is none.
    func take(_ key: Key) -> Upstream? {
        assertOnQueue(queue)
        while var list = idle[key], let parked = list.popLast() {
            idle[key] = list.isEmpty ? nil : list
            count -= 1
            parked.expiry?.cancel()
            if parked.upstream.isOpenAndQuiet { return parked.upstream }
            parked.upstream.closeIdle()
        }
        return nil
    }

    /// Closes every idle connection; nothing is kept afterwards.
    func closeAll() {
        assertOnQueue(queue)
        closed = true
        for list in idle.values {
            for parked in list {
                parked.expiry?.cancel()
                parked.upstream.closeIdle()
            }
        }
        idle = [:]
        count = 0
    }

    /// Idle connections held (for tests).
    var idleCount: Int { count }

    /// The idle connections held, most recently parked last (for tests).
    var parkedUpstreams: [Upstream] { idle.values.flatMap { $0.map(\.upstream) } }

    private func remove(_ upstream: Upstream, token: UInt64) {
        let key = upstream.poolKey
        guard var list = idle[key], let index = list.firstIndex(where: { $0.token == token }) else { return }
        let parked = list.remove(at: index)
        idle[key] = list.isEmpty ? nil : list
        count -= 1
        parked.expiry?.cancel()
        upstream.closeIdle()
    }
}

/// The idle upstream pools of one proxy server, one per event loop.
final class IdleUpstreamPools: Sendable {
    private let limits: IdleUpstreamPool.Limits?
    private let pools = Mutex<[ObjectIdentifier: IdleUpstreamPool]>([:])

    /// `limits` nil: no connection is kept.
    init(limits: IdleUpstreamPool.Limits?) {
        self.limits = limits
    }

    /// The pool of `loop` (made on first use); nil when pooling is off.
    func pool(for loop: EventLoop) -> IdleUpstreamPool? {
        guard let limits else { return nil }
        return pools.withLock { all in
            if let pool = all[ObjectIdentifier(loop)] { return pool }
            let pool = IdleUpstreamPool(queue: loop.queue, limits: limits)
            all[ObjectIdentifier(loop)] = pool
            return pool
        }
    }

    /// Closes every pool's connections, each on its own queue, and waits.
    func closeAll() {
        let all = pools.withLock { Array($0.values) }
        let group = DispatchGroup()
        for pool in all { pool.queue.async(group: group) { pool.closeAll() } }
        _ = group.wait(timeout: .now() + 2)
    }
}
