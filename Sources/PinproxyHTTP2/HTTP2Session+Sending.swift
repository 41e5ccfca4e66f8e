internal import CNGHTTP2
import PinproxyHTTP1

extension HTTP2Session {
    /// Opens a stream with `head` (client session). Without `endStream` a
    /// body follows through ``sendData(_:on:endStream:)`` or ``sendTrailers(_:on:)``.
    ///
    /// Throws ``HTTP2Error/Code/streamsExhausted`` after GOAWAY; a request
    /// still queued when GOAWAY arrives is closed with REFUSED_STREAM
    /// (``HTTP2Event/streamClosed(_:_:)``), and may be retried elsewhere.
    ///
    /// `authority`, when given, is sent as `:authority` instead of the head's
    /// own (a relay naming the origin). It is not checked: the caller made it.
    public func sendRequest(_ head: HTTP2RequestHead, authority: String? = nil, endStream: Bool) throws(HTTP2Error) -> HTTP2StreamID {
        guard role == .client else { throw HTTP2Error(.invalidState, "only a client session sends requests") }
        try checkOpen()
        guard !peerWentAway && !isGoingAway else {
            throw HTTP2Error(.streamsExhausted, "GOAWAY was sent or received: no new stream can be opened")
        }
        let fields = try head.fieldList(authority: authority)
        var provider = HTTP2Callbacks.bodyProvider
        let id = fields.withNV(lent: true) { nva, count in
            endStream
                ? nghttp2_submit_request(session, nil, nva, count, nil, nil)
                : nghttp2_submit_request(session, nil, nva, count, &provider, nil)
        }
        guard id > 0 else {
            if id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue {
                throw HTTP2Error(.streamsExhausted, "no stream identifier is left on this connection")
            }
            throw HTTP2Error(.library, "the request could not be queued: \(NGHTTP2ErrorText.describe(Int(id)))")
        }
        lend(fields, to: id)
        let state = HTTP2StreamState()
        state.isAnnounced = true
        state.hasProvider = !endStream
        streams[id] = state
        return HTTP2StreamID(id)
    }

    /// Answers `stream` with `head` (server session). A 1xx head may come
    /// first, any number of times; the final head follows, and without
    /// `endStream` a body follows it.
    public func sendResponse(_ head: HTTP2ResponseHead, on stream: HTTP2StreamID, endStream: Bool) throws(HTTP2Error) {
        let state = try responseStream(stream, status: head.status)
        try submitResponse(head.fieldList(), informational: head.isInformational, state: state, on: stream, endStream: endStream)
    }

    /// Answers `stream` with an HTTP/1.1 response head in its HTTP/2 form, as
    /// ``sendResponse(_:on:endStream:)`` with ``HTTP2ResponseHead/init(http1:)``
    /// would; a parsed head's fields are laid out for nghttp2 straight from
    /// it (``HTTP2ResponseHead/fieldList(http1:)``). 101 has no HTTP/2 form.
    public func sendResponse(http1 head: HTTP1ResponseHead, on stream: HTTP2StreamID, endStream: Bool) throws(HTTP2Error) {
        guard let fields = HTTP2ResponseHead.fieldList(http1: head) else {
            return try sendResponse(HTTP2ResponseHead(http1: head), on: stream, endStream: endStream)
        }
        let state = try responseStream(stream, status: head.status)
        try submitResponse(fields, informational: head.isInformational, state: state, on: stream, endStream: endStream)
    }

    /// The stream a response head with `status` may go on now.
    private func responseStream(_ stream: HTTP2StreamID, status: Int) throws(HTTP2Error) -> HTTP2StreamState {
        guard role == .server else { throw HTTP2Error(.invalidState, "only a server session sends responses") }
        try checkOpen()
        let state = try openStream(stream)
        guard !state.hasFinalHead else { throw HTTP2Error(.invalidState, "stream \(stream) already has its response") }
        guard (100...999).contains(status) else { throw HTTP2Error(.invalidHead, "\(status) is not a status code") }
        return state
    }

