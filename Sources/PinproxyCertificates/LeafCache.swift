import Foundation
import Synchronization

/// The identity a forged leaf is cached under.
public struct LeafCacheKey: Hashable, Sendable {
    public let names: [HostName]
    /// SHA-256 of the imitated upstream certificate, if any.
    public let imitated: [UInt8]?
    /// Which kind of leaf (an attack profile's name); empty for the classic leaf.
    public let variant: String
    /// A digest of anything else the leaf depends on (a whole genuine chain), if any.
    public let context: [UInt8]?

    /// The key of a classic leaf.
    init(names: [HostName], imitated: [UInt8]?) {
        self.init(names: names, imitated: imitated, variant: "", context: nil)
    }

    /// The key of a leaf variant: `variant` names it, `context` digests what
    /// else it was made from, so two different inputs never share an entry.
    public init(names: [HostName], imitated: [UInt8]?, variant: String, context: [UInt8]? = nil) {
        self.names = names
        self.imitated = imitated
        self.variant = variant
        self.context = context
    }
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
        try leaf(for: request.cacheKey) { try forger.forge(request) }
    }

    /// The leaf cached under `key`, or the one `make` returns (called outside
    /// the lock) on a miss. An entry is made again once the clock passes
    /// `renewal` of it; by default when less than ``renewalMargin`` of its
    /// life remains. Leaves that are invalid on purpose (expired, not yet
    /// valid) say when they need remaking.
    public func leaf(
        for key: LeafCacheKey, renewal: ((ForgedLeaf) -> Date)? = nil, make: () throws -> ForgedLeaf
    ) throws -> ForgedLeaf {
        let now = clock()
        let cached: ForgedLeaf? = state.withLock { state in
            guard let (leaf, renewAt) = state.lookup(key) else { state.statistics.misses += 1; return nil }
            if now > renewAt {
                state.statistics.renewals += 1
                return nil
            }
            state.statistics.hits += 1
            return leaf
        }
        if let cached { return cached }
        let fresh = try make()
        let renewAt = renewal?(fresh) ?? fresh.notAfter.addingTimeInterval(-renewalMargin)
        state.withLock { state in
            state.insert(fresh, renewAt: renewAt, for: key, capacity: capacity)
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
            var renewAt: Date
            var previous: Int
            var next: Int
        }
        var nodes: [Node] = []
        var index: [LeafCacheKey: Int] = [:]
        var head = -1  // most recently used
        var tail = -1  // least recently used
        var statistics = Statistics()

        init(statistics: Statistics = Statistics()) { self.statistics = statistics }

        mutating func lookup(_ key: LeafCacheKey) -> (ForgedLeaf, renewAt: Date)? {
            guard let i = index[key] else { return nil }
            moveToFront(i)
            return (nodes[i].leaf, nodes[i].renewAt)
        }

        mutating func insert(_ leaf: ForgedLeaf, renewAt: Date, for key: LeafCacheKey, capacity: Int) {
            if let i = index[key] {
                nodes[i].leaf = leaf
                nodes[i].renewAt = renewAt
                moveToFront(i)
                return
            }
            let slot: Int
            if nodes.count < capacity {
                nodes.append(Node(key: key, leaf: leaf, renewAt: renewAt, previous: -1, next: -1))
                slot = nodes.count - 1
            } else {
                slot = tail
                unlink(slot)
                index[nodes[slot].key] = nil
                statistics.evictions += 1
                nodes[slot] = Node(key: key, leaf: leaf, renewAt: renewAt, previous: -1, next: -1)
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
