internal import CNGHTTP2
import PinproxyHTTP1

/// Which end of a connection a session plays.
public enum HTTP2Role: Hashable, Sendable {
    /// Accepts requests: the proxy's leg towards the client.
    case server
    /// Sends requests: the proxy's leg towards the origin.
    case client
}

/// One HTTP/2 connection leg over nghttp2, bytes in and bytes out: no socket,
/// no TLS, no thread of its own.
///
/// The owner feeds what the network delivered to ``receive(_:)``, takes the
/// ``takeEvents()`` that produced, and writes ``takeOutput()`` to the network,
/// all on the connection's own loop: the session is not thread-safe and is
/// meant to be confined to that loop.
///
/// Flow control is the application's: received body bytes count against the
/// stream's and the connection's receive windows until ``consume(_:on:)``
/// gives them back, so a relay consumes on one leg only what the other leg
/// has written (``HTTP2Event/dataWritten(_:count:)``). A slow reader then
/// stalls its own stream, and a connection never holds more than
/// ``HTTP2Limits/connectionWindow`` bytes of body nobody took. Bodies to send
/// are queued with ``sendData(_:on:endStream:)`` and leave as the peer's
/// windows allow; ``bufferedBytes(on:)`` and ``sendWindow(on:)`` say how far
/// behind a stream is.
///
/// Peer misbehaviour ends the connection with the GOAWAY code RFC 9113 asks
/// for (reported as ``HTTP2Event/connectionError(_:)``) or resets the stream;
/// header lists over ``HTTP2Limits/maxHeaderListSize`` or
/// ``HTTP2Limits/maxHeaderCount`` (HPACK bombs) and floods end it with
/// ENHANCE_YOUR_CALM.
public final class HTTP2Session {
    public let role: HTTP2Role
    /// The limits in force, clamped to what HTTP/2 can express.
    public let limits: HTTP2Limits

    // A session is confined to its connection's loop and nghttp2 calls back
    // only from inside a call on it, so the stored state below, touched many
    // times per frame, skips Swift's run-time exclusivity checks (with the
    // streams', the allocator's and the HTTP/2 layer's: 12,300 of 159,800
    // instructions per relayed HTTP/2 request, docs/proxy.md, "HAProxy and
    // nginx"). The compiler's static checks still apply.

    /// The `nghttp2_session`, freed in `deinit`.
    let session: OpaquePointer
    @exclusivity(unchecked) var streams = HTTP2StreamMap<HTTP2StreamState>()
    @exclusivity(unchecked) var events: [HTTP2Event] = []
    /// Why the session ended the connection, once it has.
    @exclusivity(unchecked) public internal(set) var failure: HTTP2Error?
    /// A failure a callback decided on before it returned NGHTTP2_ERR_CALLBACK_FAILURE.
    @exclusivity(unchecked) var pendingFailure: HTTP2Error?
    /// The last message nghttp2 gave about an error, for reasons.
    @exclusivity(unchecked) var lastLibraryMessage: String?
    /// The application asked for GOAWAY: its sending is not a failure.
    @exclusivity(unchecked) var isGoingAway = false
    /// The application's GOAWAYs not yet sent, as (error code, last stream): a GOAWAY leaving
    /// that is none of them is nghttp2's answer to a connection error, reported even during a
    /// drain (RFC 9113 §6.8 allows a second GOAWAY).
    @exclusivity(unchecked) var queuedGoAways: [(code: UInt32, lastStream: Int32)] = []
    /// The last stream the application's GOAWAY promised to process: newer
    /// requests that arrive before it leaves are refused, not processed.
    @exclusivity(unchecked) var goAwayLastStream: Int32?
    /// The peer sent GOAWAY: no new stream can be opened.
    @exclusivity(unchecked) public internal(set) var peerWentAway = false
    /// mem_send failed: nothing more can be written.
    @exclusivity(unchecked) var outputFailed = false
    /// Connection window to give back for streams that closed with unconsumed bytes.
    @exclusivity(unchecked) var connectionBytesToConsume = 0
    /// What the client sends on streams nghttp2 no longer knows (server sessions).
    @exclusivity(unchecked) var inboundFrames = HTTP2InboundFrames()
    /// Frames serialised early (to see whether nghttp2 had queued a GOAWAY), handed out first by ``takeOutput(limit:)``.
    @exclusivity(unchecked) var heldOutput: [UInt8] = []
    /// What ``takeOutput(limit:)`` is gathering; DATA frames are written into it by the send-data callback.
    @exclusivity(unchecked) var outbound = HTTP2OutputBuffer()
    /// The inbound side: what nghttp2's receive callbacks do.
    @exclusivity(unchecked) var receiver: HTTP2Receiver
    /// Field bytes of HEADERS submitted without nghttp2 copying them, by
    /// stream, in the order submitted, until nghttp2 has encoded the frame
    /// (sent) or dropped it (not sent). See ``lend(_:to:)``.
    @exclusivity(unchecked) var lentFields: [(stream: Int32, bytes: [UInt8])] = []
    /// nghttp2's allocator for this session; outlives `session` (freed in `deinit` first).
    let memory = NGHTTP2Memory()

