import Foundation
import PinproxyCertificates

/// OkHttp's `BasicCertificateChainCleaner` (okhttp3.internal.tls, 3.13.1): the chain its
/// `CertificatePinner` checks on the JVM, where the client was given an `X509TrustManager`
/// (`Platform.buildCertificateChainCleaner`). It rebuilds the chain on its own, after the
/// trust manager accepted the handshake, and it is not the path the trust manager validated:
///
/// - from the last certificate so far, a trusted certificate that signed it (the trust root
///   index: anchors by subject, the first whose key verifies the signature) is appended; a
///   self-signed one ends the chain, any other is noted as found and the search goes on;
/// - otherwise the FIRST presented certificate (in the order sent) whose subject is the issuer
///   name and whose key verifies the signature is appended and taken out of the queue;
/// - with no signer left, the chain ends if a trusted certificate was found, else the pinner
///   fails ("Failed to find a trusted cert that signed ...");
/// - at most 9 signers (`MAX_SIGNERS`, "for consistency with OpenSSL").
///
/// Validity plays no part: an expired intermediate presented before its valid twin is taken,
/// and the chain ends at the root that signed it.
enum BasicCertificateChainCleaner {
    static let maximumSigners = 9

    /// The cleaned chain, or why OkHttp throws `SSLPeerUnverifiedException`.
    static func clean(_ presented: [Certificate], trustedCertificates: [Certificate]) -> Result<[Certificate], CleaningFailure> {
        guard let first = presented.first else { return .failure(CleaningFailure(reason: "no certificate was presented")) }
        var queue = Array(presented.dropFirst())
        var result = [first]
        var foundTrustedCertificate = false
        for _ in 0..<maximumSigners {
            let toVerify = result[result.count - 1]
            if let trusted = trustedCertificates.first(where: { toVerify.isSigned(by: $0) }) {
                if result.count > 1 || toVerify != trusted { result.append(trusted) }
                if trusted.isSigned(by: trusted) { return .success(result) }
                foundTrustedCertificate = true
                continue
            }
            if let index = queue.firstIndex(where: { toVerify.isSigned(by: $0) }) {
                result.append(queue.remove(at: index))
                continue
            }
            if foundTrustedCertificate { return .success(result) }
            return .failure(CleaningFailure(reason: "Failed to find a trusted cert that signed \(ChainSummary.name(of: toVerify))"))
        }
        return .failure(CleaningFailure(reason: "Certificate chain too long (\(result.count) certificates)"))
    }

    struct CleaningFailure: Error, Sendable {
        let reason: String
    }
}
