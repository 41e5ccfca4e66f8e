/// A session's streams by identifier: an open-addressing table whose slot
/// is the identifier itself (halved: one peer's identifiers are all odd or
/// all even, and consecutive), probed linearly.
///
/// Looked up several times per frame. A `Dictionary<Int32, _>` hashes every
/// key with SipHash, about 1,500 instructions per relayed HTTP/2 request
/// over both sessions (docs/proxy.md, "HTTP/2"); a connection's identifiers
/// are consecutive and mostly distinct modulo the table's size, so here a
/// lookup is one or two comparisons. Stream 0 (the connection) is never a key:
/// it marks an empty slot.
struct HTTP2StreamTable {
    private var keys: [Int32]
    private var values: [HTTP2StreamState?]
    private var mask: Int
    /// How many streams the table holds.
    private(set) var count = 0

    init() {
        keys = Array(repeating: 0, count: 16)
        values = Array(repeating: nil, count: 16)
        mask = 15
    }

    private func home(_ id: Int32) -> Int { Int(UInt32(bitPattern: id) >> 1) & mask }

    /// Where `id` is, or the empty slot that ends its probe.
    private func slot(of id: Int32) -> Int {
        var index = home(id)
        while keys[index] != id && keys[index] != 0 { index = (index + 1) & mask }
        return index
    }

    subscript(id: Int32) -> HTTP2StreamState? {
        get {
            let index = slot(of: id)
            return keys[index] == id ? values[index] : nil
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
            if keys[index] == 0 { count += 1 }
            keys[index] = id
            values[index] = newValue
        }
    }

    /// Removes and returns the stream `id`, if the table holds it.
    mutating func removeValue(forKey id: Int32) -> HTTP2StreamState? {
        var index = slot(of: id)
        guard keys[index] == id, id != 0 else { return nil }
        let removed = values[index]
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
                keys[index] = key
                values[index] = values[next]
                index = next
            }
        }
        keys[index] = 0
        values[index] = nil
        count -= 1
        return removed
    }

    /// The identifiers of the streams for which `included` holds, in no particular order.
    func ids(where included: (HTTP2StreamState) -> Bool) -> [Int32] {
        var found: [Int32] = []
        for index in keys.indices where keys[index] != 0 {
            if let value = values[index], included(value) { found.append(keys[index]) }
        }
        return found
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        values = Array(repeating: nil, count: oldKeys.count * 2)
        mask = keys.count - 1
        count = 0
        for index in oldKeys.indices where oldKeys[index] != 0 {
            self[oldKeys[index]] = oldValues[index]
        }
    }
}