    private func submitResponse(_ fields: HTTP2FieldList, informational: Bool, state: HTTP2StreamState,
                                on stream: HTTP2StreamID, endStream: Bool) throws(HTTP2Error) {
        let rv: Int32
        if informational {
            guard !endStream else { throw HTTP2Error(.invalidHead, "a 1xx response cannot end the stream") }
            rv = fields.withNV(lent: true) {
                nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.rawValue, nil, $0, $1, nil)
            }
        } else {
            var provider = HTTP2Callbacks.bodyProvider
            rv = fields.withNV(lent: true) { nva, count in
                endStream
                    ? nghttp2_submit_response(session, stream.rawValue, nva, count, nil)
                    : nghttp2_submit_response(session, stream.rawValue, nva, count, &provider)
            }
            state.hasFinalHead = true
            state.hasProvider = !endStream
        }
        guard rv == 0 else { throw HTTP2Error(.library, "the response could not be queued: \(NGHTTP2ErrorText.describe(Int(rv)))") }
        lend(fields, to: stream.rawValue)
    }

    /// Keeps the bytes of HEADERS just submitted with ``HTTP2FieldList/withNV(lent:_:)``
    /// until nghttp2 has encoded them (``frameSent(_:)``) or dropped the frame
    /// (``frameNotSent(_:)``); a session that ends first frees them with itself,
    /// after nghttp2. Not having nghttp2 copy (and lower-case) each name and
    /// value saves ~700 instructions a head, two heads a relayed request.
    func lend(_ fields: HTTP2FieldList, to stream: Int32) {
        lentFields.append((stream, fields.storage))
    }

    /// The bytes of the oldest HEADERS lent for `stream` are no longer read.
    func returnLentFields(of stream: Int32) {
        guard let index = lentFields.firstIndex(where: { $0.stream == stream }) else { return }
        lentFields.remove(at: index)
    }

    /// Queues body bytes on `stream`; with `endStream`, they are its last.
    /// They leave as the peer's windows allow, reported by
    /// ``HTTP2Event/dataWritten(_:count:)``: a relay bounds what it queues
    /// with ``bufferedBytes(on:)``.
    public func sendData(_ bytes: [UInt8], on stream: HTTP2StreamID, endStream: Bool = false) throws(HTTP2Error) {
        let state = try bodyStream(stream)
        // Kept as they are: copied once, into the DATA frames that carry them.
        state.outgoing.append(bytes)
        if endStream { state.outgoingEnded = true }
        try resume(state, stream)
    }

    /// Ends the body of `stream` with trailer fields (RFC 9113 §8.1); no
    /// pseudo-header and no connection-specific field is allowed.
    public func sendTrailers(_ trailers: HTTPHeaders, on stream: HTTP2StreamID) throws(HTTP2Error) {
        let state = try bodyStream(stream)
        let fields = trailers.fields.map { (name: $0.name, value: $0.value) }
        if let pseudo = fields.first(where: { $0.name.hasPrefix(":") }) {
            throw HTTP2Error(.invalidHead, "trailers cannot carry the pseudo-header field '\(pseudo.name)'")
        }
        // Checked and lower-cased now, submitted by the data provider.
        _ = try HTTP2FieldList(sending: fields)
        state.trailers = fields.map { (name: $0.name.lowercased(), value: $0.value) }
        state.outgoingEnded = true
        try resume(state, stream)
    }

    /// Resets `stream` with `code` (RST_STREAM); its queued body is dropped.
    /// A request whose HEADERS have not left yet is reset right after them.
    public func reset(_ stream: HTTP2StreamID, code: HTTP2ErrorCode = .cancel) throws(HTTP2Error) {
        let state = try openStream(stream)
        state.outgoing.removeAll()
        if role == .client && !state.headSent {
            // The peer has not seen the stream yet: the reset follows its HEADERS.
            state.resetBeforeHead = code
            return
        }
        let rv = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.rawValue, code.rawValue)
        guard rv == 0 else { throw HTTP2Error(.library, "the reset could not be queued: \(NGHTTP2ErrorText.describe(Int(rv)))") }
    }

    /// Sends GOAWAY with `code`: no new stream is accepted past the last one
    /// processed, streams already open finish, and the session is
    /// ``isFinished`` when they have.
    ///
    /// `lastStream` promises less than the last stream processed: the peer's
    /// streams above it were not processed and may be retried elsewhere
    /// (nghttp2 closes them with REFUSED_STREAM once the GOAWAY has left). A
    /// later GOAWAY never names a higher stream than an earlier one.
    public func goAway(code: HTTP2ErrorCode = .noError, lastStream: HTTP2StreamID? = nil,
                       debugData: [UInt8] = []) throws(HTTP2Error) {
        try checkOpen()
        isGoingAway = true
        let last = min(lastStream?.rawValue ?? .max, lastPeerStream.rawValue, goAwayLastStream ?? .max)
        goAwayLastStream = last
        let rv = debugData.withUnsafeBufferPointer {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code.rawValue,
                                  $0.baseAddress, $0.count)
        }
        guard rv == 0 else { throw HTTP2Error(.library, "GOAWAY could not be queued: \(NGHTTP2ErrorText.describe(Int(rv)))") }
        queuedGoAways.append((code.rawValue, last))
    }

    // MARK: - Checks

    private func checkOpen() throws(HTTP2Error) {
        if let failure { throw HTTP2Error(.invalidState, "the connection has ended: \(failure.reason)") }
    }

    private func openStream(_ stream: HTTP2StreamID) throws(HTTP2Error) -> HTTP2StreamState {
        try checkOpen()
        guard let state = streams[stream.rawValue], state.isAnnounced else {
            throw HTTP2Error(.noSuchStream, "stream \(stream) is not open")
        }
        return state
    }

    private func bodyStream(_ stream: HTTP2StreamID) throws(HTTP2Error) -> HTTP2StreamState {
        let state = try openStream(stream)
        guard state.hasProvider, !state.outgoingEnded else {
            throw HTTP2Error(.invalidState, "stream \(stream) has no body open for sending")
        }
        return state
    }

    private func resume(_ state: HTTP2StreamState, _ stream: HTTP2StreamID) throws(HTTP2Error) {
        guard state.isDeferred else { return }
        state.isDeferred = false
        let rv = nghttp2_session_resume_data(session, stream.rawValue)
        guard rv == 0 else { throw HTTP2Error(.library, "the body could not be resumed: \(NGHTTP2ErrorText.describe(Int(rv)))") }
    }
}
