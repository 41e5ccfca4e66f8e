import Foundation
import PinproxyCertificates

extension PinproxyError.Code {
    /// Another `pinproxy check` still drives the daemon after the time given to wait for it.
    public static let daemonBusy = Self("daemon-busy")
}

/// One `pinproxy check` at a time per daemon: a check sets the daemon's rules and resolve map
/// for its own world and puts them back when done, so two at once would serve each other's
/// profiles and restore each other's rules.
///
/// The lock is an exclusive `flock` on `/tmp/pinproxy-check-FINGERPRINT-PORT.lock`, named by
/// the daemon's CA and control-API port so that every name for one daemon (`localhost`,
/// `127.0.0.1`) finds the same file. It is `/tmp` and not `$TMPDIR` because two CI jobs may
/// set different ones. The kernel drops the lock when its holder dies, SIGKILL included, so
/// a killed check never blocks the next one. The holder writes its pid into the file for the
/// message of whoever waits, and removes the file when it lets go. Checks share a machine with
/// the daemon (the loopback origin requires it), so the file is shared too.
final class DaemonLock: Sendable {
    /// The descriptor holding the lock; nil once released.
    private let descriptor: Locked<Int32?>
    private let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = Locked(descriptor)
        self.path = path
    }

    deinit { release() }

    /// The lock file for the daemon whose CA is `ca` and whose control API listens on `adminPort`.
    static func path(ca: Certificate, adminPort: Int) -> String {
        let fingerprint = ca.sha256Fingerprint.prefix(8).map { String(format: "%02x", $0) }.joined()
        return "/tmp/pinproxy-check-\(fingerprint)-\(adminPort).lock"
    }

    /// Takes the lock at `path`, polling until `deadline`. `waiting` is called once, with who
    /// holds it (`pinproxy check pid N`), if it is taken; past the deadline, throws
    /// ``PinproxyError/Code/daemonBusy`` naming the holder and `what` the lock guards.
    static func acquire(_ path: String, until deadline: Date, what: String, waiting: (String) -> Void) throws -> DaemonLock {
        let waited = max(0, deadline.timeIntervalSinceNow)
        var told = false
        while true {
            let fd = try open(path)
            while flock(fd, LOCK_EX | LOCK_NB) != 0 {
                guard errno == EWOULDBLOCK || errno == EINTR else {
                    let reason = String(cString: strerror(errno))
                    close(fd)
                    throw PinproxyError(.io, "cannot lock \(path): \(reason)")
                }
                let holder = Self.holder(fd)
                if Date() >= deadline {
                    close(fd)
                    throw busy(holder: holder, what: what, waited: waited)
                }
                if !told { waiting(holder) }
                told = true
                usleep(50_000)
            }
            // The holder before removed the file as it let go: this lock is on a file no one
            // else will open, so take the one at the path now.
            guard isStill(fd, at: path) else {
                close(fd)
                continue
            }
            // Whoever waits next reads who holds it.
            let pid = Array("\(getpid())\n".utf8)
            if ftruncate(fd, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
            return DaemonLock(descriptor: fd, path: path)
        }
    }

    /// Opens (creating) the lock file; read-only when another user made it, which is enough to lock it.
    private static func open(_ path: String) throws -> Int32 {
        var fd = Glibc.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o666)
        if fd < 0 && errno == EACCES { fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else {
            throw PinproxyError(.io, "cannot open \(path), which keeps two checks off one daemon: \(String(cString: strerror(errno)))")
        }
        // Other users' checks must be able to lock it too (the umask would narrow the mode).
        _ = fchmod(fd, 0o666)
        return fd
    }

    /// Whether `fd` is the file at `path` still (not one removed since it was opened).
    private static func isStill(_ fd: Int32, at path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, stat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// `the daemon … is in use by pinproxy check pid N` (`still …, after N s` when it waited).
    static func busy(holder: String, what: String, waited: TimeInterval) -> PinproxyError {
        let state = waited > 0 ? "is still in use by \(holder) after \(ChildProcess.secondsText(waited))" : "is in use by \(holder)"
        return PinproxyError(.daemonBusy, "\(what) \(state): a check sets the daemon's rules and resolve map for its own world, so checks take turns; wait longer (--daemon-wait SECONDS), run them one after another, or give each its own daemon")
    }

    /// `pinproxy check pid N` as the holder wrote it, or a general name when it cannot be read.
    private static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let text = n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
        return Int32(text).map { CheckLeftovers.ownerPrefix + String($0) } ?? "another pinproxy check"
    }

    /// Lets the next check in, removing the file so that none is left in /tmp per daemon ever
    /// checked (a waiter that locked the removed file sees it and takes the path's); later calls
    /// do nothing.
    func release() {
        descriptor.withLock { fd in
            guard let open = fd else { return }
            // Removed while still locked: no one can lock this file after it is gone from the path.
            _ = unlink(path)
            close(open)
            fd = nil
        }
    }
}
