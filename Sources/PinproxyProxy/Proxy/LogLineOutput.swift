import Dispatch
import Foundation
import Glibc
import Synchronization

/// Where ``LogLineHandler`` writes its lines: a descriptor (standard error
/// for the daemon), with the lines an event loop logs gathered into one
/// `write(2)` at the end of the loop's batch of events.
///
/// `serve` logs a line for every flow: written one by one, that was the
/// only system call per keep-alive request that HAProxy (logging nothing)
/// does not make. A line logged on an event loop is appended here and the
/// loop's batch (``EventLoop/later(_:)``) writes everything pending when
/// it ends, so several flows of a batch, on any loop, leave together. A
/// line logged anywhere else (the main thread, a capture writer) writes
/// everything pending, itself included, at once.
///
/// Nothing is lost or reordered: lines are appended whole, in the order
/// their loggers took the lock, and every write takes everything pending
/// under the same lock, so two writers can neither split a line nor
/// overtake each other. A line waits at most for the end of the batch that
/// logged it; ``flush()`` (on stopping, and at process exit) writes the
/// rest. Only a crash in the middle of a batch loses that batch's lines.
final class LogLineOutput: Sendable {
    private struct Pending {
        var bytes: [UInt8] = []
        /// An event loop will write `bytes` at the end of its batch.
        var flushScheduled = false
    }

    private let descriptor: Int32
    private let pending = Mutex(Pending())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Standard error, flushed at process exit.
    static let standardError: LogLineOutput = {
        let output = LogLineOutput(descriptor: STDERR_FILENO)
        atexit { LogLineOutput.standardError.flush() }
        return output
    }()

    /// Appends `line` (whole, newline included) and has it written.
    func write(_ line: [UInt8]) {
        guard let loop = DispatchQueue.getSpecific(key: EventLoop.key)?.loop else {
            return pending.withLock { pending in
                pending.bytes.append(contentsOf: line)
                drain(&pending)
            }
        }
        let schedule = pending.withLock { pending in
            pending.bytes.append(contentsOf: line)
            if pending.flushScheduled { return false }
            pending.flushScheduled = true
            return true
        }
        if schedule { loop.later { [self] in flush() } }
    }

    /// Writes every pending line now.
    func flush() {
        pending.withLock { drain(&$0) }
    }

    /// Writes `pending`'s bytes; called with the lock held, so writes keep
    /// the order of the lines.
    private func drain(_ pending: inout Pending) {
        pending.flushScheduled = false
        guard !pending.bytes.isEmpty else { return }
        pending.bytes.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(descriptor, bytes.baseAddress! + done, bytes.count - done)
                if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { break }
            }
        }
        // A batch's worth of lines is small: the buffer is kept for the next.
        if pending.bytes.count <= 64 * 1024 {
            pending.bytes.removeAll(keepingCapacity: true)
        } else {
            pending.bytes = []
        }
    }
}
