internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// One TLS session over a non-blocking socket, owning the OpenSSL `SSL`.
///
/// Encrypted input is not read from the socket by OpenSSL: the owner reads
/// the socket into OpenSSL's input buffer with ``receive(maxBytes:)``, and
/// bytes read before TLS started (a ClientHello that arrived with the
/// CONNECT head) are handed over with ``feed(_:)``, so none is lost. Output collects in a buffer until ``sendOutput()``: the owner
/// sends once per turn of its event loop, so the records of one turn leave
/// in one system call rather than one each.
///
/// Every call returns an explicit result; none blocks. The error queue is
/// cleared before each call and drained into a ``TLSFailure`` after it.
public final class TLSConnection: @unchecked Sendable {
    // Sendable: used only on its connection's serial queue; OpenSSL callbacks
    // run synchronously inside those calls, on the same queue.
    package let ssl: OpaquePointer
    private let readBIO: OpaquePointer
    private let writeBIO: OpaquePointer
    private let fd: Int32
    public let isServer: Bool
    private let context: TLSContext

    /// The last non-close_notify alert the peer sent.
    public private(set) var receivedAlert: TLSAlert?
    /// Whether the peer sent close_notify.
    public private(set) var receivedCloseNotify = false
    /// The last alert this side sent.
    public private(set) var sentAlert: TLSAlert?
    public private(set) var isHandshakeComplete = false
    /// (Client side) the server asked for a client certificate and none was configured.
    public private(set) var clientCertificateRequested = false
    /// The ClientHello as seen by the server side, once it arrived.
    public private(set) var clientHello: ClientHello?

    private enum HelloDecision { case waiting, paused, proceed, reject(UInt8) }
    private var helloDecision = HelloDecision.waiting
    private var endOfInput = false
    private var rejectionReason: String?

