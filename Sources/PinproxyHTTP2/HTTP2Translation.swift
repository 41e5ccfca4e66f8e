import PinproxyBase
import PinproxyHTTP1

/// Heads translated between HTTP/2 and HTTP/1.1, for a proxy whose two legs
/// speak different versions (client h2 ↔ origin HTTP/1.1, and the reverse).
///
/// What changes (RFC 9113 §8.2–§8.3):
/// - `Host` becomes `:authority` and back; when both are present `:authority` wins.
/// - Connection-specific fields never reach HTTP/2: the hop-by-hop fields
///   ``HTTP1Forwarding`` removes (`Connection` and what it names,
///   `Keep-Alive`, `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`, `TE`, ...),
///   except that `TE: trailers` is kept.
/// - Field names are lower-cased for HTTP/2.
/// - Cookie crumbs, which HTTP/2 may split into several `cookie` fields, are
///   joined with `; ` into one field for HTTP/1.1 (§8.2.3).
/// - Bodies are re-framed: an HTTP/1.1 head gets `Content-Length` when it is
///   known and `Transfer-Encoding: chunked` otherwise.
public enum HTTP2Translation {
    /// Fields for HTTP/2 (a request's or a response's): hop-by-hop fields removed, `Host`
    /// too when `droppingHost`, names lower case, `te: trailers` kept when the head had it.
    /// Fields of a wire-safe head (parsed: token names, no CR, LF or NUL in values) stay
    /// wire-safe without another look at their bytes, and once lower-cased are what
    /// HTTP/2 accepts (``HTTP2ResponseHead/init(http1:)``).
    static func http2Fields(_ headers: HTTPHeaders, droppingHost: Bool) -> HTTPHeaders {
        var result = HTTPHeaders()
        result.reserveCapacity(headers.count + 1)
        let safe = headers.isWireSafe
        HTTP1Forwarding.forEachEndToEnd(headers) { field in
            let name = field.name.asciiLowercased
            if droppingHost && name == "host" { return }
            if safe { result.addWireSafe(name: name, value: field.value) } else { result.add(name: name, value: field.value) }
        }
        if headers.containsToken(name: "TE", token: "trailers") { result.addWireSafe(name: "te", value: "trailers") }
        return result
    }

    /// HTTP/2 fields for HTTP/1.1: cookie crumbs joined, `host` left out
    /// (the caller writes it from `:authority`).
    static func http1Fields(_ headers: HTTPHeaders) -> HTTPHeaders {
        var result = HTTPHeaders()
        result.reserveCapacity(headers.count + 2)
        let safe = headers.isWireSafe
        var cookieWritten = false
        for field in headers {
            let name = field.name.asciiLowercased
            if name == "host" { continue }
            if name == "cookie" {
                if !cookieWritten { result.add(name: "cookie", value: headers["cookie"].joined(separator: "; ")) }
                cookieWritten = true
                continue
            }
            if safe { result.addWireSafe(name: field.name, value: field.value) } else { result.add(name: field.name, value: field.value) }
        }
        return result
    }

    /// Trailer fields to send over HTTP/2: those fit to relay, names lower case.
    public static func http2Trailers(_ trailers: HTTPHeaders) -> HTTPHeaders {
        var result = HTTPHeaders()
        for field in HTTP1Forwarding.forwardableTrailers(trailers) { result.add(name: field.name.lowercased(), value: field.value) }
        return result
    }

    /// Trailer fields received over HTTP/2, for an HTTP/1.1 chunked body.
    public static func http1Trailers(_ trailers: HTTPHeaders) -> HTTPHeaders {
        HTTP1Forwarding.forwardableTrailers(trailers)
    }

    /// The framing an HTTP/1.1 head gets for a body that is `length` long,
    /// empty (`endStream`), or of unknown length; `headers` is changed to say so.
    static func frame(_ headers: inout HTTPHeaders, endStream: Bool, emptyWithLength: Bool) -> HTTP1BodyFraming {
        // Most heads have no content-length (a GET): one indexed look instead of two scans.
        if headers.contains(name: "content-length") {
            let lengths = headers["content-length"]
            if let first = lengths.first, lengths.allSatisfy({ $0 == first }), let length = Int(first), length >= 0 {
                headers.replaceOrAdd(name: "content-length", value: String(length))
                return .contentLength(length)
            }
            headers.remove(name: "content-length")
        }
        if endStream {
            if emptyWithLength { headers.add(name: "content-length", value: "0") }
            return emptyWithLength ? .contentLength(0) : .none
        }
        headers.add(name: "transfer-encoding", value: "chunked")
        return .chunked
    }

    /// `host:port` (or `[v6]:port`) of a CONNECT `:authority`.
    static func connectTarget(_ authority: String) throws(HTTP2Error) -> (HostName, Int) {
        guard let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]),
              (1...65535).contains(port) else {
            throw HTTP2Error(.invalidHead, "the CONNECT authority '\(authority)' is not host:port")
        }
        var host = String(authority[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        do {
            return (try HostName(validating: host), port)
        } catch {
            throw HTTP2Error(.invalidHead, "the CONNECT authority '\(authority)' has no valid host")
        }
    }
}

