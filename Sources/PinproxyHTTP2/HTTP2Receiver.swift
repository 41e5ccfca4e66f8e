internal import CNGHTTP2
import PinproxyHTTP1

/// The inbound side of an ``HTTP2Session``: what nghttp2's receive callbacks
/// do. It assembles each header section and checks its size as it grows,
/// makes heads and trailers of it, collects DATA into its stream, and turns
/// resets, GOAWAY and closed streams into the session's events.
///
/// A struct stored in the session and mutated in place: a callback reaches it
/// through the session it already has, with no allocation or lookup of its
/// own. Its methods are handed that session (`owner`) for the streams, the
/// events and the `nghttp2_session`.
struct HTTP2Receiver {
    /// The header section being decoded (HEADERS + CONTINUATION), its
    /// stream and its size as RFC 9113 §6.5.2 counts it. A connection
    /// decodes one section at a time (§6.10: nothing comes between its
    /// frames), so one section serves every stream, and a field finds its
    /// stream without a lookup. Fields go straight where the head keeps
    /// them: a list of name–value pairs in between cost a retain and a
    /// release per field text copied out of it (~40 atomic operations per
    /// relayed request).
    private var section = HTTP2ReceivedSection()
    /// The texts of the last sections' fields, to share when they repeat.
    private var texts = HTTP2FieldTextCache()
    private var size = 0
    private var sectionStream: HTTP2StreamState?
    private var sectionID: Int32 = 0
    /// How fast the peer may reset streams (server sessions).
    private var resetRate: HTTP2ResetRate

    init(limits: HTTP2Limits) {
        resetRate = HTTP2ResetRate(burst: limits.resetBurst, perSecond: limits.resetsPerSecond)
    }

    mutating func beginHeaders(on id: Int32, owner: HTTP2Session) {
        let state: HTTP2StreamState
        if let existing = owner.streams[id] {
            state = existing
        } else if let last = owner.goAwayLastStream, id > last {
            // GOAWAY said this stream would not be processed; nghttp2 only
            // ignores such streams once the GOAWAY has left. Refused, the
            // client may retry it elsewhere.
            _ = nghttp2_submit_rst_stream(owner.session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.refusedStream.rawValue)
            sectionStream = nil
            return
        } else {
            state = HTTP2StreamState()
            owner.streams[id] = state
        }
        sectionStream = state
        sectionID = id
        section = HTTP2ReceivedSection()
        size = 0
    }

    /// Drops the remembered field texts (an idle session's memory).
    mutating func forgetFieldTexts() { texts.removeAll() }

    /// One decoded field; the header list's size and count are checked here,
    /// as they grow, so that an HPACK bomb is stopped at the limit.
    mutating func header(on id: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>,
                         owner: HTTP2Session) -> Int32 {
        guard id == sectionID, sectionStream != nil else { return 0 }
        size += name.count + value.count + 32
        let limits = owner.limits
        if size > limits.maxHeaderListSize || section.count >= limits.maxHeaderCount {
            let what = size > limits.maxHeaderListSize
                ? "a header list larger than \(limits.maxHeaderListSize) bytes"
                : "more than \(limits.maxHeaderCount) header fields"
            owner.pendingFailure = HTTP2Error(.headerListTooLarge, wireCode: .enhanceYourCalm, "the peer sent \(what) on stream \(id)")
            return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
        }
        section.add(name: name, value: value, texts: &texts)
        return 0
    }

    /// A DATA frame of `length` bytes begins on `id`: room for all of it,
    /// so that a frame arriving in pieces (most do: a 16 KiB frame and its
    /// header straddle two TLS records) is not copied again as it grows.
    /// Up to 64 KiB; a larger frame grows as its pieces come.
    func beginData(on id: Int32, length: Int, owner: HTTP2Session) {
        guard length > 0, let state = owner.streams[id], state.incoming.isEmpty else { return }
        state.incoming.reserveCapacity(min(length, 64 * 1024))
    }

