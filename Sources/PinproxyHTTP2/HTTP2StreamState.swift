/// What a session keeps for one open stream: the DATA frame being received, the body waiting to be sent, and
/// the window it has not yet given back.
///
/// Owned by one session and touched only through it (see ``HTTP2Session``'s
/// confinement), so its stored state skips the run-time exclusivity checks.
final class HTTP2StreamState {
    /// Body bytes of the DATA frame being received, reported when it ends.
    @exclusivity(unchecked) var incoming: [UInt8] = []
    /// Body bytes received and not yet consumed by the application.
    @exclusivity(unchecked) var unconsumed = 0
    /// Of those, bytes already given back to the connection's window
    /// (``HTTP2Session/releaseConnectionWindow(_:on:)``): consuming them gives back the stream's only.
    @exclusivity(unchecked) var connectionReleased = 0

    /// Body bytes waiting for the data provider.
    @exclusivity(unchecked) var outgoing = HTTP2OutgoingBody()
    /// A data provider is attached: a head was sent without END_STREAM.
    @exclusivity(unchecked) var hasProvider = false
    /// The provider returned NGHTTP2_ERR_DEFERRED and waits to be resumed.
    @exclusivity(unchecked) var isDeferred = false
    /// The body ends after `outgoing` (with ``trailers`` if set).
    @exclusivity(unchecked) var outgoingEnded = false
    @exclusivity(unchecked) var trailers: [(name: String, value: String)]?

    /// The application knows about this stream (it saw its head or opened it),
    /// so its closing is reported.
    @exclusivity(unchecked) var isAnnounced = false
    /// A final response head was sent (server) or received (client).
    @exclusivity(unchecked) var hasFinalHead = false
    /// The request's HEADERS went to the peer (client session).
    @exclusivity(unchecked) var headSent = false
    /// Reset before its HEADERS went: the RST_STREAM follows them (client session).
    @exclusivity(unchecked) var resetBeforeHead: HTTP2ErrorCode?
    /// The code to report when the stream closes, when the session reset it itself.
    @exclusivity(unchecked) var closingCode: HTTP2ErrorCode?

    var bufferedOutgoing: Int { outgoing.count }
}
