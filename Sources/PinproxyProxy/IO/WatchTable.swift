/// The sockets an ``EventLoop`` watches, by descriptor number: the
/// transport each belongs to (kept alive while registered) and what it is
/// watched for.
///
/// An array indexed by the descriptor, not a dictionary: the loop looks a
/// socket up for every readiness event and every change of its watch, and
/// hashing the key cost about 800 instructions per keep-alive request.
/// Descriptor numbers are small and reused (the kernel hands out the lowest
/// free one), so the array stays as long as the most sockets open at once.
/// A value type held by its loop and touched only on the loop's queue.
struct WatchTable {
    struct Entry {
        let transport: Transport
        let events: IOEvents
    }

    private var slots: [Entry?] = []

    subscript(descriptor: Descriptor) -> Entry? {
        get {
            let index = Int(descriptor.rawValue)
            return index >= 0 && index < slots.count ? slots[index] : nil
        }
        set {
            let index = Int(descriptor.rawValue)
            guard index >= 0 else { return }
            if index >= slots.count {
                guard newValue != nil else { return }
                slots.append(contentsOf: repeatElement(nil, count: max(index + 1, slots.count * 2) - slots.count))
            }
            slots[index] = newValue
        }
    }

    /// Every registered entry (a snapshot: the body may change the table).
    var entries: [Entry] { slots.compactMap { $0 } }
}
