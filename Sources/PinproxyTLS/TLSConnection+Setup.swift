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
        ClientHelloReader.clientHello(serverNameExtension: extensionBytes(TLSEXT_TYPE_server_name),
                                      alpnExtension: extensionBytes(TLSEXT_TYPE_application_layer_protocol_negotiation))
    }

    func selectALPN(out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, outLength: UnsafeMutablePointer<UInt8>?,
                    input: UnsafePointer<UInt8>?, inputLength: UInt32) -> Int32 {
        guard let input, let out, let outLength,
              let chosen = ClientHelloReader.select(from: applicationProtocols ?? context.alpn,
                                                    offered: UnsafeBufferPointer(start: input, count: Int(inputLength)))
        else { return pp_SSL_TLSEXT_ERR_NOACK() }
        out.pointee = input + chosen.lowerBound
        outLength.pointee = UInt8(chosen.count)
        return pp_SSL_TLSEXT_ERR_OK()
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
