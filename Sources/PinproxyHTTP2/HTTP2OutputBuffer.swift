/// The bytes one ``HTTP2Session/takeOutput(limit:)`` gathers for the
/// network: the frames nghttp2 serialises (copied out of its frame buffer)
/// and the DATA frames the session writes itself, payload straight from the
/// stream's queued body (``appendDataFrame(header:padding:length:from:)``).
///
/// Room for the whole output is reserved at once, not grown frame by frame
/// (each growth copied everything gathered so far). The storage of a large
/// output is kept and reused by the next one, once whoever took it (the
/// transport, which encrypts it at once unless the socket is congested) has
/// let it go: a bulk transfer then gathers into the same pages every time.
/// A small output releases it, so an idle session holds none.
struct HTTP2OutputBuffer {
    /// A full frame: a header and a 16 KiB payload. A small output gets this
    /// much room first, as before.
    static let frameReservation = 16 * 1024 + 9
    /// The most an output reserves ahead, whatever its limit.
    static let maxReservation = 256 * 1024

    private(set) var bytes: [UInt8] = []
    /// Where gathering stops (whole frames: the last may go past it).
    private(set) var limit = Int.max
    private var spare: [UInt8] = []

    var isFull: Bool { bytes.count >= limit }

    /// Starts an output of about `limit` bytes with `held` (frames
    /// serialised earlier), taking them without a copy.
    mutating func begin(limit: Int, held: inout [UInt8]) {
        self.limit = limit
        if !held.isEmpty {
            swap(&bytes, &held)
            return
        }
        swap(&bytes, &spare)
        // Reused only when nobody else holds it; otherwise new storage of
        // the same size (nothing is copied either way).
        bytes.removeAll(keepingCapacity: true)
    }

    /// Appends a frame nghttp2 serialised.
    mutating func append(_ frame: UnsafeBufferPointer<UInt8>) {
        reserve(frame.count, bulk: false)
        bytes.append(contentsOf: frame)
    }

    /// Appends a DATA frame: its 9-byte `header`, the pad length byte and
    /// `padding - 1` zeros when padded (RFC 9113 §6.1), and `length` bytes
    /// taken from `body`.
    mutating func appendDataFrame(header: UnsafeBufferPointer<UInt8>, padding: Int, length: Int,
                                  from body: inout HTTP2OutgoingBody) {
        reserve(header.count + padding + length, bulk: true)
        bytes.append(contentsOf: header)
        if padding > 0 { bytes.append(UInt8(padding - 1)) }
        body.take(length, into: &bytes)
        if padding > 1 { bytes.append(contentsOf: repeatElement(0, count: padding - 1)) }
    }

    /// The gathered output; the buffer is empty again.
    mutating func finish() -> [UInt8] {
        var output: [UInt8] = []
        swap(&output, &bytes)
        spare = output.count >= Self.frameReservation ? output : []
        limit = .max
        return output
    }

    /// Lets go of the storage kept for the next output.
    mutating func releaseSpare() { spare = [] }

    /// Makes room for `count` more bytes: for a DATA frame, room for the
    /// whole output (its limit and a frame past it); for anything else, a
    /// frame's worth; and never less than double, so that an output with
    /// no limit still grows in amortised O(1).
    private mutating func reserve(_ count: Int, bulk: Bool) {
        let needed = bytes.count + count
        guard bytes.capacity < needed else { return }
        let ahead = bulk ? min(limit, Self.maxReservation) + Self.frameReservation : Self.frameReservation
        bytes.reserveCapacity(max(needed, ahead, 2 * bytes.capacity))
    }
}
