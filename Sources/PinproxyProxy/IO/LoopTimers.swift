/// A closure an ``EventLoop`` runs at an instant on `CLOCK_MONOTONIC`.
/// ``cancel()`` before then and it never runs, and no wake-up is spent on
/// it. Touched only on its loop's queue.
final class LoopTimer {
    let deadline: UInt64
    fileprivate let order: UInt64
    fileprivate var body: (() -> Void)?
    private unowned let loop: EventLoop

    fileprivate init(deadline: UInt64, order: UInt64, loop: EventLoop, body: @escaping () -> Void) {
        self.deadline = deadline
        self.order = order
        self.loop = loop
        self.body = body
    }

    var isPending: Bool { body != nil }

    func cancel() {
        guard body != nil else { return }
        loop.cancel(self)
    }

    fileprivate func precedes(_ other: LoopTimer) -> Bool {
        deadline != other.deadline ? deadline < other.deadline : order < other.order
    }
}

/// The timers of one ``EventLoop``, earliest first, in a binary heap; those
/// due at the same instant run in the order they were scheduled. A
/// cancelled timer stays in the heap until it comes to the top or the heap
/// is compacted, whichever is first.
///
/// A value type held by its loop and touched only on the loop's queue.
struct LoopTimers {
    private var heap: [LoopTimer] = []
    private var scheduled: UInt64 = 0
    private var cancelled = 0

    /// Pending timers, cancelled ones not counted.
    var count: Int { heap.count - cancelled }

    /// When the earliest pending timer is due; nil when none is.
    mutating func earliest() -> UInt64? {
        dropCancelledFirst()
        return heap.first?.deadline
    }

    mutating func add(at deadline: UInt64, loop: EventLoop, _ body: @escaping () -> Void) -> LoopTimer {
        scheduled &+= 1
        let timer = LoopTimer(deadline: deadline, order: scheduled, loop: loop, body: body)
        heap.append(timer)
        siftUp(heap.count - 1)
        return timer
    }

    /// Marks `timer` cancelled; compacts the heap once most of it is.
    mutating func cancel(_ timer: LoopTimer) {
        timer.body = nil
        cancelled += 1
        if cancelled > 64 && cancelled * 2 > heap.count {
            heap.removeAll { $0.body == nil }
            cancelled = 0
            for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }
    }

    /// Removes every timer due at or before `now` and returns what they run, earliest first.
    mutating func takeDue(at now: UInt64) -> [() -> Void] {
        var due: [() -> Void] = []
        while let first = heap.first, first.deadline <= now {
            removeFirst()
            if let body = first.body {
                first.body = nil
                due.append(body)
            } else {
                cancelled -= 1
            }
        }
        return due
    }

    private mutating func dropCancelledFirst() {
        while let first = heap.first, first.body == nil {
            removeFirst()
            cancelled -= 1
        }
    }

    private mutating func removeFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { break }
            let right = left + 1
            let child = right < heap.count && heap[right].precedes(heap[left]) ? right : left
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            parent = child
        }
    }
}
