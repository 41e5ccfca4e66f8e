internal import COpenSSL
internal import CPinproxyShims

/// A connection's engine joined to its socket once the session is
/// established: OpenSSL reads records into its own buffer and sends large
/// records from it, so a relayed byte is copied only by `SSL_read` and
/// `SSL_write` (see `pp_tlsbuf.h`). Used on the connection's queue only.
public struct TLSDirectSocket {
    unowned let connection: TLSConnection

    /// Lets OpenSSL read the socket `descriptor` itself once the bytes fed
    /// so far are read: each record lands in OpenSSL's record buffer, where
    /// it is decrypted, instead of being read into the input buffer and
    /// copied from there. With read-ahead one `read(2)` takes a whole record
    /// (and what follows, up to the buffer's size: a larger buffer would not
    /// help, as OpenSSL 3.0 moves what follows a record to the front before
    /// the next). `empty`: the last read of the socket was short.
    public func readDirectly(_ descriptor: Int32, empty: Bool) {
        SSL_set_read_ahead(connection.ssl, 1)
        pp_inbuf_attach(connection.readBIO, descriptor, empty ? 1 : 0)
    }

    /// The socket became readable: the next read may call `read(2)` again.
    /// Until then a read shorter than asked counts as "the socket is empty",
    /// and no system call is spent to hear EAGAIN.
    public func becameReadable() { pp_inbuf_arm(connection.readBIO) }

    /// What reading the socket directly found.
    public enum Input: Equatable, Sendable {
        /// No socket is read directly.
        case detached
        /// The socket may hold more bytes.
        case readable
        /// The last read found the socket empty.
        case empty
        /// The socket reached end of stream.
        case ended
        /// `read(2)` failed with this errno.
        case failed(Int32)
    }

    public var input: Input {
        var error: Int32 = 0
        let state = pp_inbuf_state(connection.readBIO, &error)
        if error != 0 { return .failed(error) }
        switch state {
        case PP_INBUF_READABLE: return .readable
        case PP_INBUF_EMPTY: return .empty
        case PP_INBUF_ENDED:
            connection.endOfInput = true
            return .ended
        default: return .detached
        }
    }
}
