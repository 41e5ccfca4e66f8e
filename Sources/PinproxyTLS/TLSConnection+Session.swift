internal import COpenSSL
internal import CPinproxyShims
import PinproxyCertificates

/// What an established session negotiated, and the certificates it saw.
extension TLSConnection {
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

    /// The certificates the peer sent (leaf first), as it sent them; for a
    /// resumed session, those sent in the full handshake that made it.
    public var peerCertificates: [Certificate] {
        if isResumed, let offered = resumption?.offered { return offered.peerChain }
        return ownPeerCertificates
    }

    /// The chain the verifier built from the peer's leaf to a trust anchor
    /// (the anchor included), or as far as it got; empty before verification.
    /// For a resumed session, the chain built in the full handshake that made it.
    public var verifiedChain: [Certificate] {
        if isResumed, let offered = resumption?.offered { return offered.verifiedChain }
        return ownVerifiedChain
    }

    var ownPeerCertificates: [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<pp_sk_X509_num(stack)).compactMap { pp_sk_X509_value(stack, $0).map { Certificate(borrowing: $0) } }
    }

    var ownVerifiedChain: [Certificate] {
        guard let stack = SSL_get0_verified_chain(ssl) else { return [] }
        return (0..<pp_sk_X509_num(stack)).compactMap { pp_sk_X509_value(stack, $0).map { Certificate(borrowing: $0) } }
    }

    /// The peer's leaf certificate.
    public var peerCertificate: Certificate? {
        if isResumed, let offered = resumption?.offered { return offered.peerChain.first }
        return SSL_get1_peer_certificate(ssl).map { Certificate(takingOwnership: $0) }
    }
}
