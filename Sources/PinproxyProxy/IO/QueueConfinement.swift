import Dispatch
import Foundation

/// A value moved into a `@Sendable` closure that will run on the queue the
/// value is confined to. Only for state that is never touched elsewhere.
struct Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A weak reference for a closure that runs on every socket event of a
/// queue-confined object. A `[weak self]` capture is a variable of the
/// closure, and each call's read of it went through a run-time exclusivity
/// check (~75 instructions, three per proxied request); this one is read
/// unchecked, as the layers' per-request state is.
final class WeakOwner<Object: AnyObject> {
    @exclusivity(unchecked) weak var object: Object?
    init(_ object: Object) { self.object = object }
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
    /// Called on an event loop's own queue, the loop keeps the timer (see ``EventLoop``) and
    /// returns it, to be cancelled once it is no longer wanted; elsewhere nil.
    @discardableResult
    func later(after seconds: TimeInterval, _ body: @escaping () -> Void) -> LoopTimer? {
        if let loop = DispatchQueue.getSpecific(key: EventLoop.key)?.loop, loop.queue === self {
            return loop.schedule(after: seconds, body)
        }
        let box = Confined(body)
        asyncAfter(deadline: .now() + seconds) { box.value() }
        return nil
    }
}