    /// A session on `fd` using `context`; the role follows the context.
    public init(context: TLSContext, fd: Int32) throws {
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
        self.fd = fd
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

    static func owner(of ssl: OpaquePointer) -> TLSConnection? {
        guard let raw = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: - Client side setup

    /// Sets the SNI sent upstream (DNS names only, as RFC 6066 requires) and,
    /// unless the context is insecure, the name the certificate must match.
    public func configureClient(serverName: HostName) throws {
        precondition(!isServer)
        ERR_clear_error()
        if case .dns(let name) = serverName {
            try OpenSSL.check(pp_SSL_set_tlsext_host_name(ssl, name), "cannot set SNI \(name)")
        }
        guard context.trust != .insecure else { return }
        switch serverName {
        case .dns(let name):
            try OpenSSL.check(pp_SSL_set1_host(ssl, name), "cannot set the expected host \(name)")
        case .ipv4(let bytes), .ipv6(let bytes):
            try OpenSSL.check(X509_VERIFY_PARAM_set1_ip(SSL_get0_param(ssl), bytes, bytes.count),
                              "cannot set the expected address \(serverName)")
        }
    }

    // MARK: - Server side: the paused ClientHello

    /// Installs the certificate, key and extra chain certificates to present,
    /// and lets the paused handshake continue on the next ``handshake()``.
    public func installCertificate(_ certificate: Certificate, privateKey: PrivateKey, chain: [Certificate]) throws {
        ERR_clear_error()
        try OpenSSL.check(SSL_use_certificate(ssl, certificate.pointer), "cannot use the certificate")
        try OpenSSL.check(SSL_use_PrivateKey(ssl, privateKey.pointer), "cannot use the private key")
        if !chain.isEmpty {
            guard let stack = pp_sk_X509_new_null() else { throw OpenSSL.error("cannot allocate a chain") }
            defer { pp_sk_X509_pop_free(stack) }
            for c in chain { _ = pp_sk_X509_push_ref(stack, c.pointer) }
            try OpenSSL.check(pp_SSL_set0_chain_ref(ssl, stack), "cannot set the chain")
        }
        helloDecision = .proceed
    }

    /// Installs a forged leaf with its chain (leaf, then CA).
    public func installCertificate(_ leaf: ForgedLeaf) throws {
        try installCertificate(leaf.certificate, privateKey: leaf.privateKey, chain: Array(leaf.chain.dropFirst()))
    }

    /// Refuses the paused handshake: the next ``handshake()`` sends `alert` and fails.
    public func rejectClientHello(alert: TLSAlert, reason: String) {
        helloDecision = .reject(alert.code)
        rejectionReason = reason
    }

    func clientHelloCallback(alert: UnsafeMutablePointer<Int32>?) -> Int32 {
        switch helloDecision {
        case .proceed: return pp_SSL_CLIENT_HELLO_SUCCESS()
        case .reject(let code):
            alert?.pointee = Int32(code)
            return pp_SSL_CLIENT_HELLO_ERROR()
        case .paused: return pp_SSL_CLIENT_HELLO_RETRY()
        case .waiting:
            clientHello = parseClientHello()
            helloDecision = .paused
            return pp_SSL_CLIENT_HELLO_RETRY()
        }
    }

    private func extensionBytes(_ type: Int32) -> [UInt8]? {
        var data: UnsafePointer<UInt8>? = nil
        var length = 0
        guard SSL_client_hello_get0_ext(ssl, UInt32(type), &data, &length) == 1, let data else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    private func parseClientHello() -> ClientHello {
        var raw: String? = nil
        if let ext = extensionBytes(TLSEXT_TYPE_server_name), ext.count >= 5 {
            // server_name_list: u16 length, then (u8 type, u16 length, name)*
            var i = 2
            while i + 3 <= ext.count {
                let type = ext[i]
                let length = Int(ext[i + 1]) << 8 | Int(ext[i + 2])
                let end = min(ext.count, i + 3 + length)
                if type == 0 {
                    raw = String(String.UnicodeScalarView(ext[(i + 3)..<end].map { Unicode.Scalar($0) }))
                    break
                }
                i = end
            }
        }
        var alpn: [String] = []
        if let ext = extensionBytes(TLSEXT_TYPE_application_layer_protocol_negotiation), ext.count >= 3 {
            var i = 2
            while i < ext.count {
                let length = Int(ext[i])
                guard i + 1 + length <= ext.count else { break }
                alpn.append(String(decoding: ext[(i + 1)..<(i + 1 + length)], as: UTF8.self))
                i += 1 + length
            }
        }
        var name: HostName? = nil
        var problem: String? = nil
        if let raw {
            do { name = try HostName(validating: raw) } catch let error as PinproxyError { problem = error.reason } catch { problem = "\(error)" }
        }
        return ClientHello(serverNameRaw: raw, serverName: name, serverNameProblem: problem, alpn: alpn)
    }

    func selectALPN(out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, outLength: UnsafeMutablePointer<UInt8>?,
                    input: UnsafePointer<UInt8>?, inputLength: UInt32) -> Int32 {
        guard let input, let out, let outLength else { return pp_SSL_TLSEXT_ERR_NOACK() }
        for wanted in context.alpn {
            var i = 0
            while i < Int(inputLength) {
                let length = Int(input[i])
                guard i + 1 + length <= Int(inputLength) else { break }
                let candidate = UnsafeBufferPointer(start: input + i + 1, count: length)
                if candidate.elementsEqual(wanted.utf8) {
                    out.pointee = input + i + 1
                    outLength.pointee = UInt8(length)
                    return pp_SSL_TLSEXT_ERR_OK()
                }
                i += 1 + length
            }
        }
        return pp_SSL_TLSEXT_ERR_NOACK()
    }

    func noteClientCertificateRequest() { clientCertificateRequested = true }

    private func noteInfo(kind: Int32, value: Int32) {
        let alert = TLSAlert(code: UInt8(truncatingIfNeeded: value & 0xff), isFatal: (value >> 8) == 2)
        if kind & pp_SSL_CB_READ_ALERT() == pp_SSL_CB_READ_ALERT() {
            if alert.code == 0 { receivedCloseNotify = true } else { receivedAlert = alert }
        } else if kind & pp_SSL_CB_WRITE_ALERT() == pp_SSL_CB_WRITE_ALERT() {
            sentAlert = alert
        }
    }

    // MARK: - Input

    /// Hands encrypted bytes read from the socket to OpenSSL.
    public func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = pp_inbuf_append(readBIO, base, bytes.count)
    }

    /// Reads the socket straight into OpenSSL's input, at most `maxBytes`:
    /// `read(2)`'s result (with `errno` set when it is -1) and how many bytes
    /// were asked for (less than `maxBytes` while part of a record waits).
    public func receive(maxBytes: Int) -> (count: Int, asked: Int) {
        var asked = 0
        let n = pp_inbuf_read_from(readBIO, fd, maxBytes, &asked)
        return (n, asked)
    }

    /// The last `count` bytes received (at most what is still unread).
    public func withReceived<Result>(_ count: Int, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        guard count > 0, let tail = pp_inbuf_tail(readBIO, count) else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return body(UnsafeRawBufferPointer(start: tail, count: count))
    }

    public func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Whether encrypted bytes wait in the input buffer or decrypted bytes in
    /// OpenSSL: input that no socket event will announce again.
    public var hasBufferedInput: Bool {
        pp_tlsbuf_pending(readBIO) > 0 || SSL_pending(ssl) > 0
    }

    /// Encrypted bytes fed but not yet decrypted.
    public var bufferedEncryptedCount: Int { pp_tlsbuf_pending(readBIO) }

    /// Whether ``feedEndOfInput()`` was called.
    public var isAtEndOfInput: Bool { endOfInput }

    /// Tells OpenSSL that the socket reached end of stream.
    public func feedEndOfInput() {
        endOfInput = true
        pp_inbuf_set_eof(readBIO)
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
            if let clientHello { return .clientHello(clientHello) }
            return .failed(TLSFailure(kind: .other, reason: "the handshake paused without a ClientHello"))
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
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
    /// ``sendOutput()``); a partial count is normal. After `.wantWrite` or
    /// `.wantRead` call again with the same bytes.
    public func write(_ bytes: UnsafeRawBufferPointer) -> TLSIOResult {
        guard bytes.count > 0 else { return .bytes(0) }
        TLSConnection.clearErrorQueue()
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        if n > 0 { return .bytes(Int(n)) }
        return ioResult(SSL_get_error(ssl, n))
    }

    // MARK: - Output

    /// Encrypted bytes (records, alerts, handshake flights) not yet sent.
    public var pendingOutput: Int { pp_tlsbuf_pending(writeBIO) }

    /// Sends buffered output until it is all sent or the socket is full.
    public func sendOutput() -> TLSSendResult {
        let left = pp_outbuf_send(writeBIO, fd)
        if left == 0 { return .sent }
        if left > 0 { return .blocked }
        return .failed(Int32(-left))
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

    /// Sends close_notify once, best effort, never waiting for the peer's.
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
        let last = ERR_peek_last_error()
        let reasonCode = last == 0 ? 0 : pp_ERR_GET_REASON(last)
        let savedErrno = errno
        let errors = OpenSSL.drainErrors()
        if error == SSL_ERROR_SYSCALL {
            if endOfInput || errors.isEmpty && savedErrno == 0 { return nil }
            let why = savedErrno != 0 ? String(cString: strerror(savedErrno)) : "I/O error"
            return TLSFailure(kind: .transport, reason: why, receivedAlert: receivedAlert, openSSLErrors: errors)
        }
        if reasonCode == SSL_R_UNEXPECTED_EOF_WHILE_READING { return nil }
        if !isServer {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let text = String(cString: X509_verify_cert_error_string(verify))
                return TLSFailure(kind: .verificationFailed, reason: "certificate verify failed: \(text)",
                                  receivedAlert: receivedAlert, verificationError: text, openSSLErrors: errors)
            }
        }
        if let alert = receivedAlert, alert.isFatal {
            return TLSFailure(kind: .alertReceived, reason: "the peer sent alert \(alert.name)",
                              receivedAlert: alert, openSSLErrors: errors)
        }
        if let rejectionReason {
            return TLSFailure(kind: .other, reason: rejectionReason, openSSLErrors: errors)
        }
        let text = ERR_reason_error_string(last).map { String(cString: $0) } ?? "TLS error"
        switch reasonCode {
        case SSL_R_NO_SHARED_CIPHER, SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_NO_PROTOCOLS_AVAILABLE,
             SSL_R_VERSION_TOO_LOW, SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS, SSL_R_NO_SUITABLE_KEY_SHARE,
             SSL_R_NO_SHARED_GROUPS:
            return TLSFailure(kind: .noSharedParameters, reason: text, openSSLErrors: errors)
        case SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_WRONG_VERSION_NUMBER,
             SSL_R_UNKNOWN_PROTOCOL, SSL_R_PACKET_LENGTH_TOO_LONG, SSL_R_RECORD_LENGTH_MISMATCH:
            return TLSFailure(kind: .notTLS, reason: text, openSSLErrors: errors)
        default:
            return TLSFailure(kind: .other, reason: text, openSSLErrors: errors)
        }
    }

    // MARK: - Session details

    /// Version, cipher, ALPN and SNI of the established session.
    public var sessionInfo: TLSSessionInfo {
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? ""
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        let alpn = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        return TLSSessionInfo(version: version, cipher: cipher, alpn: alpn, serverName: name)
    }

    /// The certificates the peer sent (leaf first), as it sent them.
    public var peerCertificates: [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<pp_sk_X509_num(stack)).compactMap { pp_sk_X509_value(stack, $0).map { Certificate(borrowing: $0) } }
    }

    /// The chain the verifier built from the peer's leaf to a trust anchor
    /// (the anchor included), or as far as it got; empty before verification.
    public var verifiedChain: [Certificate] {
        guard let stack = SSL_get0_verified_chain(ssl) else { return [] }
        return (0..<pp_sk_X509_num(stack)).compactMap { pp_sk_X509_value(stack, $0).map { Certificate(borrowing: $0) } }
    }

    /// The peer's leaf certificate.
    public var peerCertificate: Certificate? {
        SSL_get1_peer_certificate(ssl).map { Certificate(takingOwnership: $0) }
    }
}
