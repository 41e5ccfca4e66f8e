internal import COpenSSL
internal import CPinproxyShims
import Foundation
import PinproxyCertificates

extension TLSFailure {
    /// The failure behind a failed `SSL_*` call whose `SSL_get_error` was
    /// `error`, read from OpenSSL's error queue (which it drains) and from
    /// what the connection knows; nil when the "failure" is just the peer
    /// going away (end of input, EOF without close_notify).
    ///
    /// `verifyResult` is a client's certificate verification result (nil on
    /// the server side; reading it leaves errno and the queue alone); a
    /// fatal `receivedAlert` and a `rejectionReason` (the proxy refused the
    /// ClientHello) say more than OpenSSL's reason code.
    static func classifying(_ error: Int32, endOfInput: Bool, verifyResult: Int?,
                            receivedAlert: TLSAlert?, rejectionReason: String?) -> TLSFailure? {
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
        if let verify = verifyResult, verify != X509_V_OK {
            let text = String(cString: X509_verify_cert_error_string(verify))
            return TLSFailure(kind: .verificationFailed, reason: "certificate verify failed: \(text)",
                              receivedAlert: receivedAlert, verificationError: text, openSSLErrors: errors)
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
}
