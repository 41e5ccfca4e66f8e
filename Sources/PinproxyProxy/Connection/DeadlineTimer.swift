import Dispatch
import Foundation

/// One layer's deadline: re-arming moves it, and its action runs once it
/// passes, on the connection's queue.
///
/// A timer is scheduled only when none is pending early enough, so a busy
/// connection that re-arms for every slice of a response does not schedule
/// one each time: a timer that fires early finds the deadline moved and
/// schedules itself for the new one. On an event loop the pending timer is
/// the loop's (see ``EventLoop``): one superseded by an earlier one, or left
/// when the layer goes away, is cancelled rather than left to fire.
final class DeadlineTimer {
    private let queue: DispatchQueue
    // Re-armed for every exchange; unchecked exclusivity as in HTTP1ExchangeLayer.
    @exclusivity(unchecked) private var deadline: DispatchTime?
    @exclusivity(unchecked) private var action: (() -> Void)?
    @exclusivity(unchecked) private var scheduledAt: DispatchTime?
    @exclusivity(unchecked) private var pending: LoopTimer?

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    deinit {
        // Released on the loop, as layers are: its timer need not fire.
        if let pending, let loop = DispatchQueue.getSpecific(key: EventLoop.key)?.loop, loop.queue === queue {
            pending.cancel()
        }
    }

    /// Runs `action` in `seconds`, replacing any deadline set before.
    func arm(_ seconds: TimeInterval, _ action: @escaping () -> Void) {
        arm(at: DispatchTime.now() + seconds, action)
    }

    /// Runs `action` at `when`, replacing any deadline set before.
    func arm(at when: DispatchTime, _ action: @escaping () -> Void) {
        deadline = when
        self.action = action
        if scheduledAt == nil || when < scheduledAt! { schedule(at: when) }
    }

    func cancel() {
        deadline = nil
        action = nil
    }

    private func schedule(at when: DispatchTime) {
        scheduledAt = when
        let delay = Double(when.uptimeNanoseconds &- min(when.uptimeNanoseconds, DispatchTime.now().uptimeNanoseconds)) / 1e9
        pending?.cancel()
        pending = queue.later(after: delay) { [weak self] in self?.fired(scheduledFor: when) }
    }

    private func fired(scheduledFor when: DispatchTime) {
        guard scheduledAt == when else { return }  // superseded by an earlier one
        scheduledAt = nil
        pending = nil
        guard let deadline, let action else { return }
        if DispatchTime.now() < deadline {
            schedule(at: deadline)
            return
        }
        self.deadline = nil
        self.action = nil
        action()
    }
}
