/// The body bytes one stream has queued to send and nghttp2 has not yet
/// framed: the arrays ``HTTP2Session/sendData(_:on:endStream:)`` was given,
/// kept as they came, not joined.
///
/// A relay hands over each received DATA payload as its own array, often
/// while earlier ones still wait for the peer's window. Appending them to one
/// buffer copied every byte once more, and dropping what had been sent moved
/// the rest down; here a payload is copied once, into the frame that carries
/// it (``take(_:into:)``).
struct HTTP2OutgoingBody {
    private var chunks: [[UInt8]] = []
    /// The first chunk not wholly taken.
    private var head = 0
    /// How much of that chunk was taken.
    private var offset = 0
    /// Bytes queued and not taken.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func append(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        count += bytes.count
    }

    mutating func removeAll() {
        chunks.removeAll()
        head = 0
        offset = 0
        count = 0
    }

    /// Moves the first `wanted` bytes (at most ``count``) to the end of
    /// `output`; returns how many moved.
    @discardableResult
    mutating func take(_ wanted: Int, into output: inout [UInt8]) -> Int {
        var left = min(wanted, count)
        let taken = left
        while left > 0 {
            let chunk = chunks[head]
            let n = min(left, chunk.count - offset)
            output.append(contentsOf: chunk[offset..<(offset + n)])
            left -= n
            offset += n
            if offset == chunk.count { advance() }
        }
        count -= taken
        return taken
    }

    private mutating func advance() {
        chunks[head] = []
        head += 1
        offset = 0
        // Taken chunks are dropped from the front once they are most of the
        // list: amortised O(1) per chunk.
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 16 && head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
