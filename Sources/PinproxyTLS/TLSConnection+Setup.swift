internal import COpenSSL
internal import CPinproxyShims
import PinproxyCertificates

/// Setting up a session before its handshake: the name a client expects, and
/// the server side's pause at the ClientHello while the proxy picks a
/// certificate (or refuses).
extension TLSConnection {
    // MARK: - Client side setup

    /// Sets the SNI sent upstream (DNS names only, as RFC 6066 requires) and,
    /// unless the context is insecure, the name the certificate must match.
    /// `alpn`, when given, replaces the context's ALPN offer for this connection.
    public func configureClient(serverName: HostName, alpn: [String]? = nil) throws {
        precondition(!isServer)
        ERR_clear_error()
        if let alpn {
            let wire = TLSContext.alpnWireFormat(alpn)
            // SSL_set_alpn_protos returns 0 on success.
            guard wire.withUnsafeBufferPointer({ SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }) == 0 else {
                throw OpenSSL.error("cannot set the ALPN offer")
            }
        }
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

    fileprivate func extensionBytes(_ type: Int32) -> [UInt8]? {
        var data: UnsafePointer<UInt8>? = nil
        var length = 0
        guard SSL_client_hello_get0_ext(ssl, UInt32(type), &data, &length) == 1, let data else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    fileprivate func parseClientHello() -> ClientHello {
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
            // A wildcard is a certificate pattern, not a name to connect to:
            // forging for it would give a leaf valid for every sibling host.
            if let wildcard = name, wildcard.isWildcard {
                name = nil
                problem = "invalid host name \"\(wildcard)\": a server name cannot be a wildcard"
            }
        }
        return ClientHello(serverNameRaw: raw, serverName: name, serverNameProblem: problem, alpn: alpn)
    }

    func selectALPN(out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, outLength: UnsafeMutablePointer<UInt8>?,
                    input: UnsafePointer<UInt8>?, inputLength: UInt32) -> Int32 {
        guard let input, let out, let outLength else { return pp_SSL_TLSEXT_ERR_NOACK() }
        for wanted in applicationProtocols ?? context.alpn {
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

    func noteInfo(kind: Int32, value: Int32) {
        let alert = TLSAlert(code: UInt8(truncatingIfNeeded: value & 0xff), isFatal: (value >> 8) == 2)
        if kind & pp_SSL_CB_READ_ALERT() == pp_SSL_CB_READ_ALERT() {
            if alert.code == 0 { receivedCloseNotify = true } else { receivedAlert = alert }
        } else if kind & pp_SSL_CB_WRITE_ALERT() == pp_SSL_CB_WRITE_ALERT() {
            sentAlert = alert
        }
    }
}
