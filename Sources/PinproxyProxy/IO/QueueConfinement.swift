import Dispatch
import Foundation

/// A value moved into a `@Sendable` closure that will run on the queue the
/// value is confined to. Only for state that is never touched elsewhere.
struct Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The reference that closures on every socket event of a queue-confined
/// object (its transport's callbacks, its upstream's events, its timers)
/// hold to it: nil once the object is gone, as a `weak` reference would be,
/// but without the side table a `weak` reference gives its object. Once an
/// object has one, every retain and release of it takes the runtime's slow
/// path; the client connection, the upstream, both transports and the
/// HTTP/1.1 layer had one, and that cost about 860 instructions per proxied
/// keep-alive request (docs/proxy.md, "Side tables").
///
/// The owner makes the link, ``attach(_:)``es itself at the end of its init
/// and ``sever()``s it in its deinit. The link is read only on the owner's
/// queue, and an owner is released elsewhere only once it has finished (its
/// sockets closed, so no callback can come). Debug builds, which the tests
/// run, also keep a real weak reference and trap if the object went away
/// without severing the link. The read is unchecked, as the layers'
/// per-request state is (a `[weak self]` capture's read went through a
/// run-time exclusivity check, ~75 instructions).
final class OwnerLink<Object: AnyObject> {
    @exclusivity(unchecked) private unowned(unsafe) var target: Object?
    #if DEBUG
    private weak var check: Object?
    #endif

    init() {}

    func attach(_ object: Object) {
        target = object
        #if DEBUG
        check = object
        #endif
    }

    /// The object, held strongly by the caller, or nil once it is gone.
    var object: Object? {
        #if DEBUG
        precondition(target == nil || check != nil, "an object behind an OwnerLink went away without severing it")
        #endif
        return target
    }

    /// Called by the owner's deinit.
    func sever() { target = nil }
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
