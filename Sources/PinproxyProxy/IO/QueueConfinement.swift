import Dispatch
import Foundation

/// A value moved into a `@Sendable` closure that will run on the queue the
/// value is confined to. Only for state that is never touched elsewhere.
struct Confined<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
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
