import Foundation
import PinproxyCertificates

/// One way of serving the client side of an intercepted connection.
///
/// A strategy is a small value: it picks the chain to present from the
/// ``AttackContext`` and keeps nothing itself; what lasts between connections
/// (leaves, generated CAs, fake parents) lives in ``AttackResources``.
public protocol AttackStrategy: Sendable {
    /// What the client is shown, in one line.
    var shows: String { get }
    /// What a client that goes on anyway has wrong, in one short line (help texts list it).
    var catches: String { get }
    /// Whether the connection is intercepted at all (false: tunnelled raw).
    var intercepts: Bool { get }
    /// The chain to present; only called when ``intercepts`` is true.
    func present(_ context: AttackContext) throws -> PresentedChain
    /// Why the strategy cannot run with `configuration`, or nil when it can.
    func unavailability(in configuration: ProxyConfiguration) -> String?
}

extension AttackStrategy {
    public var intercepts: Bool { true }
    public func unavailability(in configuration: ProxyConfiguration) -> String? { nil }
}

/// What an attack needs to decide what to show the client.
public struct AttackContext: Sendable {
    /// The host the client asked for (SNI, else the CONNECT host).
    public var host: HostName
    /// The chain the upstream presented (leaf first); empty when the upstream failed.
    public var upstreamChain: [Certificate]
    /// The genuine chain from the leaf to the anchor the proxy's verifier
    /// reached (so the root is in it, though servers seldom send it); the
    /// presented chain when that is all there is.
    public var genuineChain: [Certificate]
    /// The proxy CA, the leaf cache and the other CAs and keys attacks draw on.
    public var resources: AttackResources

    public init(host: HostName, upstreamChain: [Certificate], genuineChain: [Certificate]? = nil, resources: AttackResources) {
        self.host = host
        self.upstreamChain = upstreamChain
        self.genuineChain = genuineChain.flatMap { built in
            // Only a path that starts at the presented leaf describes this server.
            built.first != nil && built.first == upstreamChain.first ? built : nil
        } ?? upstreamChain
        self.resources = resources
    }

    /// The genuine server certificate, when the upstream answered.
    public var genuineLeaf: Certificate? { upstreamChain.first }
    /// Forged leaves, cached.
    public var leaves: LeafCache { resources.leaves }
    /// The proxy's CA.
    public var authority: CertificateAuthority { resources.authority }

    /// The request for a leaf for the host that imitates the genuine names.
    var imitatingRequest: LeafRequest { LeafRequest(names: [host], imitating: genuineLeaf) }

    /// The cache key of `profile`'s leaf for this host and genuine leaf.
    func cacheKey(_ profile: AttackProfile, names: [HostName]? = nil, context: [UInt8]? = nil) -> LeafCacheKey {
        LeafCacheKey(names: names ?? [host], imitated: genuineLeaf?.sha256Fingerprint, variant: profile.name, context: context)
    }
}

/// The certificate, key and chain a client is shown.
public struct PresentedChain: Sendable {
    public var certificate: Certificate
    public var privateKey: PrivateKey
    /// Certificates sent after the leaf.
    public var chain: [Certificate]

    public init(certificate: Certificate, privateKey: PrivateKey, chain: [Certificate]) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.chain = chain
    }

    /// A forged leaf as it is presented: the leaf, then the rest of its chain.
    public init(_ leaf: ForgedLeaf) {
        self.init(certificate: leaf.certificate, privateKey: leaf.privateKey, chain: Array(leaf.chain.dropFirst()))
    }

    /// Every certificate sent, leaf first.
    public var all: [Certificate] { [certificate] + chain }
}
