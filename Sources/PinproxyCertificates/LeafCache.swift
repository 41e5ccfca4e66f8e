import Foundation
import Synchronization

/// The identity a forged leaf is cached under.
public struct LeafCacheKey: Hashable, Sendable {
    public let names: [HostName]
    /// SHA-256 of the imitated upstream certificate, if any.
    public let imitated: [UInt8]?
}

/// A bounded, thread-safe LRU cache of forged leaves.
///
/// A leaf is renewed (forged again) once less than `renewalMargin` of its
/// life remains, so a long-running daemon never serves one close to expiry.
public final class LeafCache: Sendable {
    /// Counters since creation.
    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var renewals = 0
        public var evictions = 0
        public var count = 0
    }

    public let capacity: Int
    public let renewalMargin: TimeInterval
    private let forger: LeafForger
    private let clock: @Sendable () -> Date
    private let state: Mutex<State>

    public init(
        forger: LeafForger, capacity: Int = 10_000,
        renewalMargin: TimeInterval? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.forger = forger
        self.capacity = max(1, capacity)
        // Default: renew at half of the leaf's lifetime.
        self.renewalMargin = renewalMargin ?? forger.validity / 2
        self.clock = clock
        self.state = Mutex(State())
    }

    /// The cached leaf for `request`, forging (outside the lock) on a miss.
    public func leaf(for request: LeafRequest) throws -> ForgedLeaf {
        let key = request.cacheKey
        let now = clock()
        let cached: ForgedLeaf? = state.withLock { state in
            guard let leaf = state.lookup(key) else { state.statistics.misses += 1; return nil }
            if leaf.notAfter.timeIntervalSince(now) < renewalMargin {
                state.statistics.renewals += 1
                return nil
            }
            state.statistics.hits += 1
            return leaf
        }
        if let cached { return cached }
        let fresh = try forger.forge(request)
        state.withLock { state in
            state.insert(fresh, for: key, capacity: capacity)
        }
        return fresh
    }

    public var statistics: Statistics {
        state.withLock { state in
            var s = state.statistics
            s.count = state.index.count
            return s
        }
    }

    /// Drops every entry (statistics are kept).
    public func removeAll() {
        state.withLock { state in
            state = State(statistics: state.statistics)
        }
    }

    /// Doubly linked LRU list over an array of nodes, indexed by key.
    private struct State: ~Copyable {
        struct Node {
            var key: LeafCacheKey
            var leaf: ForgedLeaf
            var previous: Int
            var next: Int
        }
        var nodes: [Node] = []
        var index: [LeafCacheKey: Int] = [:]
        var head = -1  // most recently used
        var tail = -1  // least recently used
        var statistics = Statistics()

        init(statistics: Statistics = Statistics()) { self.statistics = statistics }

        mutating func lookup(_ key: LeafCacheKey) -> ForgedLeaf? {
            guard let i = index[key] else { return nil }
            moveToFront(i)
            return nodes[i].leaf
        }

        mutating func insert(_ leaf: ForgedLeaf, for key: LeafCacheKey, capacity: Int) {
            if let i = index[key] {
                nodes[i].leaf = leaf
                moveToFront(i)
                return
            }
            let slot: Int
            if nodes.count < capacity {
                nodes.append(Node(key: key, leaf: leaf, previous: -1, next: -1))
                slot = nodes.count - 1
            } else {
                slot = tail
                unlink(slot)
                index[nodes[slot].key] = nil
                statistics.evictions += 1
                nodes[slot] = Node(key: key, leaf: leaf, previous: -1, next: -1)
            }
            index[key] = slot
            pushFront(slot)
        }

        private mutating func moveToFront(_ i: Int) {
            guard head != i else { return }
            unlink(i)
            pushFront(i)
        }

        private mutating func unlink(_ i: Int) {
            let p = nodes[i].previous, n = nodes[i].next
            if p >= 0 { nodes[p].next = n } else { head = n }
            if n >= 0 { nodes[n].previous = p } else { tail = p }
            nodes[i].previous = -1
            nodes[i].next = -1
        }

        private mutating func pushFront(_ i: Int) {
            nodes[i].next = head
            nodes[i].previous = -1
            if head >= 0 { nodes[head].previous = i }
            head = i
            if tail < 0 { tail = i }
        }
    }
}
