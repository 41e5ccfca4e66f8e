/// Limits and windows of one HTTP/2 session; the defaults are safe for a
/// proxy that faces untrusted peers on both legs.
///
/// The windows bound memory: the session never grants more than
/// ``initialStreamWindow`` per stream and ``connectionWindow`` for the whole
/// connection until the application ``HTTP2Session/consume(_:on:)``s what it
/// received, so a connection holds at most ``connectionWindow`` bytes of
/// received body that nobody has taken.
public struct HTTP2Limits: Hashable, Sendable {
    /// The most streams the peer may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    public var maxConcurrentStreams: Int
    /// The flow-control window granted to each stream the peer sends on (SETTINGS_INITIAL_WINDOW_SIZE).
    /// Until the peer acknowledges the SETTINGS it may use the protocol's
    /// initial 65,535 bytes instead (RFC 9113 §6.9.2), so a smaller window
    /// bounds memory only from then on.
    public var initialStreamWindow: Int
    /// The flow-control window of the whole connection, for what the peer sends.
    public var connectionWindow: Int
    /// The largest frame payload accepted (SETTINGS_MAX_FRAME_SIZE, 16,384 to 16,777,215).
    public var maxFrameSize: Int
    /// The largest decoded header list, counted as RFC 9113 §6.5.2 does (name,
    /// value and 32 bytes per field), advertised as SETTINGS_MAX_HEADER_LIST_SIZE.
    /// A peer that sends more ends the connection with ENHANCE_YOUR_CALM.
    public var maxHeaderListSize: Int
    /// The most fields in one header or trailer section; more end the connection with ENHANCE_YOUR_CALM.
    public var maxHeaderCount: Int
    /// The most CONTINUATION frames after one HEADERS frame; more end the connection.
    public var maxContinuations: Int
    /// The HPACK dynamic table size the peer may use (SETTINGS_HEADER_TABLE_SIZE).
    public var headerTableSize: Int
    /// The most entries in one SETTINGS frame; more end the connection.
    public var maxSettingsEntries: Int
    /// RST_STREAM frames a client may send at once (a server-side limit
    /// against rapid reset); more end the connection with ENHANCE_YOUR_CALM.
    public var resetBurst: Int
    /// RST_STREAM frames a client may send per second once its burst is spent.
    public var resetsPerSecond: Int

    public init(
        maxConcurrentStreams: Int = 100,
        initialStreamWindow: Int = 256 * 1024,
        connectionWindow: Int = 1024 * 1024,
        maxFrameSize: Int = 16 * 1024,
        maxHeaderListSize: Int = 64 * 1024,
        maxHeaderCount: Int = 100,
        maxContinuations: Int = 8,
        headerTableSize: Int = 4096,
        maxSettingsEntries: Int = 32,
        resetBurst: Int = 1000,
        resetsPerSecond: Int = 33
    ) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialStreamWindow = initialStreamWindow
        self.connectionWindow = connectionWindow
        self.maxFrameSize = maxFrameSize
        self.maxHeaderListSize = maxHeaderListSize
        self.maxHeaderCount = maxHeaderCount
        self.maxContinuations = maxContinuations
        self.headerTableSize = headerTableSize
        self.maxSettingsEntries = maxSettingsEntries
        self.resetBurst = resetBurst
        self.resetsPerSecond = resetsPerSecond
    }

    /// 100 streams, 256 KiB per stream and 1 MiB per connection, 16 KiB
    /// frames, 64 KiB and 100 fields per header list, 8 CONTINUATION frames.
    public static let `default` = HTTP2Limits()

    /// The limits of a session the proxy opens to an upstream: ``default``
    /// with windows of 4 MiB per stream and 16 MiB per connection. The
    /// upstream is the side that sends the bulk of a download, and nghttp2
    /// returns window once half of it is consumed: with 256 KiB the origin
    /// waited for a WINDOW_UPDATE every 128 KiB (80 small records, 80
    /// wake-ups of both processes per 10 MiB); with 1 MiB an nginx origin
    /// still stopped every 512 KiB and slept until the update came (about 18
    /// times per 10 MiB, against 4 with HTTP/1.1), and 4 MiB moved about 6%
    /// more bytes per second through the proxy (docs/proxy.md, "Levers
    /// measured on 4ce708d"); 8 MiB did no better. What the proxy may hold for
    /// a slow client grows with it, to one stream window per stream and one
    /// connection window per upstream connection; the connection's stays four
    /// stream windows, so that three stalled streams still leave a fourth
    /// room to move. The client leg keeps ``default``: a client that uploads
    /// to a slow upstream holds no more of the proxy's memory than before.
    public static let upstream = HTTP2Limits(initialStreamWindow: 4 * 1024 * 1024, connectionWindow: 16 * 1024 * 1024)

    /// The limits clamped to what HTTP/2 can express (§6.5.2, §6.9.1).
    var clamped: HTTP2Limits {
        var limits = self
        let maxWindow = Int(Int32.max)
        limits.maxConcurrentStreams = min(max(limits.maxConcurrentStreams, 1), Int(UInt32.max))
        limits.initialStreamWindow = min(max(limits.initialStreamWindow, 1), maxWindow)
        limits.connectionWindow = min(max(limits.connectionWindow, 65_535), maxWindow)
        limits.maxFrameSize = min(max(limits.maxFrameSize, 16_384), 16_777_215)
        limits.maxHeaderListSize = min(max(limits.maxHeaderListSize, 1), Int(UInt32.max))
        limits.maxHeaderCount = max(limits.maxHeaderCount, 1)
        limits.maxContinuations = max(limits.maxContinuations, 0)
        limits.headerTableSize = min(max(limits.headerTableSize, 0), Int(UInt32.max))
        limits.maxSettingsEntries = max(limits.maxSettingsEntries, 1)
        limits.resetBurst = max(limits.resetBurst, 1)
        limits.resetsPerSecond = max(limits.resetsPerSecond, 1)
        return limits
    }
}
