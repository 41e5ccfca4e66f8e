/// Turning a received head into the head a proxy sends on (RFC 9110 §7.6).
///
/// Hop-by-hop fields describe one connection and are removed: `Connection`
/// and every field it names, `Keep-Alive`, `Proxy-Connection`,
/// `Proxy-Authorization` (the proxy consumes it), `Proxy-Authenticate`, `TE`,
/// `Trailer`, `Transfer-Encoding` (the body is re-framed) and `Upgrade` —
/// except when an upgrade is being relayed, where `Upgrade` and
/// `Connection: upgrade` pass. Each forwarded head gets a `Via` field
/// (`1.1 pinproxy`), as RFC 9110 §7.6.3 requires of proxies; pass `via: nil`
/// to leave it out for clients that must not notice the proxy.
///
/// The returned head's ``HTTP1RequestHead/framing`` /
/// ``HTTP1ResponseHead/framing`` says how the body must be written: with
/// ``HTTP1ChunkedEncoder`` for `.chunked`, as is for `.contentLength`, and for
/// `.untilClose` as is followed by closing the connection.
public enum HTTP1Forwarding {
    /// The pseudonym written in `Via`.
    public static let defaultVia = "pinproxy"

    /// Lower-cased names of the fields that never cross a proxy.
    public static let hopByHopFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
        "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// `headers` without hop-by-hop fields and without the fields `Connection` names (except
    /// `Host`, which is never a connection option: see ``HopByHop``).
    /// With `keepingUpgrade`, `Upgrade` stays (and `Connection` is left for the caller to set).
    public static func removingHopByHop(_ headers: HTTPHeaders, keepingUpgrade: Bool = false) -> HTTPHeaders {
        HopByHop.removing(from: headers, keepingUpgrade: keepingUpgrade)
    }

    /// Calls `body` with each field ``removingHopByHop(_:keepingUpgrade:)`` keeps, in order,
    /// without making the kept headers: for a translation that makes headers of its own.
    package static func forEachEndToEnd(_ headers: HTTPHeaders, _ body: (HTTPHeaders.Field) -> Void) {
        guard let dropped = HopByHop.dropped(in: headers, keepingUpgrade: false) else {
            for field in removingHopByHop(headers) { body(field) }
            return
        }
        for position in headers.fields.indices where !dropped.positions.contains(position) { body(headers.fields[position]) }
    }

    /// Trailer fields fit to relay: without hop-by-hop fields and without the
    /// fields RFC 9110 §6.5.1 forbids in trailers (framing, routing,
    /// authentication, `Content-*` controls), which a recipient must not act on.
    public static func forwardableTrailers(_ trailers: HTTPHeaders) -> HTTPHeaders {
        var result = HTTPHeaders()
        for field in removingHopByHop(trailers) where !forbiddenInTrailers.contains(field.name.lowercased()) {
            result.add(field)
        }
        return result
    }

    static let forbiddenInTrailers: Set<String> = [
        "content-length", "content-type", "content-encoding", "content-range", "host", "authorization",
        "set-cookie", "cookie", "cache-control", "expect", "max-forwards", "pragma", "range", "www-authenticate",
    ]

    /// The request to send to the origin server: origin-form target with
    /// `Host` from an absolute-form URL, hop-by-hop fields removed, the body
    /// re-framed (`Content-Length` normalised, or `Transfer-Encoding: chunked`),
    /// `TE: trailers` kept if the client sent it, and `Via` added.
    public static func requestForUpstream(_ head: HTTP1RequestHead, via: String? = defaultVia) -> HTTP1RequestHead {
        let plan = RequestPlan(head)
        var headers = removingHopByHop(head.headers, keepingUpgrade: plan.upgrading)
        if let host = plan.host { headers.replaceOrAdd(name: "Host", value: host) }
        if plan.upgrading { headers.addWireSafe(name: "Connection", value: "upgrade") }
        if plan.keepsTETrailers { headers.addWireSafe(name: "TE", value: "trailers") }
        if let length = plan.contentLength { headers.setContentLength(length) }
        if plan.addsChunked { headers.addWireSafe(name: "Transfer-Encoding", value: "chunked") }
        if let via { headers.add(name: "Via", value: viaValue(version: head.version, via: via)) }
        return HTTP1RequestHead(method: head.method, target: plan.target, version: .http1_1, headers: headers, framing: plan.framing)
    }

