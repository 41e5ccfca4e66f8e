/// One layer of a client connection: CONNECT, TLS interception, HTTP/1
/// exchanges or a raw tunnel.
///
/// The client connection owns the sockets and sets their callbacks once; it
/// hands every event to its current layer, which owns its own state and
/// timers and answers through its ``LayerHost``: sending, opening (and handing back) an
/// upstream, making another layer current, finishing. Every call comes on
/// the connection's queue.
protocol ConnectionLayer: AnyObject {
    /// Bytes from the client (plain, or decrypted).
    func clientData(_ bytes: ArraySlice<UInt8>)
    /// The client will send nothing more.
    func clientEnded(_ end: TransportEnd)
    /// The client's pending output fell back under the congestion bound.
    func clientDrained()
    /// An event of an upstream this layer (or one before it) opened.
    func upstream(_ upstream: Upstream, _ event: UpstreamEvent)
    /// Shutdown: stop taking new work; finish now when idle.
    func drain()
    /// Forced shutdown: record what is in flight; the connection closes next.
    func interrupt()
    /// The connection is finishing: close upstreams, stop timers.
    func close()
}

/// What a layer asks of the client connection that carries it.
protocol LayerHost: AnyObject {
    /// The client's connection.
    var client: any ClientSide { get }
    /// Opens an upstream connection whose events come to the current layer;
    /// `alpn` replaces the upstream TLS context's offer. `mayTakeIdle`: an
    /// idle connection kept for `target` (``IdleUpstreamPool``) may serve
    /// instead; not for a request sent again because a reused one closed
    /// (``UpstreamReplay``), as the other idle ones may be as stale.
    func openUpstream(_ target: UpstreamTarget, alpn: [String]?, mayTakeIdle: Bool) throws(UpstreamFailure) -> Upstream
    /// Opens a leg to `target` for HTTP/1.1 requests (reusing an idle
    /// connection when one is kept); its events come to the current layer,
    /// which hands them to the leg. `via`: requests carry the proxy's `Via`.
    /// Throws when the connection cannot be started, or `target` refused this
    /// client connection before (``upstreamRefused(_:reason:)``).
    func openLeg(_ target: UpstreamTarget, for owner: any UpstreamLegOwner, via: Bool) throws(UpstreamFailure) -> any UpstreamLeg
    /// A leg over `upstream`, opened (and ready) before the layer that uses
    /// it; `early`: what the upstream sent meanwhile.
    func adoptLeg(_ upstream: Upstream, early: [UInt8], for owner: any UpstreamLegOwner, via: Bool) -> any UpstreamLeg
    /// `target` refused with a fatal alert (a required client certificate):
    /// every later request of this client connection to it gets a 502 with `reason`.
    func upstreamRefused(_ target: UpstreamTarget, reason: String)
    /// Hands back an upstream whose last exchange is complete (request sent,
    /// response read, kept alive), or one this client connection sent nothing
    /// on: it may serve another client connection.
    func releaseUpstream(_ upstream: Upstream)
    /// Makes `next` the current layer: every event from now on goes to it.
    func switchLayer(to next: any ConnectionLayer)
    /// Ends the connection: the current layer is closed, the client closed after its output.
    func finish()
}

extension LayerHost {
    /// Opens an upstream connection, or takes an idle one kept for `target`.
    func openUpstream(_ target: UpstreamTarget, alpn: [String]?) throws(UpstreamFailure) -> Upstream {
        try openUpstream(target, alpn: alpn, mayTakeIdle: true)
    }

    /// Opens an HTTP/1.1 upstream connection (the TLS context's ALPN offer).
    func openUpstream(_ target: UpstreamTarget) throws(UpstreamFailure) -> Upstream {
        try openUpstream(target, alpn: nil)
    }
}
