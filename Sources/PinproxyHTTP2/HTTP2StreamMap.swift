/// Objects by stream identifier, for one connection: an open-addressing
/// table whose slot is the identifier itself (halved: one peer's
/// identifiers are all odd or all even, and consecutive), probed linearly.
///
/// Looked up several times per frame, by the session and by a relay on both
/// legs. A `Dictionary` keyed by stream hashes every key with SipHash, about
/// 1,700 instructions per relayed HTTP/2 request for the session's streams
/// alone (docs/proxy.md, "HTTP/2"); a connection's identifiers are
/// consecutive and mostly distinct modulo the table's size, so here a lookup
/// is one or two comparisons. Stream 0 (the connection) is never a key: it
/// marks an empty slot. Inlinable, so that it is specialised where it is used.
public struct HTTP2StreamMap<Value: AnyObject> {
    @usableFromInline var keys: [Int32]
    @usableFromInline var objects: [Value?]
    @usableFromInline var mask: Int
    @usableFromInline var stored = 0
    /// How many keys sit away from their home slot. While none does, no
    /// probe runs past a slot, so a removal only empties it: a connection's
    /// streams are consecutive, and with many in flight the backward shift
    /// would otherwise walk the whole run of them to find nothing to move
    /// (~570 instructions per removal at 25 streams, two per relayed request).
    @usableFromInline var displaced = 0
    /// How many streams the map holds.
    @inlinable public var count: Int { stored }

    @inlinable
    public init() {
        keys = Array(repeating: 0, count: 16)
        objects = Array(repeating: nil, count: 16)
        mask = 15
    }

    @inlinable public var isEmpty: Bool { count == 0 }

    @inlinable
    func home(_ id: Int32) -> Int { Int(UInt32(bitPattern: id) >> 1) & mask }

    /// Where `id` is, or the empty slot that ends its probe.
    @inlinable
    func slot(of id: Int32) -> Int {
        var index = home(id)
        while keys[index] != id && keys[index] != 0 { index = (index + 1) & mask }
        return index
    }

    @inlinable
    public subscript(stream: HTTP2StreamID) -> Value? {
        get { self[stream.rawValue] }
        set { self[stream.rawValue] = newValue }
    }

    @inlinable
    subscript(id: Int32) -> Value? {
        get {
            let index = slot(of: id)
            return keys[index] == id ? objects[index] : nil
        }
        set {
            guard let newValue else {
                _ = removeValue(forKey: id)
                return
            }
            precondition(id != 0, "stream 0 is the connection")
            // At most half full, so that probes stay short.
            if (count + 1) * 2 > keys.count { grow() }
            let index = slot(of: id)
            if keys[index] == 0 {
                stored += 1
                if index != home(id) { displaced += 1 }
            }
            keys[index] = id
            objects[index] = newValue
        }
    }

    /// Removes and returns the object of `stream`, if the map holds it.
    @inlinable
    public mutating func removeValue(forKey stream: HTTP2StreamID) -> Value? { removeValue(forKey: stream.rawValue) }

    @inlinable
    mutating func removeValue(forKey id: Int32) -> Value? {
        var index = slot(of: id)
        guard keys[index] == id, id != 0 else { return nil }
        let removed = objects[index]
        stored -= 1
        if displaced == 0 {
            keys[index] = 0
            objects[index] = nil
            return removed
        }
        if index != home(id) { displaced -= 1 }
        // Backward shift: a later entry of the same probe run moves into the
        // gap unless its home lies (cyclically) after the gap, so that no
        // probe meets an empty slot before its key.
        var next = index
        while true {
            next = (next + 1) & mask
            let key = keys[next]
            if key == 0 { break }
            let home = home(key)
            let stays = index <= next ? (index < home && home <= next) : (index < home || home <= next)
            if !stays {
                // The key moves back towards its home: it may reach it.
                if index == home { displaced -= 1 }
                keys[index] = key
                objects[index] = objects[next]
                index = next
            }
        }
        keys[index] = 0
        objects[index] = nil
        return removed
    }

    /// Every stream and its object, in no particular order.
    @inlinable
    public var entries: [(stream: HTTP2StreamID, value: Value)] {
        var found: [(stream: HTTP2StreamID, value: Value)] = []
        for index in keys.indices where keys[index] != 0 {
            if let value = objects[index] { found.append((HTTP2StreamID(keys[index]), value)) }
        }
        return found
    }

    /// Every object, in no particular order.
    @inlinable
    public var values: [Value] { entries.map(\.value) }

    @inlinable
    public mutating func removeAll() { self = HTTP2StreamMap() }

    @usableFromInline
    mutating func grow() {
        let oldKeys = keys, oldObjects = objects
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        objects = Array(repeating: nil, count: oldKeys.count * 2)
        mask = keys.count - 1
        stored = 0
        displaced = 0
        for index in oldKeys.indices where oldKeys[index] != 0 {
            self[oldKeys[index]] = oldObjects[index]
        }
    }
}