    /// A session that starts with its SETTINGS (and, as a client, the
    /// connection preface) waiting in ``takeOutput()``.
    public init(role: HTTP2Role, limits: HTTP2Limits = .default) throws(HTTP2Error) {
        self.role = role
        self.limits = limits.clamped
        receiver = HTTP2Receiver(limits: self.limits)
        let options = try NGHTTP2Options(limits: self.limits)
        let callbacks = try NGHTTP2Callbacks()
        var created: OpaquePointer?
        var mem = memory.mem
        let rv = role == .server
            ? nghttp2_session_server_new3(&created, callbacks.pointer, nil, options.pointer, &mem)
            : nghttp2_session_client_new3(&created, callbacks.pointer, nil, options.pointer, &mem)
        guard rv == 0, let created else {
            throw HTTP2Error(.library, "nghttp2 could not create a session: \(NGHTTP2ErrorText.describe(Int(rv)))")
        }
        session = created
        // The callbacks find the session through user_data; it owns the
        // nghttp2 session, so it outlives every call into it.
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())
        let settings = HTTP2InitialSettings.entries(for: self.limits)
        let submitted = settings.withUnsafeBufferPointer {
            nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), $0.baseAddress, $0.count)
        }
        let window = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(self.limits.connectionWindow))
        guard submitted == 0, window == 0 else {
            throw HTTP2Error(.library, "nghttp2 refused the initial SETTINGS: \(NGHTTP2ErrorText.describe(Int(min(submitted, window))))")
        }
    }

    deinit { nghttp2_session_del(session) }

    // MARK: - Bytes in, events and bytes out

    /// Feeds bytes that arrived from the peer. Events they cause wait in
    /// ``takeEvents()``; frames they call for (SETTINGS ACK, WINDOW_UPDATE,
    /// RST_STREAM, GOAWAY) wait in ``takeOutput()``. Ignored once the
    /// session has ended the connection.
    public func receive(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !outputFailed, let base = bytes.baseAddress, bytes.count > 0 else { return }
        var count = bytes.count
        let violation = role == .server ? inboundFrames.scan(bytes) : nil
        if let violation { count = violation.prefix }
        if count > 0 {
            let rv = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), count)
            if rv < 0 { endConnection(afterLibraryError: Int(rv)) }
        }
        if let violation, failure == nil {
            // What came before the offending frame may have made nghttp2 end the
            // connection with a code of its own (an HPACK error, say), queued
            // but not visible: its GOAWAY is then the one the peer gets.
            heldOutput += takeOutput()
            if !Self.containsGoAway(heldOutput) { endConnection(violation.error) }
        }
        giveBackClosedStreamWindow()
    }

    /// Feeds bytes that arrived from the peer (see ``receive(_:)-(UnsafeRawBufferPointer)``).
    public func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// The events since the last call, in order.
    public func takeEvents() -> [HTTP2Event] {
        var taken: [HTTP2Event] = []
        swap(&taken, &events)
        return taken
    }

    /// The events since the last call, in order, in `batch` (emptied first):
    /// the session keeps `batch`'s storage for the next events, so a loop
    /// that hands the same array back each turn allocates none.
    public func takeEvents(into batch: inout [HTTP2Event]) {
        batch.removeAll(keepingCapacity: true)
        swap(&batch, &events)
    }

    /// The bytes to write to the peer, at most about `limit` (whole frames:
    /// the last one may go past it). Serialising may produce events
    /// (``HTTP2Event/dataWritten(_:count:)``, closed streams).
    public func takeOutput(limit: Int = .max) -> [UInt8] {
        outbound.begin(limit: limit, held: &heldOutput)
        while !outputFailed && !outbound.isFull {
            var chunk: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &chunk)
            if count < 0 {
                outputFailed = true
                endConnection(HTTP2Error(.library, wireCode: .internalError,
                                         "nghttp2 could not serialise a frame: \(NGHTTP2ErrorText.describe(count))"))
                break
            }
            // Nothing serialised: either nothing is left, or DATA frames were
            // written into the output until it was full (the callback paused).
            guard count > 0, let chunk else { break }
            outbound.append(UnsafeBufferPointer(start: chunk, count: count))
        }
        if !outbound.bytes.isEmpty { memory.noteOutput() }
        giveBackClosedStreamWindow()
        return outbound.finish()
    }

    /// Whether the session still reads: false after GOAWAY went either way
    /// and its streams are done, or after a connection error.
    public var wantsRead: Bool { failure == nil && !outputFailed && nghttp2_session_want_read(session) != 0 }

    /// Whether ``takeOutput()`` has something to give.
    public var wantsWrite: Bool { !heldOutput.isEmpty || (!outputFailed && nghttp2_session_want_write(session) != 0) }

    /// Neither reading nor writing is left: the connection can be closed.
    public var isFinished: Bool { !wantsRead && !wantsWrite }

    /// A client session with no stream, no error and no GOAWAY either way,
    /// that may open more streams (stream identifiers are left) and has
    /// nothing left to write: its connection can wait, idle, for another
    /// owner to go on with it.
    public var isReusable: Bool {
        role == .client && failure == nil && pendingFailure == nil && !outputFailed && !isGoingAway && !peerWentAway
            && streams.isEmpty && events.isEmpty && !wantsWrite
            && nghttp2_session_check_request_allowed(session) != 0
    }

    /// Gives memory the session holds only while frames are on their way
    /// back to the system (nghttp2's 16 KiB outbound frame buffer,
    /// ``NGHTTP2Memory``), when nothing waits to be written; for a
    /// connection that has been idle a while. The session works as before.
    /// Returns whether anything was released.
    @discardableResult
    public func releaseIdleMemory() -> Bool {
        guard !wantsWrite else { return false }
        outbound.releaseSpare()
        receiver.forgetFieldTexts()
        return memory.releaseIdlePages()
    }

    // MARK: - Flow control

    /// Gives `count` received body bytes of `stream` back to the peer's
    /// windows (stream and connection), once they have gone where they were
    /// going. More than the stream has received and not consumed is ignored,
    /// as is a closed stream (its window went back when it closed).
    public func consume(_ count: Int, on stream: HTTP2StreamID) {
        guard count > 0, let state = streams[stream.rawValue] else { return }
        let consumed = min(count, state.unconsumed)
        guard consumed > 0 else { return }
        state.unconsumed -= consumed
        let released = min(consumed, state.connectionReleased)
        state.connectionReleased -= released
        var rv = nghttp2_session_consume_stream(session, stream.rawValue, consumed)
        if rv == 0 && consumed > released { rv = nghttp2_session_consume_connection(session, consumed - released) }
        if rv != 0 { endConnection(afterLibraryError: Int(rv)) }
    }

    /// Gives `count` received body bytes of `stream` back to the connection's
    /// window only; the stream's stays closed until ``consume(_:on:)``.
    ///
    /// For a relay that holds a stream's bytes while the stream waits for
    /// somewhere to go: its own window still bounds what it holds, and the
    /// bytes do not close the connection's window to the streams that are
    /// moving (which a waiting stream's turn may depend on).
    public func releaseConnectionWindow(_ count: Int, on stream: HTTP2StreamID) {
        guard count > 0, let state = streams[stream.rawValue] else { return }
        let released = min(count, state.unconsumed - state.connectionReleased)
        guard released > 0 else { return }
        state.connectionReleased += released
        let rv = nghttp2_session_consume_connection(session, released)
        if rv != 0 { endConnection(afterLibraryError: Int(rv)) }
    }

    /// Body bytes of `stream` received and not yet consumed.
    public func unconsumedBytes(on stream: HTTP2StreamID) -> Int { streams[stream.rawValue]?.unconsumed ?? 0 }

    /// Body bytes of `stream` queued by ``sendData(_:on:endStream:)`` and not yet written.
    public func bufferedBytes(on stream: HTTP2StreamID) -> Int { streams[stream.rawValue]?.bufferedOutgoing ?? 0 }

    /// How many body bytes the peer lets this side send on `stream` now:
    /// the smaller of the stream's and the connection's send windows.
    public func sendWindow(on stream: HTTP2StreamID) -> Int {
        let streamWindow = Int(nghttp2_session_get_stream_remote_window_size(session, stream.rawValue))
        return max(0, min(streamWindow, connectionSendWindow))
    }

    /// How many body bytes the peer lets this side send on the connection now.
    public var connectionSendWindow: Int { max(0, Int(nghttp2_session_get_remote_window_size(session))) }

    /// How many body bytes the peer may still send on `stream` before it has to wait.
    public func receiveWindow(on stream: HTTP2StreamID) -> Int {
        max(0, Int(nghttp2_session_get_stream_local_window_size(session, stream.rawValue)))
    }

    /// How many body bytes the peer may still send on the connection before it has to wait.
    public var connectionReceiveWindow: Int { max(0, Int(nghttp2_session_get_local_window_size(session))) }

    /// Streams open on this session that the application knows of.
    public var openStreams: [HTTP2StreamID] {
        streams.entries.filter { $0.value.isAnnounced }.map(\.stream).sorted()
    }

    /// The highest stream the peer opened that this session processed (for GOAWAY).
    public var lastPeerStream: HTTP2StreamID { HTTP2StreamID(nghttp2_session_get_last_proc_stream_id(session)) }

    // MARK: - Ending

    /// Ends the connection for a fatal result of nghttp2_session_mem_recv.
    func endConnection(afterLibraryError code: Int) {
        endConnection(HTTP2Error(libraryError: code, pending: pendingFailure, limits: limits))
    }

    /// Reports `error` and queues GOAWAY with its wire code; reading stops.
    func endConnection(_ error: HTTP2Error) {
        guard failure == nil else { return }
        failure = error
        events.append(.connectionError(error))
        _ = nghttp2_session_terminate_session(session, (error.wireCode ?? .internalError).rawValue)
    }

    /// Whether `frames` (whole frames, as nghttp2 serialises them) hold a GOAWAY.
    static func containsGoAway(_ frames: [UInt8]) -> Bool {
        var offset = 0
        while frames.count - offset >= 9 {
            if frames[offset + 3] == 0x7 { return true }
            offset += 9 + (Int(frames[offset]) << 16 | Int(frames[offset + 1]) << 8 | Int(frames[offset + 2]))
        }
        return false
    }

    /// Gives the connection window of streams that closed with unconsumed
    /// bytes back, outside nghttp2's callbacks.
    func giveBackClosedStreamWindow() {
        guard connectionBytesToConsume > 0 else { return }
        let count = connectionBytesToConsume
        connectionBytesToConsume = 0
        _ = nghttp2_session_consume_connection(session, count)
    }
}
