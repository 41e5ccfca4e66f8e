internal import CNGHTTP2
import PinproxyHTTP1

/// The C callbacks nghttp2 calls while it reads and writes; each finds its
/// ``HTTP2Session`` through `user_data` and hands over to it (the receive
/// callbacks to its ``HTTP2Receiver``).
enum HTTP2Callbacks {
    static func install(in callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            withOwner(userData) { $0.receiver.beginHeaders(on: frame.pointee.hd.stream_id, owner: $0) }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            return withOwner(userData) {
                $0.receiver.header(on: frame.pointee.hd.stream_id,
                                   name: UnsafeBufferPointer(start: name, count: nameLength),
                                   value: UnsafeBufferPointer(start: value, count: valueLength), owner: $0)
            }
        }
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks) { _, header, userData in
            guard let header, header.pointee.type == UInt8(NGHTTP2_DATA.rawValue) else { return 0 }
            withOwner(userData) { $0.receiver.beginData(on: header.pointee.stream_id, length: header.pointee.length, owner: $0) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            withOwner(userData) { $0.receiver.dataChunk(on: streamID, UnsafeBufferPointer(start: data, count: length), owner: $0) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return withOwner(userData) { $0.receiver.frameReceived(frame.pointee, owner: $0) }
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            withOwner(userData) { $0.frameSent(frame.pointee) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, _, userData in
            guard let frame else { return 0 }
            withOwner(userData) { $0.frameNotSent(frame.pointee) }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            withOwner(userData) { $0.receiver.streamClosed(streamID, HTTP2ErrorCode(errorCode), owner: $0) }
            return 0
        }
        nghttp2_session_callbacks_set_send_data_callback(callbacks) { _, frame, header, length, _, userData in
            guard let frame, let header else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
            return withOwner(userData) {
                $0.writeDataFrame(frame.pointee, header: UnsafeBufferPointer(start: header, count: 9), length: length)
            }
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, userData in
            if let message {
                let bytes = UnsafeRawBufferPointer(start: message, count: length)
                withOwner(userData) { $0.lastLibraryMessage = String(decoding: bytes, as: UTF8.self) }
            }
            return 0
        }
    }

    /// The data provider every stream with a body to send gets. It only
    /// says how much a DATA frame carries (`NGHTTP2_DATA_FLAG_NO_COPY`);
    /// the frame is written by the send-data callback, from the stream's
    /// queued body straight into the output (``HTTP2Session/writeDataFrame(_:header:length:)``).
    static var bodyProvider: nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { _, streamID, _, length, flags, _, userData in
            guard let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return withOwner(userData) { $0.readBody(on: streamID, length: length, flags: flags) }
        }
    }
}

/// Calls `body` with the session a callback's `user_data` points to (set,
/// unretained, by its init). The session is alive for the whole call: nghttp2
/// calls back only from inside a call the session itself made. So it is lent,
/// not retained: a retain and a release per callback were ~50 atomic
/// operations per relayed HTTP/2 request (about 25 callbacks on the two legs).
@inline(__always)
private func withOwner<R>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2Session) -> R) -> R {
    Unmanaged<HTTP2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
}

extension HTTP2Session {
    func frameSent(_ frame: nghttp2_frame) {
        if UInt32(frame.hd.type) == NGHTTP2_HEADERS.rawValue, !lentFields.isEmpty { returnLentFields(of: frame.hd.stream_id) }
        if role == .client, UInt32(frame.hd.type) == NGHTTP2_HEADERS.rawValue, let state = streams[frame.hd.stream_id],
           !state.headSent {
            // A request reset before its HEADERS left is reset now that the
            // peer knows the stream: RST_STREAM on a stream the peer never
            // saw opened is a connection error for it (RFC 9113 §6.4). (Not
            // cancelled instead: nghttp2 has HPACK-encoded the HEADERS by then.)
            state.headSent = true
            if let code = state.resetBeforeHead {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), frame.hd.stream_id, code.rawValue)
            }
        }
        guard UInt32(frame.hd.type) == NGHTTP2_GOAWAY.rawValue else { return }
        // The application's own, matched by code and last stream (or by code alone, should nghttp2
        // have lowered the last stream).
        let code = frame.goaway.error_code
        if let mine = queuedGoAways.firstIndex(where: { $0.code == code && $0.lastStream == frame.goaway.last_stream_id })
            ?? queuedGoAways.firstIndex(where: { $0.code == code }) {
            queuedGoAways.remove(at: mine)
            return
        }
        guard failure == nil else { return }
        // nghttp2 found a connection error itself and answered it.
        let sent = HTTP2ErrorCode(code)
        guard sent != .noError else { return }
        failure = HTTP2Error(goAwaySent: sent, message: lastLibraryMessage)
        events.append(.connectionError(failure!))
    }

    /// nghttp2 dropped a frame it had queued (its stream closed first, or
    /// GOAWAY left no room for a new stream).
    func frameNotSent(_ frame: nghttp2_frame) {
        if UInt32(frame.hd.type) == NGHTTP2_HEADERS.rawValue, !lentFields.isEmpty { returnLentFields(of: frame.hd.stream_id) }
    }

    /// The most a DATA frame carries: with its 9-byte header, a frame fills
    /// one TLS record's 16 KiB of plaintext exactly, so a run of full frames
    /// is sealed into full records. With 16 KiB payloads, a 64 KiB output
    /// (four frames and their headers) was sealed as four full records and
    /// a fifth of 36 bytes: a record's overhead for nothing.
    static let recordAlignedPayload = 16 * 1024 - 9

    /// The data provider: sizes the next DATA frame from the queued body
    /// bytes, defers when there are none yet, and ends the body (with
    /// trailers) when told to. The bytes stay queued until
    /// ``writeDataFrame(_:header:length:)`` takes them.
    func readBody(on id: Int32, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let state = streams[id] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let count = min(length, state.bufferedOutgoing, Self.recordAlignedPayload)
        // An empty last frame is left to nghttp2 to build.
        if count > 0 { flags.pointee |= NGHTTP2_DATA_FLAG_NO_COPY.rawValue }
        guard count == state.bufferedOutgoing else { return count }
        guard state.outgoingEnded else {
            if count > 0 { return count }
            state.isDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        state.hasProvider = false
        if let trailers = state.trailers, !trailers.isEmpty {
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            let fields = HTTP2FieldList(checked: trailers)
            let rv = fields.withNV(lent: true) { nghttp2_submit_trailer(session, id, $0, $1) }
            if rv != 0 { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            lend(fields, to: id)
        }
        return count
    }

    /// nghttp2's send-data callback: appends a DATA frame (`header`, then
    /// `length` bytes of the stream's queued body, and any padding) to the
    /// output ``takeOutput(limit:)`` is gathering. Once that output has
    /// reached its limit, `NGHTTP2_ERR_PAUSE` makes nghttp2 stop there,
    /// rather than frame all the stream's window at once.
    func writeDataFrame(_ frame: nghttp2_frame, header: UnsafeBufferPointer<UInt8>, length: Int) -> Int32 {
        let id = frame.hd.stream_id
        guard let state = streams[id], state.bufferedOutgoing >= length else { return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue }
        outbound.appendDataFrame(header: header, padding: Int(frame.data.padlen), length: length, from: &state.outgoing)
        if length > 0 { events.append(.dataWritten(HTTP2StreamID(id), count: length)) }
        return outbound.isFull ? NGHTTP2_ERR_PAUSE.rawValue : 0
    }
}
