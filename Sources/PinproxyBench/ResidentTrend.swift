/// How the proxy's resident set moved after warm-up in `bench soak`.
///
/// The resident set swings by tens of megabytes as the mix of connections
/// changes and the allocator returns and takes pages, so its first and last
/// samples say little about drift: one run of 30 minutes went 230.4 → 206.5 MB
/// between two such samples while its five-minute means stayed within
/// 190–208 MB. The means of the window's thirds and a least-squares line
/// through every sample tell a slow drift from a swing.
public struct ResidentTrend: Sendable, Equatable {
    /// Seconds into the run of the first sample counted.
    public var from: Double
    /// Mean resident set of the first, middle and last third of the window, in MB.
    public var thirdMeans: [Double]
    /// The least-squares slope through the window's samples, MB per minute.
    public var slopePerMinute: Double
    public var lowest: Double
    public var highest: Double

    /// The trend of the samples after the first third of the run (the
    /// warm-up: connections ramp up and the capture's rings fill), or nil
    /// when fewer than three samples are left.
    public init?(samples: [(seconds: Double, megabytes: Double)]) {
        let window = Array(samples.dropFirst(samples.count / 3))
        guard window.count >= 3 else { return nil }
        from = window[0].seconds
        let third = window.count / 3
        let cuts = [0, third, window.count - third, window.count]
        thirdMeans = [window[cuts[0]..<cuts[1]], window[cuts[1]..<cuts[2]], window[cuts[2]..<cuts[3]]].map { part in
            part.reduce(0) { $0 + $1.megabytes } / Double(part.count)
        }
        let n = Double(window.count)
        let meanT = window.reduce(0) { $0 + $1.seconds } / n
        let meanM = window.reduce(0) { $0 + $1.megabytes } / n
        var covariance = 0.0
        var variance = 0.0
        for sample in window {
            covariance += (sample.seconds - meanT) * (sample.megabytes - meanM)
            variance += (sample.seconds - meanT) * (sample.seconds - meanT)
        }
        slopePerMinute = variance > 0 ? covariance / variance * 60 : 0
        lowest = window.map(\.megabytes).min() ?? 0
        highest = window.map(\.megabytes).max() ?? 0
    }
}
