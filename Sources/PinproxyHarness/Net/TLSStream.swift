internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// One OpenSSL `SSL_CTX` for the harness's blocking endpoints: the origin's
/// server context, or a client context whose certificate check is handed to
/// a Swift decision (the client library being emulated).
final class HarnessTLSContext: @unchecked Sendable {
    // Sendable: configured once in init, only read afterwards; OpenSSL
    // synchronises SSL_new on a shared context.
    let pointer: OpaquePointer
    /// Owned by the context for the verify callback; released in deinit.
    private let verifier: Unmanaged<ChainDecision>?

    /// The protocols a server context accepts by ALPN, in its order of preference:
    /// HTTP/2 when the client offers it, as a current HTTPS server does.
    static let serverProtocols = ["h2", "http/1.1"]

    /// A server context presenting `chain` (leaf first) with `key`, choosing
    /// the first of ``serverProtocols`` the client offers by ALPN.
    init(serving chain: [Certificate], key: PrivateKey) throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw OpenSSL.error("SSL_CTX_new failed", code: .connect) }
        pointer = ctx
        verifier = nil
        _ = pp_SSL_CTX_set_min_proto_version(ctx, pp_TLS1_2_VERSION())
        _ = pp_SSL_CTX_set_options(ctx, pp_SSL_OP_IGNORE_UNEXPECTED_EOF())
        guard let leaf = chain.first else { throw PinproxyError(.chain, "the origin has no certificate to present") }
        guard SSL_CTX_use_certificate(ctx, leaf.pointer) == 1, SSL_CTX_use_PrivateKey(ctx, key.pointer) == 1,
              SSL_CTX_check_private_key(ctx) == 1 else {
            throw OpenSSL.error("the origin's key does not belong to its certificate", code: .keyMismatch)
        }
        // SSL_CTX_add1_chain_cert is a macro over this control call.
        for certificate in chain.dropFirst() where SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer(certificate.pointer)) != 1 {
            throw OpenSSL.error("cannot add \(certificate.subject) to the origin's chain", code: .connect)
        }
        SSL_CTX_set_alpn_select_cb(ctx, { _, out, outLength, input, inputLength, _ in
            guard let out, let outLength, let input else { return pp_SSL_TLSEXT_ERR_NOACK() }
            let offered = UnsafeBufferPointer(start: input, count: Int(inputLength))
            guard let (start, length) = HarnessTLSContext.select(from: offered) else { return pp_SSL_TLSEXT_ERR_NOACK() }
            // Points into the client's list, which lives as long as the handshake.
            out.pointee = input + start
            outLength.pointee = UInt8(length)
            return pp_SSL_TLSEXT_ERR_OK()
        }, nil)
    }

    /// Where, in a client's ALPN list (wire format), the first of ``serverProtocols``
    /// it offers is; nil when it offers none of them (the handshake goes on without ALPN).
    static func select(from offered: UnsafeBufferPointer<UInt8>) -> (start: Int, length: Int)? {
        for wanted in serverProtocols {
            var i = 0
            while i < offered.count {
                let length = Int(offered[i])
                guard i + 1 + length <= offered.count else { break }
                if offered[(i + 1)..<(i + 1 + length)].elementsEqual(wanted.utf8) { return (i + 1, length) }
                i += 1 + length
            }
        }
        return nil
    }

    /// A client context that offers `alpn` and lets `decision` judge the presented chain
    /// inside the handshake, as NSURLSession's server-trust challenge or a Java trust manager does.
    init(alpn: [String], decision: ChainDecision) throws {
        ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw OpenSSL.error("SSL_CTX_new failed", code: .connect) }
        pointer = ctx
        _ = pp_SSL_CTX_set_min_proto_version(ctx, pp_TLS1_2_VERSION())
        _ = pp_SSL_CTX_set_options(ctx, pp_SSL_OP_IGNORE_UNEXPECTED_EOF())
        SSL_CTX_set_verify(ctx, pp_SSL_VERIFY_PEER(), nil)
        let retained = Unmanaged.passRetained(decision)
        verifier = retained
        // Replaces OpenSSL's own chain verification: the emulated library decides.
        SSL_CTX_set_cert_verify_callback(ctx, { store, arg in
            guard let store, let arg else { return 0 }
            let decision = Unmanaged<ChainDecision>.fromOpaque(arg).takeUnretainedValue()
            var chain: [Certificate] = []
            if let untrusted = X509_STORE_CTX_get0_untrusted(store) {
                for i in 0..<pp_sk_X509_num(untrusted) {
                    if let x = pp_sk_X509_value(untrusted, i) { chain.append(Certificate(borrowing: x)) }
                }
            }
            if chain.isEmpty, let leaf = X509_STORE_CTX_get0_cert(store) { chain = [Certificate(borrowing: leaf)] }
            if decision.judge(chain) { return 1 }
            // bad_certificate: what a client that refuses the certificate it was shown sends.
            X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
            return 0
        }, retained.toOpaque())
        if !alpn.isEmpty {
            var wire: [UInt8] = []
            for name in alpn { wire.append(UInt8(name.utf8.count)); wire += Array(name.utf8) }
            _ = SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count))
        }
    }

    deinit {
        SSL_CTX_free(pointer)
        verifier?.release()
    }
}

