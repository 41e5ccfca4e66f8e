internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

/// Where an upstream client context takes its trust from.
public enum UpstreamTrust: Sendable, Equatable {
    /// The operating system's trust store (OpenSSL's default verify paths).
    case system
    /// Only the certificates in this PEM file.
    case file(String)
    /// No verification at all: an explicit opt-out for tests against broken origins.
    case insecure
}

/// A client certificate (PEM, leaf first, chain after) and its key, for
/// upstreams that require mutual TLS. The key may sit in the certificate file.
public struct ClientCertificateFiles: Sendable, Equatable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String? = nil) {
        self.certificate = certificate
        self.key = key ?? certificate
    }
}

/// Owns one OpenSSL `SSL_CTX`, configured either to serve clients (the
/// intercepting side) or to connect to origins (the upstream side).
///
/// Both sides allow TLS 1.2 and 1.3 only, disable compression and
/// renegotiation, and set `SSL_OP_IGNORE_UNEXPECTED_EOF`: clients such as curl
/// routinely close without close_notify, which OpenSSL 3 otherwise reports
/// as an error; here it reads as an orderly end of stream.
public final class TLSContext: @unchecked Sendable {
    // Sendable: the SSL_CTX is configured once in init and only read afterwards;
    // OpenSSL synchronises SSL_new on a shared context internally.
    package let pointer: OpaquePointer
    public let isServer: Bool
    public let trust: UpstreamTrust
    /// ALPN protocols offered (client) or accepted (server), most preferred first.
    public let alpn: [String]
    /// (Client side) sessions kept for resuming upstreams; nil when resumption is off.
    let sessionCache: TLSSessionCache?
    /// (Client side) the decision that replaces verification, owned by the context for its
    /// verify callback; released in deinit.
    private let decision: Unmanaged<TLSChainDecision>?

    /// A server context that serves certificates chosen per connection.
    ///
    /// The ClientHello pauses every handshake (see ``TLSHandshakeResult/clientHello(_:)``)
    /// so the proxy can look upstream before it picks the certificate.
    public static func server(alpn: [String] = ["http/1.1"]) throws -> TLSContext {
        try TLSContext(server: true, trust: .insecure, alpn: alpn)
    }

    /// A client context for upstream connections, verifying per `trust`,
    /// presenting `clientCertificate` to servers that ask for one.
    /// With `resumption`, sessions are cached per upstream and offered again
    /// (see ``TLSConnection/offerSession(address:port:serverName:)``).
    /// `verificationTime` verifies chains as at that instant instead of now: the harness's
    /// `check --at` runs a world whose certificates are valid around another date.
    public static func client(trust: UpstreamTrust, clientCertificate: ClientCertificateFiles? = nil,
                              alpn: [String] = ["http/1.1"], resumption: Bool = true,
                              verificationTime: Date? = nil) throws -> TLSContext {
        let context = try TLSContext(server: false, trust: trust, clientCertificate: clientCertificate, alpn: alpn, resumption: resumption)
        if let verificationTime, let parameters = SSL_CTX_get0_param(context.pointer) {
            X509_VERIFY_PARAM_set_time(parameters, time_t(verificationTime.timeIntervalSince1970.rounded(.down)))
        }
        return context
    }

    /// A server context that presents `chain` (leaf first) with `key` to every client, without
    /// pausing at the ClientHello, choosing the first of `alpn` the client offers: a plain
    /// HTTPS server such as the harness's origin.
    public static func server(presenting chain: [Certificate], key: PrivateKey, alpn: [String] = ["http/1.1"]) throws -> TLSContext {
        try TLSContext(server: true, trust: .insecure, alpn: alpn, presenting: (chain, key))
    }

    /// A client context that offers `alpn` and hands the presented chain to `decision` inside
    /// the handshake instead of verifying it (its ``trust`` reads `insecure`: OpenSSL checks
    /// nothing itself). No session is resumed: every handshake shows a certificate to judge.
    public static func client(alpn: [String], decision: TLSChainDecision) throws -> TLSContext {
        try TLSContext(server: false, trust: .insecure, alpn: alpn, decision: decision)
    }