    /// What forwarding changes in a request besides removing hop-by-hop
    /// fields: the rules both ``requestForUpstream(_:via:)`` and
    /// ``serializedRequestForUpstream(_:via:host:)`` apply, in this order.
    struct RequestPlan {
        /// Origin-form for an absolute-form request.
        var target: HTTP1RequestTarget
        /// The `Host` an absolute-form URL names.
        var host: String?
        /// An upgrade is relayed: `Upgrade` stays and `Connection: upgrade` is added.
        var upgrading: Bool
        /// The client accepts trailers (`TE: trailers` is kept).
        var keepsTETrailers: Bool
        /// The normalised `Content-Length`, or nil.
        var contentLength: Int?
        /// Whether `Transfer-Encoding: chunked` is added.
        var addsChunked: Bool
        /// How the body goes upstream: a body delimited by close goes chunked.
        var framing: HTTP1BodyFraming

        init(_ head: HTTP1RequestHead) {
            target = head.target
            if case .absolute(let url) = head.target {
                target = .origin(url.path)
                host = url.authority
            }
            upgrading = head.requestsUpgrade
            keepsTETrailers = head.headers.containsToken(.te, "trailers")
            switch head.framing {
            case .contentLength(let length): contentLength = length; addsChunked = false
            case .chunked, .untilClose: addsChunked = true
            case .none: addsChunked = false
            }
            framing = head.framing == .untilClose ? .chunked : head.framing
        }
    }

    /// The response to send to the client that made `request`.
    ///
    /// A body of unknown length goes to an HTTP/1.1 client chunked (so the
    /// connection can stay open) and to an HTTP/1.0 client delimited by
    /// close. `closeConnection` adds `Connection: close`; the result's
    /// ``HTTP1ResponseHead/keepAlive`` says whether the client connection may
    /// stay open afterwards.
    public static func responseForClient(
        _ head: HTTP1ResponseHead, to request: HTTP1RequestHead,
        closeConnection: Bool = false, via: String? = defaultVia
    ) -> HTTP1ResponseHead {
        let upgrading = head.status == 101
        var headers = removingHopByHop(head.headers, keepingUpgrade: upgrading)
        let plan = ResponsePlan(head, to: request, closeConnection: closeConnection)
        switch plan.contentLength {
        case .set(let length): headers.setContentLength(length)
        case .remove: headers.remove(name: "Content-Length")
        case .keep: break
        }
        if plan.addsChunked { headers.addWireSafe(name: "Transfer-Encoding", value: "chunked") }
        if let connection = plan.connection { headers.addWireSafe(name: "Connection", value: connection.rawValue) }
        if let via { headers.add(name: "Via", value: viaValue(version: head.version, via: via)) }
        // The proxy speaks HTTP/1.1 (RFC 9110 §6.2); framing above already suits a 1.0 client.
        return HTTP1ResponseHead(version: .http1_1, status: head.status, reason: head.reason, headers: headers, framing: plan.framing)
    }

    /// How a response is re-framed for the client that made the request, and
    /// the `Connection` value it carries: the rules both ``responseForClient(_:to:closeConnection:via:)``
    /// and ``serializedResponseForClient(_:to:closeConnection:via:)`` apply.
    struct ResponsePlan {
        enum ContentLength { case set(Int), remove, keep }
        enum Connection: String { case upgrade, close, keepAlive = "keep-alive" }

        /// How the body goes to the client.
        var framing: HTTP1BodyFraming
        var contentLength: ContentLength
        /// Whether `Transfer-Encoding: chunked` is added.
        var addsChunked = false
        var connection: Connection?
        /// Whether the client connection may stay open afterwards.
        var keepAlive: Bool

        init(_ head: HTTP1ResponseHead, to request: HTTP1RequestHead, closeConnection: Bool) {
            let upgrading = head.status == 101
            var close = closeConnection || !request.keepAlive
            framing = head.framing
            switch head.framing {
            case .contentLength(let length):
                contentLength = .set(length)
            case .chunked, .untilClose:
                contentLength = .remove
                if request.version == .http1_1 {
                    addsChunked = true
                    framing = .chunked
                } else {
                    framing = .untilClose
                    close = true
                }
            case .none:
                contentLength = .keep
            }
            if upgrading {
                connection = .upgrade
            } else if close {
                connection = .close
            } else if request.version == .http1_0 {
                connection = .keepAlive
            }
            // Every received Connection field is dropped: the one above is the only one.
            keepAlive = framing != .untilClose && (upgrading || !close)
        }
    }

    /// `1.1 pinproxy`: the received protocol version and the pseudonym (RFC 9110 §7.6.3).
    static func viaValue(version: HTTPVersion, via: String) -> String {
        if via == defaultVia {
            if version == .http1_1 { return defaultVia11 }
            if version == .http1_0 { return defaultVia10 }
        }
        return "\(version.major).\(version.minor) \(via)"
    }

    // Built once: most heads are 1.1 and most proxies keep the default pseudonym.
    private static let defaultVia11 = "1.1 \(defaultVia)"
    private static let defaultVia10 = "1.0 \(defaultVia)"
}
