/// Size limits the parser enforces on message heads.
///
/// Exceeding one of them is answered with 414 (request line) or 431 (header
/// fields). Bodies are streamed and have no limit here.
public struct HTTP1Limits: Hashable, Sendable {
    /// The longest request or status line, without its line ending.
    public var maxStartLineLength: Int
    /// The longest single header or trailer field line.
    public var maxHeaderLineLength: Int
    /// The largest head in all: start line, field lines and line endings.
    public var maxHeaderBlockSize: Int
    /// The most field lines in one head, and in one trailer section.
    public var maxHeaderCount: Int
    /// The longest chunk-size line, extensions included.
    public var maxChunkLineLength: Int
    /// The most bytes kept while waiting for the answer to an upgrade request.
    public var maxBufferedWhilePaused: Int

    public init(
        maxStartLineLength: Int = 8 * 1024,
        maxHeaderLineLength: Int = 8 * 1024,
        maxHeaderBlockSize: Int = 64 * 1024,
        maxHeaderCount: Int = 100,
        maxChunkLineLength: Int = 4 * 1024,
        maxBufferedWhilePaused: Int = 64 * 1024
    ) {
        self.maxStartLineLength = maxStartLineLength
        self.maxHeaderLineLength = maxHeaderLineLength
        self.maxHeaderBlockSize = maxHeaderBlockSize
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkLineLength = maxChunkLineLength
        self.maxBufferedWhilePaused = maxBufferedWhilePaused
    }

    /// 8 KiB lines, 64 KiB heads, 100 fields.
    public static let `default` = HTTP1Limits()
}
