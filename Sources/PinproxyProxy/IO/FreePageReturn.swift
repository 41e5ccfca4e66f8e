/// When a loop hands the allocator's free pages back to the system
/// (`malloc_trim`).
///
/// Memory that transports give back (an idle connection's TLS buffers and
/// released upstream, a closed connection's whole state) stays in the
/// allocator's arenas, in holes between the connections still open, which
/// only a trim returns. A trim walks every arena's free chunks, and the
/// pages it returns fault in again when reused, so it is rationed:
/// - after a burst: once ``burst`` transports freed memory, at most every
///   ``spacing`` sweeps, so a loop that keeps opening and closing
///   connections trims every few seconds, not every second;
/// - after the traffic stops: once at least ``trailing`` freed memory and
///   then a whole sweep interval passed in which none did (no release, no
///   close), so the tail of a burst
///   (the last clients to fall idle) goes back too, instead of waiting for
///   another burst that may never come.
struct FreePageReturn {
    static let burst = 256
    static let trailing = 32
    static let spacing: UInt = 5

    /// Transports that freed memory since the last trim.
    private(set) var freedSinceTrim = 0
    private var sweepsSinceTrim: UInt = .max
    /// Transports that freed memory since the last sweep.
    private var freedSinceSweep = 0

    /// A transport closed, or released its buffers outside a sweep.
    mutating func noteFreed(_ count: Int = 1) {
        freedSinceTrim += count
        freedSinceSweep += count
    }

    /// A sweep in which `freed` transports released memory: whether the free
    /// pages go back now.
    mutating func sweep(freed: Int) -> Bool {
        if sweepsSinceTrim != .max { sweepsSinceTrim += 1 }
        let quiet = freed == 0 && freedSinceSweep == 0
        freedSinceSweep = 0
        freedSinceTrim += freed
        guard sweepsSinceTrim >= Self.spacing,
              freedSinceTrim >= Self.burst || (quiet && freedSinceTrim >= Self.trailing) else { return false }
        freedSinceTrim = 0
        sweepsSinceTrim = 0
        return true
    }
}
