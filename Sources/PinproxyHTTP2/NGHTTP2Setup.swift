internal import CNGHTTP2

/// The options of a new session: owns one `nghttp2_option`, freed in `deinit`.
final class NGHTTP2Options {
    let pointer: OpaquePointer

    init(limits: HTTP2Limits) throws(HTTP2Error) {
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw HTTP2Error(.library, "nghttp2 could not allocate session options")
        }
        pointer = option
        // The application grants window only for what the other leg took: a
        // slow reader slows its own stream, and memory stays within the windows.
        nghttp2_option_set_no_auto_window_update(option, 1)
        // Closed streams are not kept for the RFC 7540 priority tree.
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_max_continuations(option, limits.maxContinuations)
        nghttp2_option_set_max_settings(option, limits.maxSettingsEntries)
        // A backstop behind HTTP2ResetRate, which answers first with ENHANCE_YOUR_CALM.
        nghttp2_option_set_stream_reset_rate_limit(option, UInt64(2 * limits.resetBurst), UInt64(2 * limits.resetsPerSecond))
        // Server push is refused: a promise that arrives before the peer has
        // acknowledged SETTINGS_ENABLE_PUSH 0 has its stream reset; after
        // that, nghttp2 treats one as a connection error.
        nghttp2_option_set_max_reserved_remote_streams(option, 0)
        // Until the peer's SETTINGS arrive, assume no more streams than this side grants.
        nghttp2_option_set_peer_max_concurrent_streams(option, UInt32(limits.maxConcurrentStreams))
    }

    deinit { nghttp2_option_del(pointer) }
}

/// The callbacks of a new session: owns one `nghttp2_session_callbacks`, freed in `deinit`.
final class NGHTTP2Callbacks {
    let pointer: OpaquePointer

    init() throws(HTTP2Error) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw HTTP2Error(.library, "nghttp2 could not allocate session callbacks")
        }
        pointer = callbacks
        HTTP2Callbacks.install(in: callbacks)
    }

    deinit { nghttp2_session_callbacks_del(pointer) }
}

/// The SETTINGS a session sends first, from its limits.
enum HTTP2InitialSettings {
    static func entries(for limits: HTTP2Limits) -> [nghttp2_settings_entry] {
        func entry(_ id: nghttp2_settings_id, _ value: Int) -> nghttp2_settings_entry {
            nghttp2_settings_entry(settings_id: Int32(id.rawValue), value: UInt32(value))
        }
        return [
            entry(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits.maxConcurrentStreams),
            entry(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits.initialStreamWindow),
            entry(NGHTTP2_SETTINGS_MAX_FRAME_SIZE, limits.maxFrameSize),
            entry(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, limits.maxHeaderListSize),
            entry(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, limits.headerTableSize),
            // Server push is refused on the upstream leg (RFC 9113 §8.4): a
            // PUSH_PROMISE is then a connection error. A server may say 0 too.
            entry(NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
        ]
    }
}

/// The library's error codes (`nghttp2_error`) by name, for messages.
enum NGHTTP2ErrorText {
    static func describe(_ code: Int) -> String {
        String(cString: nghttp2_strerror(Int32(code)))
    }
}

/// What nghttp2's failures mean to the application.
extension HTTP2Error {
    /// The error for a fatal result of nghttp2_session_mem_recv: `pending`
    /// when a callback decided on it before it failed.
    init(libraryError code: Int, pending: HTTP2Error?, limits: HTTP2Limits) {
        switch Int32(code) {
        case NGHTTP2_ERR_CALLBACK_FAILURE.rawValue where pending != nil:
            self = pending!
        case NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue:
            self.init(.badPreface, wireCode: .protocolError, "the client did not send the HTTP/2 connection preface")
        case NGHTTP2_ERR_FLOODED.rawValue:
            self.init(.flooded, wireCode: .enhanceYourCalm, "the peer flooded the connection with control frames")
        case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue:
            self.init(.flooded, wireCode: .enhanceYourCalm,
                      "the peer sent more than \(limits.maxContinuations) CONTINUATION frames for one header block")
        case NGHTTP2_ERR_HEADER_COMP.rawValue:
            self.init(.headerCompression, wireCode: .compressionError, "a header block could not be decompressed")
        default:
            self.init(.library, wireCode: .internalError, "nghttp2 failed: \(NGHTTP2ErrorText.describe(code))")
        }
    }

    /// The error for a connection error nghttp2 found itself and answered
    /// with a GOAWAY carrying `code`; `message` is what it said about it.
    init(goAwaySent code: HTTP2ErrorCode, message: String?) {
        let kind: HTTP2Error.Code
        switch code {
        case .compressionError: kind = .headerCompression
        case .enhanceYourCalm: kind = .flooded
        default: kind = .protocolViolation
        }
        self.init(kind, wireCode: code, message ?? "the peer broke the protocol")
    }
}
