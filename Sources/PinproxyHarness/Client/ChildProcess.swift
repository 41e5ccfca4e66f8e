import Foundation
import PinproxyCertificates
import Synchronization

/// Runs one external client command under a deadline and reaps it.
///
/// `posix_spawn` with every signal back at its default disposition and an
/// empty signal mask (the proxy ignores SIGPIPE, and an ignored signal would
/// otherwise survive the exec), in a process group of its own so a timeout
/// ends the whole group, standard input from /dev/null, standard output and
/// error captured together. The child is always waited for: no zombies.
///
/// Why not swift-subprocess (1.0.x, its source read for this): it does reset every signal and empty the
/// mask in the child, put it in a process group (`PlatformOptions.processGroupID = 0`), and
/// end the group with SIGTERM then SIGKILL (`TeardownStep.gracefulShutDown(toProcessGroup:)`),
/// but only when the calling task is cancelled, and three things this runner needs go against it:
/// - output past the limit is an error (`.string(limit:)` throws), where a check keeps the first
///   64 KiB of a chatty client and goes on; truncating takes its streaming form and a reader of
///   our own again;
/// - `run` returns once the output is collected, so a client that leaves a background descendant
///   holding the pipe holds the row until that descendant exits; here the group is killed a
///   second after the child itself has gone;
/// - its API is async only: the harness runs each row on a plain thread and an interrupted check
///   kills the running groups from a signal handler (``Harness/interrupt()``), so every run would
///   bridge a Task to a semaphore and publish its process group from inside the body.
/// And it would add two packages (swift-subprocess, swift-system) to the build for these
/// hundred lines.
enum ChildProcess {
    struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it.
        var status: Int32
        /// Standard output and error, interleaved, at most ``outputLimit`` bytes.
        var output: String
        /// Whether the deadline ended it.
        var timedOut: Bool
    }

    static let outputLimit = 64 * 1024

    /// How long a timed-out group has between SIGTERM and SIGKILL: long enough for a client to
    /// close its connections, short enough that the deadline stays close to the one given.
    static let killGrace: TimeInterval = 0.2

    /// `1 s`, `0.5 s`, `2.5 s`: a deadline as the user gave it.
    static func secondsText(_ seconds: TimeInterval) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : String(format: "%g s", seconds)
    }

    /// Runs `/bin/sh -c command` with `environment`, for at most `timeout` seconds (then its
    /// process group gets SIGTERM and, ``killGrace`` later, SIGKILL); while it runs, its process
    /// group is in `running` (so an interrupted check can end it).
    static func run(shell command: String, environment: [String: String], timeout: TimeInterval,
                    running: Locked<Set<pid_t>>? = nil) throws -> Result {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw PinproxyError(.io, "pipe failed: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (pipe[0], pipe[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        posix_spawn_file_actions_addclose(&actions, writeEnd)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigmask(&attributes, &noMask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let arguments = ["/bin/sh", "-c", command]
        let environmentLines = environment.map { "\($0)=\($1)" }
        var pid: pid_t = 0
        let spawned = withCStrings(arguments) { argv in
            withCStrings(environmentLines) { envp in
                posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
            }
        }
        Glibc.close(writeEnd)
        guard spawned == 0 else {
            Glibc.close(readEnd)
            throw PinproxyError(.io, "cannot start /bin/sh: \(String(cString: strerror(spawned)))")
        }
        running?.withLock { _ = $0.insert(pid) }
        defer { running?.withLock { _ = $0.remove(pid) } }

        // The output is read on its own thread so a chatty child never blocks on a full pipe.
        let captured = Mutex<[UInt8]>([])
        let drained = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, 4096) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                captured.withLock { if $0.count < outputLimit { $0 += buffer.prefix(min(n, outputLimit - $0.count)) } }
            }
            Glibc.close(readEnd)
            drained.signal()
        }

        var status: Int32 = 0
        var timedOut = false
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { break }
            if Date() >= deadline && !timedOut {
                timedOut = true
                kill(-pid, SIGTERM)
                let grace = Date().addingTimeInterval(killGrace)
                while waitpid(pid, &status, WNOHANG) == 0 && Date() < grace { usleep(5_000) }
                kill(-pid, SIGKILL)
                // A blocking wait now: the group was killed, and the child must be reaped.
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                break
            }
            usleep(2_000)
        }
        // Descendants that kept the pipe open would hold the reader: their group goes too.
        if drained.wait(timeout: .now() + 1) == .timedOut {
            kill(-pid, SIGKILL)
            drained.wait()
        }
        let exit: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exit, output: String(decoding: captured.withLock { $0 }, as: UTF8.self), timedOut: timedOut)
    }

    /// Calls `body` with a NULL-terminated C array of `strings`.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }
}
