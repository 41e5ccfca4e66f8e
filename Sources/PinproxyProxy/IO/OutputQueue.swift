/// Space a write may gather small chunks in: the event loop's scratch
/// buffer, one per loop, reused by every transport on it.
protocol ScratchSpace {
    func withScratch<Result>(_ byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result
}

extension EventLoop: ScratchSpace {}

/// A transport's output that the socket (or the TLS engine) has not taken
/// yet: the chunks its owner sent, how many bytes they hold, whether the
/// owner corked them, and whether a producer was told to pause.
///
/// Chunks are the owner's slices, never copied on the way in. A write takes
/// ``withNext(in:_:)`` (small leading chunks gathered into one) and then
/// ``drop(_:)`` with what the socket or the engine accepted: whole chunks,
/// and the front of the next one. A value type held by its transport and
/// touched only on its queue.
struct OutputQueue {
    /// Small queued chunks are gathered into one write up to this size (one
    /// TLS record), so a response head and a small body leave in one record
    /// and one segment instead of two.
    static let coalesceLimit = 16 * 1024
    /// Output above this many bytes counts as congested.
    static let highWater = 256 * 1024

    private(set) var chunks: [ArraySlice<UInt8>] = []
    /// Bytes in ``chunks``.
    private(set) var byteCount = 0
    /// While above zero, the transport only queues; see ``Transport/cork()``.
    private(set) var corkDepth = 0
    /// ``isCongested`` said yes, and ``takeDrained()`` has not said so since.
    private var wasCongested = false

    var isEmpty: Bool { chunks.isEmpty }

    mutating func append(_ bytes: ArraySlice<UInt8>) {
        chunks.append(bytes)
        byteCount += bytes.count
    }

    mutating func cork() { corkDepth += 1 }

    /// Returns whether the last cork came off.
    mutating func uncork() -> Bool {
        corkDepth -= 1
        return corkDepth == 0
    }

    /// Whether more than ``highWater`` bytes wait: the producer should stop
    /// until ``takeDrained()`` says they fell to half of it.
    var isCongested: Bool {
        mutating get {
            if byteCount > Self.highWater { wasCongested = true; return true }
            return false
        }
    }

    /// True once, when a queue that reported congestion has fallen to half
    /// the high-water mark (the gap keeps a producer from flapping).
    mutating func takeDrained() -> Bool {
        guard wasCongested, byteCount <= Self.highWater / 2 else { return false }
        wasCongested = false
        return true
    }

    /// Runs `body` with the next bytes to write: small leading chunks (a
    /// response head and a short body) gathered in `scratch` up to
    /// ``coalesceLimit``, so they leave as one segment or one TLS record, or
    /// else the first chunk as it is. A retry after a refused write gathers
    /// the same leading bytes again, as OpenSSL requires. Not for an empty queue.
    func withNext<Space: ScratchSpace, Result>(in scratch: Space, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let first = chunks[0]
        guard chunks.count > 1, first.count + chunks[1].count <= Self.coalesceLimit else {
            return first.withUnsafeBytes(body)
        }
        return scratch.withScratch(Self.coalesceLimit) { scratch in
            var used = 0
            for chunk in chunks {
                guard used + chunk.count <= scratch.count else { break }
                chunk.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: scratch[used...]).copyMemory(from: $0) }
                used += chunk.count
            }
            return body(UnsafeRawBufferPointer(rebasing: scratch[0..<used]))
        }
    }

    /// Writes to `descriptor` until the queue is empty (nil) or the socket
    /// refuses or fails (the outcome that stopped it).
    mutating func write(to descriptor: Descriptor, in scratch: some ScratchSpace) -> IOOutcome? {
        while !chunks.isEmpty {
            let outcome = withNext(in: scratch) { descriptor.send($0) }
            guard case .bytes(let n) = outcome else { return outcome }
            drop(n)
        }
        return nil
    }

    /// Removes `count` written bytes from the front: whole chunks, then the
    /// front of the next one.
    mutating func drop(_ count: Int) {
        byteCount -= count
        var left = count
        var whole = 0
        while whole < chunks.count, chunks[whole].count <= left {
            left -= chunks[whole].count
            whole += 1
        }
        if whole == chunks.count { chunks.removeAll(keepingCapacity: true) } else {
            if whole > 0 { chunks.removeFirst(whole) }
            if left > 0 { chunks[0] = chunks[0].dropFirst(left) }
        }
    }

    /// Forgets every queued byte (the transport closed).
    mutating func removeAll() {
        chunks.removeAll()
        byteCount = 0
    }
}