extension HTTP2RequestHead {
    /// The HTTP/2 form of an HTTP/1.1 request. `scheme` is the one the
    /// request arrived under (`https` once TLS is intercepted); an
    /// absolute-form target brings its own.
    public init(http1 head: HTTP1RequestHead, scheme: String = "https") {
        let headers = HTTP2Translation.http2Fields(head.headers, droppingHost: true)
        let host = head.headers.first(name: "Host")
        switch head.target {
        case .origin(let path):
            self.init(method: head.method, scheme: scheme, authority: host, path: path, headers: headers)
        case .absolute(let url):
            self.init(method: head.method, scheme: url.scheme, authority: url.authority, path: url.path, headers: headers)
        case .authority(let name, let port):
            self.init(method: head.method, scheme: nil, authority: "\(name.uriHost):\(port)", path: nil, headers: headers)
        case .asterisk:
            self.init(method: head.method, scheme: scheme, authority: host, path: "*", headers: headers)
        }
    }

    /// The HTTP/1.1 form of this request: `Host` from `:authority`, cookie
    /// crumbs joined, and framing from `content-length`, or none when
    /// `endStream` says there is no body, or chunked.
    public func http1Head(endStream: Bool) throws(HTTP2Error) -> HTTP1RequestHead {
        let target: HTTP1RequestTarget
        if method == "CONNECT" {
            guard let authority else { throw HTTP2Error(.invalidHead, "a CONNECT request has no :authority") }
            let (host, port) = try HTTP2Translation.connectTarget(authority)
            target = .authority(host: host, port: port)
        } else if path == "*" {
            target = .asterisk
        } else if let path, path.hasPrefix("/") {
            target = .origin(path)
        } else {
            throw HTTP2Error(.invalidHead, "the request has no origin-form :path")
        }
        var headers = HTTPHeaders()
        if let host = authority ?? self.headers.first(name: "host") { headers.add(name: "Host", value: host) }
        for field in HTTP2Translation.http1Fields(self.headers) { headers.add(field) }
        let framing = method == "CONNECT" ? .none : HTTP2Translation.frame(&headers, endStream: endStream, emptyWithLength: false)
        return HTTP1RequestHead(method: method, target: target, version: .http1_1, headers: headers, framing: framing)
    }
}

extension HTTP2ResponseHead {
    /// The HTTP/2 form of an HTTP/1.1 response; 101 has none (HTTP/2 has no upgrade).
    public init(http1 head: HTTP1ResponseHead) throws(HTTP2Error) {
        guard head.status != 101 else { throw HTTP2Error(.invalidHead, "101 Switching Protocols cannot be sent over HTTP/2") }
        self.init(status: head.status, headers: HTTP2Translation.http2Fields(head.headers, droppingHost: false))
        // A parsed head's fields, lower-cased and without the connection-specific ones, are
        // what nghttp2 would have accepted on receipt: sending needs no second look.
        receivedFields.areChecked = head.headers.isWireSafe
    }

    /// The fields of `head`'s HTTP/2 form, the ones ``init(http1:)`` keeps and
    /// in its order, laid out for nghttp2 straight from the HTTP/1.1 head's
    /// fields: names lower-cased in place, no headers made in between (each
    /// field's texts were retained, lower-cased into new text and indexed
    /// again). Nil for a head that is not wire-safe, which goes through
    /// ``init(http1:)`` and the check on sending, and for 101 or a status
    /// outside 100 to 999.
    static func fieldList(http1 head: HTTP1ResponseHead) -> HTTP2FieldList? {
        guard head.status != 101, (100...999).contains(head.status), head.headers.isWireSafe else { return nil }
        let keepsTE = head.headers.containsToken(name: "TE", token: "trailers")
        let fields = head.headers.fields
        // At most every field, `:status` and its three digits, and `te: trailers`.
        return HTTP2FieldList(count: fields.count + 2, byteCount: HTTP2FieldList.byteCount(fields) + 20) { list in
            list.add(status: head.status)
            HTTP1Forwarding.forEachEndToEnd(head.headers) { field in list.add(lowercasing: field.name, value: field.value) }
            if keepsTE { list.add(name: "te", value: "trailers") }
        }
    }

    /// The HTTP/1.1 form of this response to a `requestMethod` request:
    /// no body for HEAD, 1xx, 204 and 304; else `content-length` when known
    /// (0 when `endStream` says the body is empty) and chunked otherwise.
    public func http1Head(requestMethod: String, endStream: Bool) -> HTTP1ResponseHead {
        var headers = HTTP2Translation.http1Fields(self.headers)
        let framing: HTTP1BodyFraming
        if requestMethod == "HEAD" || isInformational || status == 204 || status == 304 {
            framing = .none
        } else {
            framing = HTTP2Translation.frame(&headers, endStream: endStream, emptyWithLength: true)
        }
        return HTTP1ResponseHead(version: .http1_1, status: status, headers: headers, framing: framing)
    }
}
