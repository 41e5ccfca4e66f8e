import PinproxyHTTP1

/// Whether a request that met the close of its upstream connection goes
/// again, once, on a new connection: the rule both HTTP/1.1 legs apply
/// (``HTTP1Leg`` for HTTP/1.1 clients, ``TranslatedStreamCarrier`` for HTTP/2
/// streams translated to HTTP/1.1).
///
/// A keep-alive connection that sat idle may be closed by the upstream just
/// as a request goes out on it (its keep-alive timeout, a restart): the
/// request then meets a close or a reset and no response. HAProxy
/// (`retry-on conn-failure empty-response`) and nginx (`proxy_next_upstream
/// error`, which counts a failed cached connection as a free try) send such
/// a request again. Here it goes again when all of these hold:
///
/// - the connection is **reused**: it carried a request before this one (for
///   this client connection, or for another one through the
///   ``IdleUpstreamPool``). A new connection that fails is a real failure of
///   the upstream, and is answered `502`;
/// - **nothing of the response arrived**, not one byte;
/// - it was **not sent again already** (once, and only on a new connection,
///   never on another idle one: those may have gone stale together);
/// - the request can be sent again whole, and doing so is safe: **nothing of
///   its body went upstream** (no byte, nor the end of a chunked body: the
///   proxy streams bodies and keeps none, so what left cannot be sent again),
///   and either its method is **idempotent** (GET, HEAD, OPTIONS, TRACE, PUT,
///   DELETE: RFC 9110 §9.2.2) or it **has a body that is still held** back, so the
///   upstream had the head alone — an incomplete request it cannot have
///   acted on (`Expect: 100-continue` makes clients hold it so).
///
/// Never otherwise. A request whose complete form went upstream with a
/// non-idempotent method (a POST without a body, or one whose body was sent)
/// is not sent twice, since the upstream may have received and acted on it
/// before closing: the client gets the `502` with the reason it was not
/// sent again (``Verdict/refuse(why:)``).
enum UpstreamReplay {
    enum Verdict: Equatable {
        /// Send the request again on a new connection.
        case replay
        /// Fail as before; `why`, when given, is added to the failure's reason.
        case refuse(why: String?)
    }

    /// The verdict for a request whose connection ended (or was reset) before its response.
    static func verdict(reusedConnection: Bool, responded: Bool, alreadyReplayed: Bool, method: String,
                        bodyDeclared: Bool, bodySent: Bool) -> Verdict {
        guard reusedConnection, !responded, !alreadyReplayed else { return .refuse(why: nil) }
        if bodySent {
            return .refuse(why: "not sent again on a new connection: its body had already gone to the upstream, and the proxy streams bodies without keeping them")
        }
        if isIdempotent(method) || bodyDeclared { return .replay }
        return .refuse(why: "not sent again on a new connection: \(method) is not idempotent, and the upstream may have acted on it before closing")
    }

    /// RFC 9110 §9.2.2: the methods whose repetition has the effect of one request.
    static func isIdempotent(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE": return true
        default: return false
        }
    }
}

extension HTTP1BodyFraming {
    /// Whether a request framed so has a body of at least one byte to come.
    var declaresBody: Bool {
        switch self {
        case .none, .contentLength(0): return false
        case .contentLength, .chunked, .untilClose: return true
        }
    }
}

extension UpstreamFailure {
    /// The failure with the reason its request was not sent again, if any.
    func refused(_ verdict: UpstreamReplay.Verdict) -> UpstreamFailure {
        guard case .refuse(let why?) = verdict else { return self }
        var failure = self
        failure.reason += ": \(why)"
        return failure
    }
}
