/// A token bucket for the RST_STREAM frames a client sends (the "rapid
/// reset" attack, CVE-2023-44487): `burst` resets at once, then
/// `perSecond`.
///
/// nghttp2 has the same limit, but ends the connection with INTERNAL_ERROR;
/// this one runs first (nghttp2's is set to twice as much, as a backstop) so
/// that the peer is told ENHANCE_YOUR_CALM, the code RFC 9113 §11 gives for
/// abuse.
struct HTTP2ResetRate {
    private let burst: Double
    private let perSecond: Double
    private var tokens: Double
    private var refilled: ContinuousClock.Instant

    init(burst: Int, perSecond: Int) {
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
        tokens = Double(burst)
        refilled = .now
    }

    /// Takes a token for one reset; false when none is left.
    mutating func allow() -> Bool {
        let now = ContinuousClock.now
        let elapsed = refilled.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + seconds * perSecond)
        refilled = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
