#if os(Linux)
import Glibc
#endif
internal import CPinproxyIO

/// An open file descriptor as a value, with the few non-blocking calls a
/// transport makes on it: each returns an explicit ``IOOutcome`` instead of
/// a count with `errno` beside it.
///
/// Our own small type rather than swift-system's `FileDescriptor`: the
/// transport needs `read`, `send` with `MSG_NOSIGNAL` (which swift-system
/// does not offer) and `shutdown`, with EAGAIN as an ordinary outcome rather
/// than a thrown error on the per-request path; the calls are thin enough to
/// be inlined into the transport.
package struct Descriptor: Hashable, Sendable, CustomStringConvertible {
    /// The kernel's number for it, for calls across the C boundary.
    package let rawValue: Int32

    package init(_ rawValue: Int32) { self.rawValue = rawValue }

    package var description: String { "fd \(rawValue)" }

    /// One `read(2)` into `buffer`; EINTR is retried.
    @inline(__always)
    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOOutcome {
        while true {
            let n = Glibc.read(rawValue, buffer.baseAddress, buffer.count)
            if n >= 0 { return n == 0 ? .endOfStream : .bytes(n) }
            let error = Errno.current
            if error != .interrupted { return error.isWouldBlock ? .wouldBlock : .failed(error) }
        }
    }

    /// One `send(2)` of `bytes` without SIGPIPE; EINTR is retried.
    @inline(__always)
    func send(_ bytes: UnsafeRawBufferPointer) -> IOOutcome {
        while true {
            let n = Glibc.send(rawValue, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            let error = Errno.current
            if error != .interrupted { return error.isWouldBlock ? .wouldBlock : .failed(error) }
        }
    }

    /// Half-closes the sending side (a FIN after what is already sent).
    func shutdownSending() {
        _ = Glibc.shutdown(rawValue, Int32(SHUT_WR))
    }

    /// Closes the descriptor; its number may then name another file.
    package func close() {
        _ = Glibc.close(rawValue)
    }
}

/// What one non-blocking read or send on a ``Descriptor`` achieved.
enum IOOutcome: Equatable {
    /// This many bytes moved (more than zero for a read).
    case bytes(Int)
    /// The socket has nothing to read, or no room to send, for now.
    case wouldBlock
    /// A read found the end of the stream (the peer's FIN).
    case endOfStream
    /// The call failed.
    case failed(Errno)
}

/// A system error number, as captured right after the call that set it.
struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    let rawValue: Int32

    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    static var current: Errno { Errno(errno) }

    static let interrupted = Errno(EINTR)
    static let wouldBlock = Errno(EAGAIN)
    static let connectionReset = Errno(ECONNRESET)
    static let brokenPipe = Errno(EPIPE)
    static let inProgress = Errno(EINPROGRESS)
    static let tooManyOpenFiles = Errno(EMFILE)
    static let tooManyOpenFilesInSystem = Errno(ENFILE)

    /// EAGAIN, or EWOULDBLOCK where it differs.
    var isWouldBlock: Bool { rawValue == EAGAIN || rawValue == EWOULDBLOCK }

    /// Whether the peer reset or went away mid-send.
    var isReset: Bool { self == .connectionReset || self == .brokenPipe }

    /// `strerror`'s words for it.
    var description: String { String(cString: strerror(rawValue)) }
}

/// Readiness a socket is watched for, or was reported with.
struct IOEvents: OptionSet, Hashable, Sendable {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Bytes (or the end of the stream) can be read.
    static let readable = IOEvents(rawValue: PP_EVENT_READABLE)
    /// There is room to send.
    static let writable = IOEvents(rawValue: PP_EVENT_WRITABLE)
    /// An error or hang-up: the next read or send reports why. Reported,
    /// never asked for.
    static let broken = IOEvents(rawValue: PP_EVENT_BROKEN)
}
