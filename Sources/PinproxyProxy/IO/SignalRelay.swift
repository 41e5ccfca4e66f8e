internal import CPinproxyIO
import Dispatch
import Glibc
import PinproxyBase

/// SIGINT and SIGTERM turned into calls of a handler on a Dispatch queue, from the moment
/// this is made until ``end()``.
///
/// A handler installed with `sigaction` (for the whole process, at once) writes each
/// signal's number into a pipe, and a read source on the pipe calls `handler`. No signal
/// is lost between making the relay and its first use, and one relay may follow another
/// (a check waits for a daemon under one, then runs its rows under the next). Dispatch's
/// own signal sources could do neither: they install their handler later, on Dispatch's
/// manager thread, and a source cancelled while the next one was made left both signals
/// ignored, so that `pinproxy check` went on through SIGINT and SIGTERM.
///
/// One relay at a time per process: making one while another runs takes over its signals (the
/// other's ``end()`` then does nothing). The calling thread unblocks both signals (a parent may
/// have left them blocked): make a relay on a thread that lives as long as it, such as the main one.
public final class SignalRelay: Sendable {
    private let id: Int

    /// Starts relaying; `handler` runs on a global queue with each signal's number.
    /// Throws when the pipe or a handler cannot be set up.
    public init(_ handler: @escaping @Sendable (Int32) -> Void) throws(PinproxyError) {
        let pipe = SignalPipe.shared
        if let failure = pipe.failure { throw PinproxyError(.io, "cannot relay SIGINT and SIGTERM: \(failure)") }
        id = try pipe.take(handler)
    }

    /// Back to the actions found when the first relay started (the default ones, as a rule:
    /// a signal then ends the process). Signals relayed before and not yet handled are dropped.
    /// Does nothing once another relay has taken over.
    public func end() {
        SignalPipe.shared.release(id)
    }

    deinit { end() }
}

/// The pipe every ``SignalRelay`` uses, made once and kept for the life of the process (so
/// that the signal handler never writes to a descriptor closed, or reused, under it), and the
/// handler of the relay running now.
private final class SignalPipe: @unchecked Sendable {
    // Sendable: every stored property is set once, in init; the handler is behind its lock.
    static let shared = SignalPipe()

    let writeEnd: Int32
    /// Why there is no pipe, when there is none.
    let failure: String?
    private let source: (any DispatchSourceRead)?
    private let current = Locked<(id: Int, handler: (@Sendable (Int32) -> Void)?)>((0, nil))

    private init() {
        var ends: [Int32] = [-1, -1]
        // Non-blocking both ways: the handler never waits on a full pipe, the reader on an empty one.
        guard pipe(&ends) == 0,
              ends.allSatisfy({ fcntl($0, F_SETFD, FD_CLOEXEC) == 0 && fcntl($0, F_SETFL, O_NONBLOCK) == 0 }) else {
            failure = "pipe: " + String(cString: strerror(errno))
            writeEnd = -1
            source = nil
            return
        }
        let readEnd = ends[0]
        writeEnd = ends[1]
        failure = nil
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: .global())
        self.source = source
        let current = self.current
        source.setEventHandler {
            var numbers = [UInt8](repeating: 0, count: 16)
            while true {
                let count = read(readEnd, &numbers, numbers.count)
                guard count > 0 else { break }
                guard let handler = current.withLock({ $0.handler }) else { continue }
                for number in numbers.prefix(count) { handler(Int32(number)) }
            }
        }
        source.resume()
    }

    /// Makes `handler` the one signals go to, installing the signal handler when no relay ran;
    /// returns its turn's id. Under the lock with ``release(_:)``, so that one relay ending
    /// while the next starts cannot put the default actions back under the new one.
    func take(_ handler: @escaping @Sendable (Int32) -> Void) throws(PinproxyError) -> Int {
        try current.withLock { current throws(PinproxyError) in
            if current.handler == nil, pp_signal_relay_start(writeEnd) != 0 {
                throw PinproxyError(.io, "cannot relay SIGINT and SIGTERM: sigaction: \(String(cString: strerror(errno)))")
            }
            current = (current.id + 1, handler)
            return current.id
        }
    }

    /// Ends turn `id`, and the relaying with it, if it is still the current one.
    func release(_ id: Int) {
        current.withLock { current in
            guard current.id == id, current.handler != nil else { return }
            current.handler = nil
            pp_signal_relay_stop()
        }
    }
}