    private init(server: Bool, trust: UpstreamTrust, clientCertificate: ClientCertificateFiles? = nil, alpn: [String],
                 resumption: Bool = false, presenting: (chain: [Certificate], key: PrivateKey)? = nil,
                 decision: TLSChainDecision? = nil) throws {
        ERR_clear_error()
        guard let method = server ? TLS_server_method() : TLS_client_method(),
              let ctx = SSL_CTX_new(method) else { throw OpenSSL.error("SSL_CTX_new failed") }
        self.pointer = ctx
        self.isServer = server
        self.trust = trust
        self.alpn = alpn
        self.sessionCache = !server && resumption ? TLSSessionCache() : nil
        self.decision = decision.map { Unmanaged.passRetained($0) }
        _ = pp_SSL_CTX_set_min_proto_version(ctx, pp_TLS1_2_VERSION())
        _ = pp_SSL_CTX_set_options(ctx, pp_SSL_OP_NO_COMPRESSION() | pp_SSL_OP_NO_RENEGOTIATION() | pp_SSL_OP_IGNORE_UNEXPECTED_EOF())
        // No SSL_MODE_RELEASE_BUFFERS: it frees and re-allocates (zeroed)
        // the 17 KiB record buffers around every read and write, about ten
        // allocations per proxied request. Idle connections give their
        // buffers back through TLSConnection.releaseBuffers() instead.
        _ = pp_SSL_CTX_set_mode(ctx, pp_SSL_MODE_ENABLE_PARTIAL_WRITE() | pp_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER())
        if KeyLogFile.shared != nil {
            SSL_CTX_set_keylog_callback(ctx) { _, line in
                if let line { KeyLogFile.shared?.append(line: String(cString: line)) }
            }
        }
        if server {
            _ = pp_SSL_CTX_set_session_cache_mode(ctx, pp_SSL_SESS_CACHE_OFF())
            // No TLS 1.3 session tickets: a resumed session shows no
            // certificate, so a client could skip the very check the proxy is
            // there to exercise; and each ticket costs an encryption per
            // handshake and memory the connection never uses.
            _ = SSL_CTX_set_num_tickets(ctx, 0)
            // Nor TLS 1.2 tickets, issued with the session cache off too.
            _ = pp_SSL_CTX_set_options(ctx, pp_SSL_OP_NO_TICKET())
            if let presenting {
                try TLSContext.present(ctx, chain: presenting.chain, key: presenting.key)
            } else {
                SSL_CTX_set_client_hello_cb(ctx, { ssl, alert, _ in
                    guard let ssl, let connection = TLSConnection.owner(of: ssl) else { return pp_SSL_CLIENT_HELLO_ERROR() }
                    return connection.clientHelloCallback(alert: alert)
                }, nil)
            }
            SSL_CTX_set_alpn_select_cb(ctx, { ssl, out, outLength, input, inputLength, _ in
                guard let ssl, let connection = TLSConnection.owner(of: ssl) else { return pp_SSL_TLSEXT_ERR_NOACK() }
                return connection.selectALPN(out: out, outLength: outLength, input: input, inputLength: inputLength)
            }, nil)
        } else {
            if sessionCache != nil {
                TLSConnection.enableClientSessions(ctx)
            } else {
                _ = pp_SSL_CTX_set_session_cache_mode(ctx, pp_SSL_SESS_CACHE_OFF())
            }
            if let clientCertificate {
                try TLSContext.useClientCertificate(ctx, clientCertificate)
            } else {
                // Called only when the server asks for a certificate and none
                // is configured: noted so a refusal can be explained.
                SSL_CTX_set_client_cert_cb(ctx) { ssl, _, _ in
                    if let ssl, let connection = TLSConnection.owner(of: ssl) { connection.noteClientCertificateRequest() }
                    return 0
                }
            }
            switch trust {
            case .system:
                try OpenSSL.check(SSL_CTX_set_default_verify_paths(ctx), "cannot load the system trust store")
                SSL_CTX_set_verify(ctx, pp_SSL_VERIFY_PEER(), nil)
            case .file(let path):
                // The context is freed by deinit alone: it runs for a throw
                // from here, since every stored property is set by now.
                try TLSContext.loadVerifyLocations(ctx, path: path)
                SSL_CTX_set_verify(ctx, pp_SSL_VERIFY_PEER(), nil)
            case .insecure:
                SSL_CTX_set_verify(ctx, pp_SSL_VERIFY_NONE(), nil)
            }
            if let decision = self.decision {
                SSL_CTX_set_verify(ctx, pp_SSL_VERIFY_PEER(), nil)
                SSL_CTX_set_cert_verify_callback(ctx, TLSContext.verifyByDecision, decision.toOpaque())
            }
            if !alpn.isEmpty {
                let wire = TLSContext.alpnWireFormat(alpn)
                _ = wire.withUnsafeBufferPointer { SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }
            }
        }
    }

    deinit {
        SSL_CTX_free(pointer)
        decision?.release()
    }

