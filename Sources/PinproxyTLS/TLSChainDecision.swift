import PinproxyCertificates

/// A client's own judgement of the chain a server presents, taken inside the handshake in
/// place of OpenSSL's verification: what NSURLSession's server-trust challenge or a Java
/// trust manager does. A refusal aborts the handshake with `bad_certificate`, as a client
/// that refuses the certificate it was shown does. Used through
/// ``TLSContext/client(alpn:decision:)``.
public final class TLSChainDecision: @unchecked Sendable {
    // Sendable: judged inside the handshake and read after it, by the one thread driving
    // the connection (OpenSSL calls the verify callback synchronously).
    private let body: ([Certificate]) -> Bool
    /// The chain as the server presented it, leaf first, once seen.
    public private(set) var presented: [Certificate] = []
    /// Whether the decision refused the chain (rather than the network or the peer ending the handshake).
    public private(set) var refused = false

    /// `body` gets the presented chain, leaf first, and returns whether the client goes on.
    public init(_ body: @escaping ([Certificate]) -> Bool) { self.body = body }

    func judge(_ chain: [Certificate]) -> Bool {
        presented = chain
        let accepted = body(chain)
        refused = !accepted
        return accepted
    }
}
