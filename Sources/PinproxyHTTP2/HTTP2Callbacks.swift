internal import CNGHTTP2
import PinproxyHTTP1

/// The C callbacks nghttp2 calls while it reads and writes; each finds its
/// ``HTTP2Session`` through `user_data` and hands over to it.
enum HTTP2Callbacks {
    static func install(in callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            owner(userData).beginHeaders(on: frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
            return owner(userData).header(
                on: frame.pointee.hd.stream_id,
                name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            owner(userData).dataChunk(on: streamID, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            return owner(userData).frameReceived(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame else { return 0 }
            owner(userData).frameSent(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            owner(userData).streamClosed(streamID, HTTP2ErrorCode(errorCode))
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, userData in
            if let message {
                let bytes = UnsafeRawBufferPointer(start: message, count: length)
                owner(userData).lastLibraryMessage = String(decoding: bytes, as: UTF8.self)
            }
            return 0
        }
    }

    /// The data provider every stream with a body to send gets.
    static var bodyProvider: nghttp2_data_provider {
        nghttp2_data_provider(source: nghttp2_data_source(ptr: nil)) { _, streamID, buffer, length, flags, _, userData in
            guard let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return owner(userData).readBody(
                on: streamID, into: UnsafeMutableRawBufferPointer(start: buffer, count: length), flags: flags)
        }
    }
}

/// The session a callback's `user_data` points to (set, unretained, by its init).
@inline(__always)
private func owner(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session {
    Unmanaged<HTTP2Session>.fromOpaque(userData!).takeUnretainedValue()
}

extension HTTP2Session {
    func beginHeaders(on id: Int32) {
        let state: HTTP2StreamState
        if let existing = streams[id] {
            state = existing
        } else if let last = goAwayLastStream, id > last {
            // GOAWAY said this stream would not be processed; nghttp2 only
            // ignores such streams once the GOAWAY has left. Refused, the
            // client may retry it elsewhere.
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.refusedStream.rawValue)
            receivingStream = nil
            return
        } else {
            state = HTTP2StreamState()
            streams[id] = state
        }
        receivingStream = state
        receivingID = id
        receivingFields.removeAll(keepingCapacity: true)
        receivingSize = 0
    }

    /// One decoded field; the header list's size and count are checked here,
    /// as they grow, so that an HPACK bomb is stopped at the limit.
    func header(on id: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard id == receivingID, receivingStream != nil else { return 0 }
        receivingSize += name.count + value.count + 32
        if receivingSize > limits.maxHeaderListSize || receivingFields.count >= limits.maxHeaderCount {
            let what = receivingSize > limits.maxHeaderListSize
                ? "a header list larger than \(limits.maxHeaderListSize) bytes"
                : "more than \(limits.maxHeaderCount) header fields"
            pendingFailure = HTTP2Error(.headerListTooLarge, wireCode: .enhanceYourCalm, "the peer sent \(what) on stream \(id)")
            return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
        }
        receivingFields.append((HTTP2FieldText.string(name), HTTP2FieldText.string(value)))
        return 0
    }

    func dataChunk(on id: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let state = streams[id] else {
            // No stream to deliver to: the window goes back at once.
            connectionBytesToConsume += bytes.count
            return
        }
        state.incoming.append(contentsOf: bytes)
        state.unconsumed += bytes.count
    }

    func frameReceived(_ frame: nghttp2_frame) -> Int32 {
        let id = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        // nghttp2 keeps decoding what is already buffered after it decided to
        // end the connection: no head or body of it reaches the application.
        // (A HEADERS or DATA frame is on an active stream, so want_read is 0
        // here only when the session is terminating.)
        let terminating = nghttp2_session_want_read(session) == 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            if !terminating { headersReceived(on: id, endStream: endStream) }
        case NGHTTP2_DATA.rawValue:
            guard !terminating, let state = streams[id] else { return 0 }
            let bytes = state.incoming
            state.incoming.removeAll()
            if !bytes.isEmpty || endStream { events.append(.data(HTTP2StreamID(id), bytes, endStream: endStream)) }
        case NGHTTP2_RST_STREAM.rawValue:
            if role == .server && !resetRate.allow() {
                pendingFailure = HTTP2Error(.flooded, wireCode: .enhanceYourCalm,
                                            "the peer reset more than \(limits.resetBurst) streams at once (rapid reset)")
                return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
            }
            if streams[id]?.isAnnounced == true {
                events.append(.reset(HTTP2StreamID(id), HTTP2ErrorCode(frame.rst_stream.error_code)))
            }
        case NGHTTP2_GOAWAY.rawValue:
            peerWentAway = true
            let goaway = frame.goaway
            let debug = goaway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goaway.opaque_data_len)) } ?? []
            events.append(.goAway(lastStreamID: HTTP2StreamID(goaway.last_stream_id), HTTP2ErrorCode(goaway.error_code), debugData: debug))
        default:
            break
        }
        return 0
    }

