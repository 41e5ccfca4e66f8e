import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Everything a ``ProxyServer`` needs to know before it starts.
public struct ProxyConfiguration: Sendable {
    /// How clients reach the proxy.
    public enum Mode: Sendable, Equatable {
        /// An explicit HTTP proxy: absolute-form `http://` requests and CONNECT.
        case forward
        /// A TLS server in front of one origin, for clients that cannot use a proxy.
        case reverse(scheme: String, host: HostName, port: Int)

        /// Parses `forward` or `reverse:https://HOST:PORT` (`http://` upstreams too).
        public init(parsing text: String) throws {
            if text == "forward" || text == "regular" { self = .forward; return }
            guard text.hasPrefix("reverse:"), let url = URLComponents(string: String(text.dropFirst(8))),
                  let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
                  let host = url.host, !host.isEmpty else {
                throw PinproxyError(.invalidArgument, "invalid mode '\(text)': use forward, reverse:https://HOST:PORT, or reverse:http://HOST:PORT (TLS to clients in front of a plain-HTTP origin)")
            }
            let name = try HostName(validating: host)
            let port = url.port ?? (scheme == "https" ? 443 : 80)
            guard (1...65535).contains(port) else { throw PinproxyError(.invalidArgument, "invalid port in '\(text)'") }
            self = .reverse(scheme: scheme, host: name, port: port)
        }
    }

    /// Time limits, in seconds.
    public struct Timeouts: Sendable {
        /// The client's TLS handshake.
        public var handshake: TimeInterval = 10
        /// From the first byte of a request head to its end (slow-loris guard).
        public var requestHeaders: TimeInterval = 15
        /// Between requests on a kept-alive connection (and before the first).
        public var idle: TimeInterval = 60
        /// Connecting (TCP) to the upstream.
        public var upstreamConnect: TimeInterval = 10
        /// The TLS handshake with the upstream, once connected. The client's
        /// handshake timeout does not run meanwhile: the wait is the upstream's.
        public var upstreamHandshake: TimeInterval = 10
        /// A raw tunnel (passthrough, CONNECT without TLS) with no bytes
        /// either way: it holds two descriptors, and nothing else ends it.
        public var tunnelIdle: TimeInterval = 300
        /// Waiting for an upstream response head or body bytes.
        public var upstreamResponse: TimeInterval = 60
        /// How long an idle upstream keep-alive connection is kept for the
        /// next client connection to the same upstream (see `IdleUpstreamPool`);
        /// 0 keeps none: every client connection opens its own. Why 30 s:
        /// docs/proxy.md, "Upstream first".
        public var idleUpstream: TimeInterval = 30
        /// How long a client connection that sends no request keeps its own
        /// upstream connection; then the upstream goes to the idle pool (or
        /// closes: HTTP/2, not verified, no pool) and the next request takes
        /// or opens one. An idle client then holds no upstream TLS state
        /// (docs/proxy.md, "Idle connections"). 0 releases it as soon as an
        /// exchange ends; a value at or over ``idle`` keeps it as long as the client stays.
        public var upstreamHold: TimeInterval = 3
        /// After a stop, how long in-flight exchanges may finish.
        public var drain: TimeInterval = 3
        public init() {}
    }

    public var listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080)
    /// Must be true to listen on a non-loopback address.
    public var allowRemote = false
    public var mode: Mode = .forward
    public var upstreamTrust: UpstreamTrust = .system
    /// Upstream names connected to at a fixed numeric address instead of being
    /// resolved, as curl's `--resolve` does; the port stays the client's. The
    /// pinning harness routes its world's host to its loopback origin this way.
    /// A reference: `PUT /resolve` changes it while the proxy runs.
    public let upstreamAddresses = UpstreamAddresses()
    /// Reverse mode: send the client's `Host` to the origin unchanged instead
    /// of the origin's own authority.
    public var keepHostHeader = false
    /// Presented to upstreams that ask for a client certificate (mutual TLS).
    public var upstreamClientCertificate: ClientCertificateFiles?
    public var rules = InterceptionRules()
    public var catalog = AttackCatalog.standard
    /// The second CA of the `misissued` profile (`--misissuing-ca`): one the
    /// device under test trusts as if it were public. Without it that profile
    /// is refused.
    public var misissuingAuthority: CertificateAuthority?
    /// The CAs a team owns for its staging or test origins (`serve --rotation-ca`): the first
    /// issues the `rotate-rekey` and `rotate-new-intermediate` leaves, a second the
    /// `rotate-ca-switch` ones. Empty: those profiles are refused.
    public var rotationAuthorities: [CertificateAuthority] = []
    /// The CA of the `untrusted-ca` profile; nil: one is generated in memory
    /// when first needed and kept for the proxy's life.
    public var untrustedAuthority: CertificateAuthority?
    /// `user:pass` clients must send in `Proxy-Authorization: Basic`.
    public var proxyAuthentication: String?
    public var timeouts = Timeouts()
    /// Bytes of each request and response body kept in flows; 0 keeps none.
    public var bodyCaptureLimit = 0
    /// Whether intercepted connections may speak HTTP/2 (`serve --http2`, on
    /// by default): a TLS upstream is offered `h2` when the client offered
    /// it, and the client gets `h2` when the upstream chose it, or when the
    /// upstream speaks HTTP/1.1 and the client could not (streams are then
    /// translated; see `ClientProtocolChoice`). Off: HTTP/1.1 only.
    public var http2 = true
    /// Whether a TLS upstream is offered `h2` (`serve --upstream-http2`, on by default). Off, it
    /// is offered `http/1.1` only, as HAProxy and nginx do by default, and a client that
    /// speaks HTTP/2 with the proxy has its streams translated; an upstream that refuses
    /// HTTP/1.1 is still reached over HTTP/2. Meaningful only with ``http2`` on.
    public var upstreamHTTP2 = true
    /// Event loop threads serving proxied connections; nil: half the cores,
    /// at least one (the client and often the origin run on the same machine
    /// in most test runs; see `EventLoops.defaultCount`).
    public var eventLoops: Int?
    /// The instant every leaf is forged at and every upstream chain verified at, instead of
    /// the clock: `pinproxy check --at` evaluates a policy on another date, and its
    /// in-process proxy must show chains valid around that date. Nil (`serve`): the real time.
    public var fixedTime: Date?
    /// The number of event loops when ``eventLoops`` is nil.
    public static var defaultEventLoops: Int { EventLoops.defaultCount }

    public init() {}

    /// Checks combinations that are refused.
    public func validate() throws {
        if !listen.isLoopback && !allowRemote {
            throw PinproxyError(.invalidArgument, "refusing to listen on \(listen): it is not a loopback address; pass --allow-remote to accept connections from other machines")
        }
        if let auth = proxyAuthentication, !auth.contains(":") {
            throw PinproxyError(.invalidArgument, "--proxy-auth must be user:pass")
        }
        if let loops = eventLoops, !(1...256).contains(loops) {
            throw PinproxyError(.invalidArgument, "--loops must be 1–256, not \(loops)")
        }
        try rules.validate(for: self)
    }
}
