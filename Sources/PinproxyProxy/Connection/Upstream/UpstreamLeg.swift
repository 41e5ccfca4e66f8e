import Foundation
import Logging
import PinproxyHTTP1

/// The upstream side of a client connection's exchanges, whatever protocol
/// the upstream speaks: HTTP/1.1 (``HTTP1Leg``) or HTTP/2 (``HTTP2Leg``, one
/// stream per exchange). An exchange layer hands a leg its requests in
/// HTTP/1.1 form and gets the responses back as ``HTTP1Event``s through its
/// ``UpstreamLegOwner``; it never sees the connection, its parser or its
/// session, so a test drives the layer with a leg in memory.
///
/// One exchange at a time: ``send(_:names:)``, then the body
/// (``sendBody(_:)``) and its end (``endRequest(_:)``), while the response
/// comes as events; the layer says when the exchange is over
/// (``exchangeEnded(upstreamKeepAlive:requestEnded:)``), and the leg answers
/// whether it carries the next one. Every call comes on the connection's queue.
protocol UpstreamLeg: AnyObject {
    var target: UpstreamTarget { get }
    /// The connection, for the flows' TLS details and timings (nil in memory).
    var connection: Upstream? { get }
    /// Whether the next request to `target` may go on this leg.
    func canCarry(_ target: UpstreamTarget) -> Bool
    /// The request waits until the leg knows its protocol: the client's
    /// bytes after it wait too, unread.
    var holdsRequest: Bool { get }
    /// The request body waits on the upstream: stop reading the client.
    var isBackedUp: Bool { get }

    /// Sends a request head (in HTTP/1.1 form, as the client sent it); `names`: the target's.
    func send(_ head: HTTP1RequestHead, names: TargetNames)
    func sendBody(_ bytes: ArraySlice<UInt8>)
    /// The request is complete; `trailers` of a chunked body, else empty.
    func endRequest(_ trailers: HTTPHeaders)
    /// The response went to the client in full (or was cut short); whether
    /// the leg may carry another exchange.
    func exchangeEnded(upstreamKeepAlive: Bool, requestEnded: Bool) -> Bool

    /// Whether response bytes are read: not while the client's output is congested.
    func readResponses(_ allowed: Bool)
    /// The client's socket took its queued output.
    func clientDrained()
    /// Holds the upstream's output for one batch of client input.
    func cork()
    func uncork()

    /// An event of the leg's connection (the client connection routes them through its layer).
    func upstream(_ upstream: Upstream, _ event: UpstreamEvent)
    /// The connection after `101 Switching Protocols`, for a tunnel; the leg is done.
    func takeConnectionForTunnel() -> Upstream?
    /// The connection between two exchanges, for the idle pool; the leg is done.
    func takeConnectionBetweenExchanges() -> Upstream?
    func close()
}

/// What a leg tells the layer that uses it.
protocol UpstreamLegOwner: AnyObject {
    /// Whether the client's output is congested (an HTTP/2 leg then keeps
    /// the body bytes it relayed from the upstream's windows).
    var clientIsCongested: Bool { get }
    /// The leg is ready and sent the request it held: the client's bytes
    /// that waited may go on.
    func legReady(_ leg: any UpstreamLeg)
    /// Response events of the current exchange (interim heads, the head, body, end, upgrade),
    /// `inout` so that the owner moves each out as it handles it instead of copying it.
    func leg(_ leg: any UpstreamLeg, received events: inout [HTTP1Event])
    /// The leg is gone: the exchange in progress, if any, fails with `failure`.
    func legFailed(_ leg: any UpstreamLeg, _ failure: UpstreamFailure)
    /// The leg's output fell under its bound: the client may be read again.
    func legDrained(_ leg: any UpstreamLeg)
    /// The upstream turned out to speak only HTTP/2: `next` carries the
    /// exchange from now on (and sends the request it held).
    func leg(_ leg: any UpstreamLeg, replacedBy next: any UpstreamLeg)
}

/// The connection under a leg: an ``Upstream``, or bytes in memory in the
/// legs' tests. Its events reach the leg through ``HTTP2Leg/wireEvent(_:)``.
protocol LegWire: ByteOutput {
    var target: UpstreamTarget { get }
    /// Neither closed by the proxy nor ended by the upstream.
    var isOpen: Bool { get }
    func start()
    func cork()
    func uncork()
    func pauseReading()
    func resumeReading()
    func close()
    /// Why the connection ended, in one sentence.
    func endFailure(_ end: TransportEnd, when: String) -> UpstreamFailure
    /// Runs `handler` when the connection has been idle for a while.
    func whenIdle(_ handler: @escaping () -> Void)
}

extension LegWire {
    /// A wire that never idles (an in-memory one) has nothing to release.
    func whenIdle(_ handler: @escaping () -> Void) {}
}

extension Upstream: LegWire {}

/// What a leg needs of the connection and the proxy: made once per leg by
/// the client connection.
struct LegContext {
    /// Opens the replacement connection when an upstream turns out to speak only HTTP/2.
    unowned let host: any LayerHost
    /// Requests go with the proxy's `Via` (forward mode).
    var via: Bool
    /// Requests name the origin in `Host` (reverse mode without `--keep-host-header`).
    var rewritesHost: Bool
    /// Whether a TLS upstream may be spoken to in HTTP/2.
    var http2: Bool
    var http2OnlyUpstreams: HTTP2OnlyUpstreams
    /// Where a request sent again on a new connection is counted.
    var counters: ProxyCounters
    var logger: Logger
    /// The client's address, for log lines.
    var peer: String
}
