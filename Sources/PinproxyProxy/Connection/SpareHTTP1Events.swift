import PinproxyHTTP1

/// An empty event array with room from earlier use: each slice of input
/// would otherwise allocate and grow a new one. Taken rather than shared, so
/// that a handler that feeds again meanwhile gets its own.
struct SpareHTTP1Events {
    private var spare: [HTTP1Event] = []

    mutating func take() -> [HTTP1Event] {
        var events: [HTTP1Event] = []
        swap(&events, &spare)
        return events
    }

    /// Empties `events` and keeps it for the next ``take()``, unless it grew large.
    mutating func giveBack(_ events: inout [HTTP1Event]) {
        events.removeAll(keepingCapacity: true)
        if events.capacity <= 64 { swap(&events, &spare) }
    }
}

extension Array where Element == HTTP1Event {
    /// The event at `index`, moved out: an empty body is left in its place,
    /// so that handling a head neither copies it nor releases it twice.
    @inline(__always)
    mutating func take(at index: Int) -> HTTP1Event {
        var event = HTTP1Event.body([])
        swap(&event, &self[index])
        return event
    }
}
