import Dispatch
import Foundation
import PinproxyBase
import PinproxyProxy
import Testing

/// SIGINT and SIGTERM through a ``SignalRelay``, each case in a process of its own (an exit
/// test): a signal the relay failed to catch ends that process, not the test run.
@Suite("Signal relay")
struct SignalRelayTests {
    @Test("a relay made right after another ended catches SIGTERM and SIGINT (a check waits for its daemon under one, runs under the next)")
    func aRelayAfterAnotherCatchesBoth() async {
        await #expect(processExitsWith: .exitCode(42)) {
            let first = try SignalRelay { _ in exit(3) }
            first.end()
            let caught = DispatchSemaphore(value: 0)
            let numbers = Locked<[Int32]>([])
            let second = try SignalRelay { number in
                numbers.withLock { $0.append(number) }
                caught.signal()
            }
            for number in [SIGTERM, SIGINT] {
                kill(getpid(), number)
                guard caught.wait(timeout: .now() + 10) == .success else { exit(4) }
            }
            second.end()
            exit(numbers.withLock { $0 } == [SIGTERM, SIGINT] ? 42 : 5)
        }
    }

    @Test("a signal sent the moment the relay is made is not lost")
    func noWindowAfterInit() async {
        await #expect(processExitsWith: .exitCode(42)) {
            let caught = DispatchSemaphore(value: 0)
            let relay = try SignalRelay { _ in caught.signal() }
            raise(SIGTERM)
            let status: Int32 = caught.wait(timeout: .now() + 10) == .success ? 42 : 4
            relay.end()
            exit(status)
        }
    }

    @Test("a signal the parent left blocked (its mask is inherited) still reaches the relay, even one sent before it")
    func blockedByTheParent() async {
        await #expect(processExitsWith: .exitCode(42)) {
            var term = sigset_t()
            sigemptyset(&term)
            sigaddset(&term, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &term, nil)
            // Pending on this thread until it unblocks: a signal sent before the relay was made.
            raise(SIGTERM)
            let caught = DispatchSemaphore(value: 0)
            let relay = try SignalRelay { _ in caught.signal() }
            let status: Int32 = caught.wait(timeout: .now() + 10) == .success ? 42 : 4
            relay.end()
            exit(status)
        }
    }

    @Test("after end(), SIGTERM has its default action again")
    func endRestoresTheDefault() async {
        await #expect(processExitsWith: .signal(SIGTERM)) {
            let relay = try SignalRelay { _ in exit(3) }
            relay.end()
            kill(getpid(), SIGTERM)
            sleep(10)
            exit(4)
        }
    }
}
