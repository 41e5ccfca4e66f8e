/// Watches the frame headers a client sends, before nghttp2 reads them, for
/// the stream-state errors nghttp2 cannot see once it has forgotten a stream.
///
/// The sessions run with `nghttp2_option_set_no_closed_streams`, so nghttp2 keeps no record of a closed stream and
/// silently ignores frames on it. RFC 9113 §5.1 asks for more, in two cases
/// where the client alone decided that the stream was over, so no frame can
/// legitimately be in flight:
/// - HEADERS or DATA on a stream after the client's own END_STREAM on it
///   (or after the client's RST_STREAM) is a STREAM_CLOSED error (§5.1
///   "closed", §6.1, §6.2);
/// - HEADERS that would open a stream numbered below one the client already
///   opened, on an identifier the client skipped, is a PROTOCOL_ERROR
///   (§5.1.1: opening a stream closes every idle stream below it).
/// Streams that this side reset are left alone: the client may have frames
/// for them in flight, which §5.1 says to ignore.
///
/// The record is bounded: the last ``endedCapacity`` streams the client
/// ended and the last ``skippedCapacity`` ranges it skipped. A frame on a
/// stream forgotten beyond that is ignored, as nghttp2 does — a few hundred
/// bytes per connection instead of nghttp2's closed-stream objects (about
/// 300 bytes each, up to SETTINGS_MAX_CONCURRENT_STREAMS of them).
struct HTTP2InboundFrames {
    /// A frame the session must not hand to nghttp2: what precedes it may go
    /// (`prefix` bytes of the chunk scanned), then the connection ends.
    struct Violation {
        let prefix: Int
        let error: HTTP2Error
    }

    static let endedCapacity = 64
    static let skippedCapacity = 8
    private static let prefaceLength = 24
    private static let headerLength = 9

    private var prefaceLeft = HTTP2InboundFrames.prefaceLength
    // The frame header being read: how many of its 9 bytes arrived, and its fields.
    private var headerFill = 0
    private var length = 0
    private var type: UInt8 = 0
    private var flags: UInt8 = 0
    private var streamID: Int32 = 0
    private var payloadLeft = 0

    /// The highest stream the client opened with HEADERS.
    private var highestOpened: Int32 = -1  // so that the first client stream, 1, is highestOpened + 2
    /// Streams the client ended (END_STREAM or RST_STREAM), oldest first, bounded.
    private var ended: [Int32] = []
    private var endedNext = 0
    /// The highest stream ever recorded as ended: a frame on a stream above
    /// it (every new request's HEADERS) skips the search of ``ended``.
    private var highestEnded: Int32 = 0
    /// Identifiers the client skipped when it opened a higher stream, bounded.
    private var skipped: [ClosedRange<Int32>] = []
    private var skippedNext = 0

    /// Reads the frame headers in `bytes`, the next bytes from the client;
    /// returns the first frame that breaks the rules above, if any. After a
    /// violation the scanner is not to be fed again.
    mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Violation? {
        var index = 0
        let count = bytes.count
        if prefaceLeft > 0 {
            let skip = min(prefaceLeft, count)
            prefaceLeft -= skip
            index = skip
        }
        while index < count {
            if payloadLeft > 0 {
                let skip = min(payloadLeft, count - index)
                payloadLeft -= skip
                index += skip
                continue
            }
            let byte = bytes[index]
            switch headerFill {
            case 0...2: length = length << 8 | Int(byte)
            case 3: type = byte
            case 4: flags = byte
            default: streamID = streamID << 8 | Int32(byte & (headerFill == 5 ? 0x7f : 0xff))
            }
            headerFill += 1
            index += 1
            guard headerFill == Self.headerLength else { continue }
            if let error = frameArrived() {
                return Violation(prefix: max(0, index - Self.headerLength), error: error)
            }
            payloadLeft = length
            headerFill = 0
            length = 0
            streamID = 0
        }
        return nil
    }

    private static let data: UInt8 = 0x0, headers: UInt8 = 0x1, rstStream: UInt8 = 0x3
    private static let endStream: UInt8 = 0x1

    /// Judges one complete frame header, and records what it ends or opens.
    private mutating func frameArrived() -> HTTP2Error? {
        // Even and zero identifiers are nghttp2's to refuse.
        guard streamID & 1 == 1 else { return nil }
        switch type {
        case Self.data, Self.headers:
            if wasEnded(streamID) {
                let what = type == Self.data ? "DATA" : "HEADERS"
                return HTTP2Error(.protocolViolation, wireCode: .streamClosed,
                                  "the client sent \(what) on stream \(streamID) after it had closed that stream")
            }
            if type == Self.headers {
                if streamID > highestOpened {
                    if streamID > highestOpened + 2 { remember(skipped: (highestOpened + 2)...(streamID - 2)) }
                    highestOpened = streamID
                } else if wasSkipped(streamID) {
                    return HTTP2Error(.protocolViolation, wireCode: .protocolError,
                                      "the client opened stream \(streamID) after a higher-numbered one")
                }
            }
            if flags & Self.endStream != 0 { remember(ended: streamID) }
        case Self.rstStream:
            remember(ended: streamID)
        default:
            break
        }
        return nil
    }

    /// How many ended streams the record holds (at most ``endedCapacity``).
    var recordedStreams: Int { ended.count }

    private func wasEnded(_ stream: Int32) -> Bool { stream <= highestEnded && ended.contains(stream) }

    private func wasSkipped(_ stream: Int32) -> Bool { skipped.contains { $0.contains(stream) } }

    private mutating func remember(ended stream: Int32) {
        guard !wasEnded(stream) else { return }
        highestEnded = max(highestEnded, stream)
        if ended.count < Self.endedCapacity {
            ended.append(stream)
        } else {
            ended[endedNext] = stream
            endedNext = (endedNext + 1) % Self.endedCapacity
        }
    }

    private mutating func remember(skipped range: ClosedRange<Int32>) {
        if skipped.count < Self.skippedCapacity {
            skipped.append(range)
        } else {
            skipped[skippedNext] = range
            skippedNext = (skippedNext + 1) % Self.skippedCapacity
        }
    }
}
