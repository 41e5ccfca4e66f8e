internal import CPinproxyShims

/// The OpenSSL security level curl verifies at: the one a new client `SSL_CTX` gets from the
/// libssl on this machine, as curl keeps it unless `--ciphers` names one. Upstream OpenSSL 3
/// defaults to 1 (80 bits of security: RSA 1024, SHA-1 refused); Debian and Ubuntu build it with
/// 2 (112 bits: RSA under 2048 and P-192 refused too), and openssl.cnf can change it. Real curl
/// 7.88.1 on Debian 12 answers "EE certificate key too weak" for an RSA-1024 leaf.
enum CurlSecurityLevel {
    static let current: Int = {
        let level = Int(pp_ssl_default_security_level())
        return level >= 0 ? level : 1
    }()

    /// The bits of security the level wants (OpenSSL's `ssl_security_default_callback`).
    static var bits: Int {
        switch current {
        case ...0: return 0
        case 1: return 80
        case 2: return 112
        case 3: return 128
        case 4: return 192
        default: return 256
        }
    }
}