    private func headersReceived(on id: Int32, endStream: Bool) {
        guard id == receivingID, let state = receivingStream else { return }
        receivingStream = nil
        let stream = HTTP2StreamID(id)
        // nghttp2 has checked the section: pseudo-header fields come first,
        // and trailers have none. The list is emptied for the next section
        // as soon as the head is made, keeping its capacity.
        switch receivingFields.first?.name {
        case ":status":
            // nghttp2 checks for three digits; a leading zero (`075`) passes it.
            let head = HTTP2ResponseHead(received: receivingFields)
            receivingFields.removeAll(keepingCapacity: true)
            guard let head else { return refuseHead(on: id) }
            if !head.isInformational { state.hasFinalHead = true }
            events.append(.response(stream, head, endStream: endStream))
        case let name? where name.utf8.first == UInt8(ascii: ":"):
            let head = HTTP2RequestHead(received: receivingFields)
            receivingFields.removeAll(keepingCapacity: true)
            guard let head else { return refuseHead(on: id) }
            state.isAnnounced = true
            events.append(.request(stream, head, endStream: endStream))
        default:
            let trailers = HTTPHeaders(receivingFields.map { ($0.name, $0.value) })
            receivingFields.removeAll(keepingCapacity: true)
            guard state.isAnnounced else { return }
            events.append(.trailers(stream, trailers))
        }
    }

    /// A head nghttp2 let through but that means nothing: the stream is reset
    /// as malformed (RFC 9113 §8.1.1).
    private func refuseHead(on id: Int32) {
        // Reported as reset even when END_STREAM closes the stream before the RST_STREAM leaves.
        streams[id]?.closingCode = .protocolError
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, HTTP2ErrorCode.protocolError.rawValue)
    }

    func frameSent(_ frame: nghttp2_frame) {
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
        guard UInt32(frame.hd.type) == NGHTTP2_GOAWAY.rawValue, failure == nil, !isGoingAway else { return }
        // nghttp2 found a connection error itself and answered it.
        let code = HTTP2ErrorCode(frame.goaway.error_code)
        guard code != .noError else { return }
        let kind: HTTP2Error.Code
        switch code {
        case .compressionError: kind = .headerCompression
        case .enhanceYourCalm: kind = .flooded
        default: kind = .protocolViolation
        }
        failure = HTTP2Error(kind, wireCode: code, lastLibraryMessage ?? "the peer broke the protocol")
        events.append(.connectionError(failure!))
    }

    func streamClosed(_ id: Int32, _ code: HTTP2ErrorCode) {
        guard let state = streams.removeValue(forKey: id) else { return }
        if state === receivingStream { receivingStream = nil }
        connectionBytesToConsume += state.unconsumed - state.connectionReleased
        if state.isAnnounced { events.append(.streamClosed(HTTP2StreamID(id), state.closingCode ?? code)) }
    }

    /// The data provider: hands queued body bytes to nghttp2, defers when
    /// there are none yet, and ends the body (with trailers) when told to.
    func readBody(on id: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let state = streams[id] else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let count = state.takeOutgoing(upTo: buffer.count, into: buffer)
        if count > 0 { events.append(.dataWritten(HTTP2StreamID(id), count: count)) }
        guard state.bufferedOutgoing == 0 else { return count }
        guard state.outgoingEnded else {
            if count > 0 { return count }
            state.isDeferred = true
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
        flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        state.hasProvider = false
        if let trailers = state.trailers, !trailers.isEmpty {
            flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            let rv = HTTP2FieldList(checked: trailers).withNV { nghttp2_submit_trailer(session, id, $0, $1) }
            if rv != 0 { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
        }
        return count
    }
}