    func dataChunk(on id: Int32, _ bytes: UnsafeBufferPointer<UInt8>, owner: HTTP2Session) {
        guard let state = owner.streams[id] else {
            // No stream to deliver to: the window goes back at once.
            owner.connectionBytesToConsume += bytes.count
            return
        }
        state.incoming.append(contentsOf: bytes)
        state.unconsumed += bytes.count
    }

    mutating func frameReceived(_ frame: nghttp2_frame, owner: HTTP2Session) -> Int32 {
        let id = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        // nghttp2 keeps decoding what is already buffered after it decided to
        // end the connection: no head or body of it reaches the application.
        // (A HEADERS or DATA frame is on an active stream, so want_read is 0
        // here only when the session is terminating.)
        let terminating = nghttp2_session_want_read(owner.session) == 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            if !terminating { headersReceived(on: id, endStream: endStream, owner: owner) }
        case NGHTTP2_DATA.rawValue:
            guard !terminating, let state = owner.streams[id] else { return 0 }
            let bytes = state.incoming
            state.incoming.removeAll()
            if !bytes.isEmpty || endStream { owner.events.append(.data(HTTP2StreamID(id), bytes, endStream: endStream)) }
        case NGHTTP2_RST_STREAM.rawValue:
            if owner.role == .server && !resetRate.allow() {
                owner.pendingFailure = HTTP2Error(.flooded, wireCode: .enhanceYourCalm,
                                                  "the peer reset more than \(owner.limits.resetBurst) streams at once (rapid reset)")
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            if owner.streams[id]?.isAnnounced == true {
                owner.events.append(.reset(HTTP2StreamID(id), HTTP2ErrorCode(frame.rst_stream.error_code)))
            }
        case NGHTTP2_GOAWAY.rawValue:
            owner.peerWentAway = true
            let goaway = frame.goaway
            let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) } ?? []
            owner.events.append(.goAway(lastStreamID: HTTP2StreamID(goaway.last_stream_id), HTTP2ErrorCode(goaway.error_code), debugData: debug))
        default:
            break
        }
        return 0
    }

    private mutating func headersReceived(on id: Int32, endStream: Bool, owner: HTTP2Session) {
        guard id == sectionID, let state = sectionStream else { return }
        sectionStream = nil
        let stream = HTTP2StreamID(id)
        // nghttp2 has checked the section: pseudo-header fields come first,
        // and trailers have none. The head takes the section's fields; the
        // next HEADERS starts a new section.
        switch section.kind {
        case .response:
            // nghttp2 checks for three digits; a leading zero (`075`) passes it.
            guard let head = section.takeResponseHead() else { return refuseHead(on: id, owner: owner) }
            if !head.isInformational { state.hasFinalHead = true }
            owner.events.append(.response(stream, head, endStream: endStream))
        case .request:
            guard let head = section.takeRequestHead() else { return refuseHead(on: id, owner: owner) }
            state.isAnnounced = true
            owner.events.append(.request(stream, head, endStream: endStream))
        case .trailers:
            guard state.isAnnounced else { return }
            owner.events.append(.trailers(stream, section.takeFields()))
        }
    }

    /// A head nghttp2 let through but that means nothing: the stream is reset
    /// as malformed (RFC 9113 §8.1.1).
    private func refuseHead(on id: Int32, owner: HTTP2Session) {
        // Reported as reset even when END_STREAM closes the stream before the RST_STREAM leaves.
        owner.streams[id]?.closingCode = .protocolError
        _ = nghttp2_submit_rst_stream(owner.session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.protocolError.rawValue)
    }

    mutating func streamClosed(_ id: Int32, _ code: HTTP2ErrorCode, owner: HTTP2Session) {
        guard let state = owner.streams.removeValue(forKey: id) else { return }
        if state === sectionStream { sectionStream = nil }
        owner.connectionBytesToConsume += state.unconsumed - state.connectionReleased
        if state.isAnnounced { owner.events.append(.streamClosed(HTTP2StreamID(id), state.closingCode ?? code)) }
    }
}
