import Glibc

/// A ``BlockingTransport`` over a connected socket whose reads and writes
/// block up to its timeouts (`SO_RCVTIMEO`, `SO_SNDTIMEO`): the harness's
/// loopback sockets and the benchmark's load connections. The system calls,
/// their retries and their errors are written once, here.
public protocol BlockingSocketTransport: BlockingTransport {
    /// The connected socket.
    var fd: Int32 { get }
}

extension BlockingSocketTransport {
    /// One `recv(2)`, retried on EINTR; a timeout (EAGAIN) is `.timedOut`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> BlockingRead {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .timedOut }
            return .failed(String(cString: strerror(errno)))
        }
    }

    /// `send(2)` until every byte went (no SIGPIPE), retried on EINTR.
    public func sendAll(_ bytes: UnsafeRawBufferPointer) -> BlockingRead? {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .timedOut }
            return .failed(n == 0 ? "the socket took no bytes" : String(cString: strerror(errno)))
        }
        return nil
    }
}