/// What a client context asks about a presented chain during the handshake.
final class ChainDecision: @unchecked Sendable {
    // Sendable: called on the connecting thread only, inside SSL_connect.
    private let body: ([Certificate]) -> Bool
    /// The chain as the server presented it, leaf first, once seen.
    private(set) var presented: [Certificate] = []
    /// Whether the handshake was refused by the decision (not by the network or the peer).
    private(set) var refused = false

    init(_ body: @escaping ([Certificate]) -> Bool) { self.body = body }

    func judge(_ chain: [Certificate]) -> Bool {
        presented = chain
        let accepted = body(chain)
        refused = !accepted
        return accepted
    }
}

/// One TLS connection over a blocking ``LoopbackSocket``, owning its `SSL`.
final class TLSStream: @unchecked Sendable {
    // Sendable: used by one thread at a time.
    private let ssl: OpaquePointer
    let socket: LoopbackSocket
    private let context: HarnessTLSContext

    init(context: HarnessTLSContext, socket: LoopbackSocket) throws {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else { throw OpenSSL.error("SSL_new failed", code: .connect) }
        self.ssl = ssl
        self.socket = socket
        self.context = context
        guard SSL_set_fd(ssl, socket.fd) == 1 else { throw OpenSSL.error("SSL_set_fd failed", code: .connect) }
    }

    deinit { SSL_free(ssl) }

    /// The client handshake with `serverName` as SNI; throws with OpenSSL's reason.
    func connect(serverName: String) throws {
        ERR_clear_error()
        if case .dns(let name)? = try? HostName(validating: serverName) { _ = pp_SSL_set_tlsext_host_name(ssl, name) }
        let rc = SSL_connect(ssl)
        guard rc == 1 else { throw failure(rc, during: "the TLS handshake") }
    }

    /// The server handshake.
    func accept() throws {
        ERR_clear_error()
        let rc = SSL_accept(ssl)
        guard rc == 1 else { throw failure(rc, during: "the TLS handshake") }
    }

    /// The negotiated ALPN protocol, if any.
    var alpn: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The negotiated protocol version ("TLSv1.3").
    var version: String { String(cString: SSL_get_version(ssl)) }

    func write(_ bytes: [UInt8]) throws {
        ERR_clear_error()
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw failure(n, during: "writing") }
            offset += Int(n)
        }
    }

    /// Up to `max` bytes; empty at the end of the stream.
    func read(max: Int = 16_384) throws -> [UInt8] {
        ERR_clear_error()
        var buffer = [UInt8](repeating: 0, count: max)
        let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(max)) }
        if n > 0 { return Array(buffer.prefix(Int(n))) }
        let code = SSL_get_error(ssl, n)
        if code == SSL_ERROR_ZERO_RETURN || (code == SSL_ERROR_SYSCALL && errno == 0) { return [] }
        throw failure(n, during: "reading")
    }

    /// Reads until the peer closes (at most `limit` bytes).
    func readToEnd(limit: Int = 1 << 20) throws -> [UInt8] {
        var all: [UInt8] = []
        while all.count < limit {
            let chunk = try read()
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    /// Sends close_notify (once; the peer's answer is not awaited).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func failure(_ rc: Int32, during what: String) -> PinproxyError {
        let saved = errno
        let code = SSL_get_error(ssl, rc)
        let errors = OpenSSL.drainErrors()
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return PinproxyError(.connect, "timed out during \(what)")
        case SSL_ERROR_SYSCALL where saved == EAGAIN || saved == EWOULDBLOCK:
            return PinproxyError(.connect, "timed out during \(what)")
        case SSL_ERROR_SYSCALL, SSL_ERROR_ZERO_RETURN:
            return PinproxyError(.connect, "the peer closed the connection during \(what)")
        default:
            let detail = errors.last.map { ": \($0)" } ?? ""
            return PinproxyError(.connect, "\(what) failed\(detail)", openSSLErrors: errors)
        }
    }
}
