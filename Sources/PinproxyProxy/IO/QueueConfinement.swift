import Dispatch
import Foundation

/// A value moved into a `@Sendable` closure that will run on the queue the
/// value is confined to. Only for state that is never touched elsewhere.
struct Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Checks, in debug builds, that the caller runs on `queue`. For the paths
/// every event takes: `dispatchPrecondition` looks the queue up through
/// thread-specific data, which several calls per request made measurable.
/// Tests run debug builds, so a confinement mistake still traps there.
@inline(__always)
func assertOnQueue(_ queue: DispatchQueue) {
    #if DEBUG
    dispatchPrecondition(condition: .onQueue(queue))
    #endif
}

extension DispatchQueue {
    /// Runs `body` later on this queue. For closures over queue-confined state.
    func later(_ body: @escaping () -> Void) {
        let box = Confined(body)
        async { box.value() }
    }

    /// Runs `body` on this queue after `seconds`. For closures over queue-confined state.
    func later(after seconds: TimeInterval, _ body: @escaping () -> Void) {
        let box = Confined(body)
        asyncAfter(deadline: .now() + seconds) { box.value() }
    }
}
