internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// One TLS session as a byte engine, owning the OpenSSL `SSL`: network bytes
/// in, network bytes out, plaintext read and written in between. It knows no
/// socket; whoever carries its bytes (the proxy's transport, `pin --connect`,
/// a test joining two engines in memory) moves them.
///
/// Network input goes in with ``feed(_:)`` (a copy) or, on the hot path,
/// ``receive(maxBytes:_:)``, which lends the input buffer's free space so the
/// owner reads a socket straight into it. Output collects in a buffer
/// (``pendingOutput``) until the owner takes it with ``withPendingOutput(_:)``
/// (sending straight from the buffer) or ``takeOutput()``: the proxy sends
/// once per turn of its event loop, so the records of one turn leave in one
/// system call rather than one each. Once a session is established, the
/// proxy lets OpenSSL read and write the socket (``directSocket``), so a
/// relayed byte is copied only by `SSL_read` and `SSL_write`.
///
/// Every call returns an explicit result; none blocks. `wantRead` means: feed
/// more network bytes, then call again; `wantWrite` cannot come from the
/// output buffer, which never refuses. The error queue is cleared before each
/// call and drained into a ``TLSFailure`` after it.
public final class TLSConnection: @unchecked Sendable {
    // Sendable: used only on its connection's serial queue; OpenSSL callbacks
    // run synchronously inside those calls, on the same queue.
    package let ssl: OpaquePointer
    let readBIO: OpaquePointer
    let writeBIO: OpaquePointer
    public let isServer: Bool
    let context: TLSContext

    /// The last non-close_notify alert the peer sent.
    public internal(set) var receivedAlert: TLSAlert?
    /// Whether the peer sent close_notify.
    public internal(set) var receivedCloseNotify = false
    /// The last alert this side sent.
    public internal(set) var sentAlert: TLSAlert?
    public private(set) var isHandshakeComplete = false
    /// (Client side) the server asked for a client certificate and none was configured.
    public internal(set) var clientCertificateRequested = false
    /// The ClientHello as seen by the server side, once it arrived.
    public internal(set) var clientHello: ClientHello?
    /// Server side: the ALPN protocols this connection accepts, most preferred
    /// first, in place of its context's; set before the handshake continues
    /// past the ClientHello.
    public var applicationProtocols: [String]?

    enum HelloDecision { case waiting, paused, proceed, reject(UInt8) }
    var helloDecision = HelloDecision.waiting
    /// The paused ClientHello was handed to the caller: OpenSSL calls the
    /// callback again on every ``handshake()`` while the decision is pending
    /// (more input, the client's end), and those are not new ClientHellos.
    var clientHelloDelivered = false
    var endOfInput = false
    var rejectionReason: String?
    /// (Client side) the cache key of the upstream's sessions, and the session offered.
    var resumption: SessionResumption?

    /// A session using `context`; the role (client or server) follows the context.
    public init(context: TLSContext) throws {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else { throw OpenSSL.error("SSL_new failed") }
        // No stored property is set yet, so deinit does not run for these
        // throws: each frees exactly what it allocated.
        guard let rbio = pp_inbuf_new() else {
            SSL_free(ssl)
            throw OpenSSL.error("BIO_new failed")
        }
        guard let wbio = pp_outbuf_new() else {
            BIO_free(rbio)
            SSL_free(ssl)
            throw OpenSSL.error("BIO_new failed")
        }
        SSL_set_bio(ssl, rbio, wbio)  // the SSL owns both BIOs now
        self.ssl = ssl
        self.readBIO = rbio
        self.writeBIO = wbio
        self.context = context
        self.isServer = context.isServer
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_info_callback(ssl) { ssl, kind, value in
            guard let ssl, let connection = TLSConnection.owner(of: ssl) else { return }
            connection.noteInfo(kind: kind, value: value)
        }
        if isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
    }

    deinit { SSL_free(ssl) }

    /// The connection whose `SSL` this is, for OpenSSL's callbacks.
    static func owner(of ssl: OpaquePointer) -> TLSConnection? {
        guard let raw = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: - Non-blocking operations

    /// Empties this thread's OpenSSL error queue before a call whose result
    /// `SSL_get_error` will classify (a stale entry would turn WANT_READ
    /// into a failure). Looking costs a fraction of clearing, which walks
    /// every slot of the queue; the queue is almost always empty already,
    /// because every failure drains it.
    @inline(__always)
    static func clearErrorQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// Advances the handshake as far as the available bytes allow.
    public func handshake() -> TLSHandshakeResult {
        TLSConnection.clearErrorQueue()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            isHandshakeComplete = true
            return .complete
        }
        let error = SSL_get_error(ssl, r)
        switch error {
        case SSL_ERROR_WANT_READ: return endOfInput ? .closed : .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case pp_SSL_ERROR_WANT_CLIENT_HELLO_CB():
            guard let clientHello else {
                return .failed(TLSFailure(kind: .other, reason: "the handshake paused without a ClientHello"))
            }
            // Still undecided: once for the caller to decide; after that the
            // client's end is what is new (it left while the caller waited,
            // e.g. on the upstream), anything else is waited through.
            if !clientHelloDelivered {
                clientHelloDelivered = true
                return .clientHello(clientHello)
            }
            return endOfInput ? .closed : .wantRead
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            if !isServer { noteHandshakeFailure() }
            if let failure = classifyFailure(error) { return .failed(failure) }
            return .closed
        }
    }

    /// Reads decrypted bytes into `buffer`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        TLSConnection.clearErrorQueue()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        return ioResult(SSL_get_error(ssl, n))
    }

    /// Encrypts bytes from `bytes` into the output buffer (see
    /// ``pendingOutput``); a partial count is normal. After `.wantRead` call
    /// again with the same bytes (or the same bytes first, more after).
    public func write(_ bytes: UnsafeRawBufferPointer) -> TLSIOResult {
        guard bytes.count > 0 else { return .bytes(0) }
        TLSConnection.clearErrorQueue()
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        return ioResult(SSL_get_error(ssl, n))
    }

    /// Writes close_notify into the output buffer once, best effort, never
    /// waiting for the peer's.
    public func shutdown() {
        guard isHandshakeComplete else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func ioResult(_ error: Int32) -> TLSIOResult {
        switch error {
        case SSL_ERROR_WANT_READ: return endOfInput ? .closed : .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            if let failure = classifyFailure(error) { return .failed(failure) }
            return .closed
        }
    }

    /// A failure, or nil when the "failure" is just the peer going away.
    private func classifyFailure(_ error: Int32) -> TLSFailure? {
        TLSFailure.classifying(error, endOfInput: endOfInput,
                               verifyResult: isServer ? nil : SSL_get_verify_result(ssl),
                               receivedAlert: receivedAlert, rejectionReason: rejectionReason)
    }
}