    /// Replaces OpenSSL's chain verification: the chain as the server sent it goes to the
    /// context's ``TLSChainDecision``; a refusal fails verification with "certificate
    /// rejected", which OpenSSL answers with a `bad_certificate` alert.
    private static let verifyByDecision: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { store, argument in
        guard let store, let argument else { return 0 }
        let decision = Unmanaged<TLSChainDecision>.fromOpaque(argument).takeUnretainedValue()
        var chain: [Certificate] = []
        if let untrusted = X509_STORE_CTX_get0_untrusted(store) {
            chain = (0..<pp_sk_X509_num(untrusted)).compactMap { pp_sk_X509_value(untrusted, $0).map { Certificate(borrowing: $0) } }
        }
        if chain.isEmpty, let leaf = X509_STORE_CTX_get0_cert(store) { chain = [Certificate(borrowing: leaf)] }
        if decision.judge(chain) { return 1 }
        X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
        return 0
    }

    /// Presents `chain` with `key` from every connection of the server context `ctx`.
    private static func present(_ ctx: OpaquePointer, chain: [Certificate], key: PrivateKey) throws {
        guard let leaf = chain.first else { throw PinproxyError(.invalidArgument, "there is no certificate to present") }
        ERR_clear_error()
        guard SSL_CTX_use_certificate(ctx, leaf.pointer) == 1, SSL_CTX_use_PrivateKey(ctx, key.pointer) == 1,
              SSL_CTX_check_private_key(ctx) == 1 else {
            throw OpenSSL.error("the key does not belong to the certificate \(leaf.subject)", code: .keyMismatch)
        }
        // SSL_CTX_add1_chain_cert is a macro over this control call.
        for certificate in chain.dropFirst() where SSL_CTX_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer(certificate.pointer)) != 1 {
            throw OpenSSL.error("cannot add \(certificate.subject) to the chain")
        }
    }

    private static func useClientCertificate(_ ctx: OpaquePointer, _ files: ClientCertificateFiles) throws {
        func fail(_ what: String, _ path: String) -> PinproxyError {
            let detail = OpenSSL.drainErrors().last.map { " (\($0))" } ?? ""
            return PinproxyError(.io, "cannot read the upstream client \(what) \(path)\(detail)")
        }
        for (what, path) in [("certificate", files.certificate), ("key", files.key)] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw PinproxyError(.io, "cannot read the upstream client \(what) \(path): no such file")
            }
        }
        ERR_clear_error()
        guard SSL_CTX_use_certificate_chain_file(ctx, files.certificate) == 1 else { throw fail("certificate", files.certificate) }
        guard SSL_CTX_use_PrivateKey_file(ctx, files.key, SSL_FILETYPE_PEM) == 1 else { throw fail("key", files.key) }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            throw PinproxyError(.io, "the upstream client key \(files.key) does not match the certificate \(files.certificate)")
        }
    }

    /// Loads the PEM CA certificates in `path`, failing with one sentence
    /// that names the file and what is wrong with it.
    private static func loadVerifyLocations(_ ctx: OpaquePointer, path: String) throws {
        func fail(_ why: String) -> PinproxyError {
            ERR_clear_error()
            return PinproxyError(.io, "cannot read the upstream CA file \(path): \(why)")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw fail("no such file") }
        if isDirectory.boolValue { throw fail("it is a directory") }
        let type = (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType
        guard type == .typeRegular else { throw fail("not a regular file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw fail("permission denied") }
        if data.isEmpty { throw fail("the file is empty") }
        guard String(decoding: data, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw fail("no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
        }
        ERR_clear_error()
        guard SSL_CTX_load_verify_locations(ctx, path, nil) == 1 else {
            let detail = OpenSSL.drainErrors().last ?? "OpenSSL could not parse it"
            throw fail("not valid PEM certificates (\(detail))")
        }
    }

    static func alpnWireFormat(_ protocols: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for p in protocols where !p.isEmpty && p.utf8.count < 256 {
            out.append(UInt8(p.utf8.count))
            out += p.utf8
        }
        return out
    }
}

/// Appends NSS key log lines to the file named by `SSLKEYLOGFILE`, for Wireshark.
final class KeyLogFile: Sendable {
    static let shared: KeyLogFile? = {
        guard let path = ProcessInfo.processInfo.environment["SSLKEYLOGFILE"], !path.isEmpty else { return nil }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        return KeyLogFile(fd: fd)
    }()

    private let fd: Int32
    private let lock = Locked(())

    private init(fd: Int32) { self.fd = fd }

    func append(line: String) {
        let bytes = Array((line + "\n").utf8)
        lock.withLock { _ in
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }
}
