internal import COpenSSL
internal import CPinproxyShims
import Foundation

/// An ordered list of certificates, leaf first, as a server presents it.
///
/// The order is kept exactly as given (extras and wrong orders included):
/// what a chain *is* and what a verifier *builds* from it are different
/// things, and the pinning harness needs both.
public struct CertificateChain: RandomAccessCollection, Hashable, Sendable, CustomStringConvertible {
    public let certificates: [Certificate]

    public init(_ certificates: [Certificate]) { self.certificates = certificates }

    /// Every certificate of a PEM text, in order.
    public init(pemEncoded pem: String) throws {
        self.init(try Certificate.all(pemEncoded: pem))
    }

    /// A PEM bundle or a single DER certificate from a file.
    public init(contentsOf path: String) throws {
        self.init(try Certificate.load(contentsOf: path))
    }

    public var startIndex: Int { certificates.startIndex }
    public var endIndex: Int { certificates.endIndex }
    public subscript(position: Int) -> Certificate { certificates[position] }

    /// The first certificate, if any.
    public var leaf: Certificate? { certificates.first }

    /// Concatenated PEM blocks.
    public var pemEncoded: String { certificates.map(\.pemEncoded).joined() }

    /// One line per certificate: position, subject, issuer and SPKI pin.
    public var description: String {
        certificates.enumerated().map { i, c in
            "#\(i) \(c.subject) (issuer \(c.issuer)) \(c.spkiPin.okhttp)"
        }.joined(separator: "\n")
    }

    /// A new `STACK_OF(X509)` holding a reference to each certificate; the
    /// caller frees it with ``freeStack(_:)``.
    package func makeStack() throws -> OpaquePointer {
        guard let stack = pp_sk_X509_new_null() else { throw OpenSSL.error("cannot allocate a certificate stack") }
        for certificate in certificates where pp_sk_X509_push_ref(stack, certificate.pointer) != 1 {
            pp_sk_X509_pop_free(stack)
            throw OpenSSL.error("cannot fill a certificate stack")
        }
        return stack
    }

    /// Frees a stack made by ``makeStack()`` and drops its references.
    package static func freeStack(_ stack: OpaquePointer) { pp_sk_X509_pop_free(stack) }

    /// The certificates of an OpenSSL `STACK_OF(X509)`, each with its own reference.
    package init(borrowingStack stack: OpaquePointer?) {
        var out: [Certificate] = []
        for i in 0..<pp_sk_X509_num(stack) {
            if let x = pp_sk_X509_value(stack, i) { out.append(Certificate(borrowing: x)) }
        }
        self.init(out)
    }
}
