internal import COpenSSL
internal import CPinproxyShims

/// The engine's two byte buffers: network input fed in, network output taken
/// out. See ``TLSConnection`` for who moves the bytes.
extension TLSConnection {
    // MARK: - Network input

    /// Copies network bytes into the input buffer (bytes read before TLS
    /// started, such as a ClientHello that arrived with the CONNECT head, or
    /// a test's bytes).
    public func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = pp_inbuf_append(readBIO, base, bytes.count)
    }

    public func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Lends `body` free space at the end of the input buffer, at most
    /// `maxBytes` (fewer while part of a record waits), to read network
    /// bytes straight into: no copy on the way in. `body` returns how many
    /// bytes it wrote there; a count above zero becomes input, anything else
    /// (`read(2)`'s 0 or -1) is handed back unchanged. Space of zero bytes
    /// means memory ran out.
    public func receive(maxBytes: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        var room = 0
        let space = pp_inbuf_reserve(readBIO, maxBytes, &room)
        let n = body(UnsafeMutableRawBufferPointer(start: space, count: room))
        if n > 0 { pp_inbuf_commit(readBIO, min(n, room)) }
        return n
    }

    /// The last `count` bytes received (at most what is still unread).
    public func withReceived<Result>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard count > 0, let tail = pp_inbuf_tail(readBIO, count) else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(start: tail, count: count))
    }

    /// Whether network bytes wait in the input buffer or in OpenSSL (read
    /// ahead, or decrypted and not yet taken): input that no socket event
    /// will announce again.
    public var hasBufferedInput: Bool {
        pp_tlsbuf_pending(readBIO) > 0 || SSL_has_pending(ssl) == 1
    }

    /// Network bytes fed but not yet decrypted.
    public var bufferedEncryptedCount: Int { pp_tlsbuf_pending(readBIO) }

    /// Whether ``feedEndOfInput()`` was called.
    public var isAtEndOfInput: Bool { endOfInput }

    /// Tells the engine that the network input ended (TCP FIN): once the
    /// buffer is empty, reads report the end, with or without close_notify.
    public func feedEndOfInput() {
        endOfInput = true
        pp_inbuf_set_eof(readBIO)
    }

    /// OpenSSL reading and writing a socket itself (see ``TLSDirectSocket``).
    public var directSocket: TLSDirectSocket { TLSDirectSocket(connection: self) }

    // MARK: - Network output

    /// Network bytes (records, alerts, handshake flights) not yet taken.
    public var pendingOutput: Int { pp_tlsbuf_pending(writeBIO) }

    /// Lends `body` the pending output, to send straight from the buffer.
    /// `body` returns how many bytes it took, which leave the buffer; a
    /// count of zero or less (a full socket, a failure) leaves it all there,
    /// and is handed back unchanged. Without output `body` is not called and
    /// the result is 0.
    public func withPendingOutput(_ body: (UnsafeRawBufferPointer) -> Int) -> Int {
        var count = 0
        guard let bytes = pp_outbuf_peek(writeBIO, &count), count > 0 else { return 0 }
        let n = body(UnsafeRawBufferPointer(start: bytes, count: count))
        if n > 0 { pp_tlsbuf_consume(writeBIO, min(n, count)) }
        return n
    }

    /// Takes all pending output (a copy), for owners that are not on the hot path.
    public func takeOutput() -> [UInt8] {
        var taken: [UInt8] = []
        _ = withPendingOutput { bytes in
            taken = Array(bytes)
            return bytes.count
        }
        return taken
    }

    /// Frees OpenSSL's record buffers and the output buffer if nothing waits
    /// in them; the next read or write allocates them again. For connections
    /// that went idle.
    public func releaseBuffers() {
        ERR_clear_error()
        _ = SSL_free_buffers(ssl)
        ERR_clear_error()
        pp_tlsbuf_release(writeBIO)
        pp_tlsbuf_release(readBIO)
    }
}
