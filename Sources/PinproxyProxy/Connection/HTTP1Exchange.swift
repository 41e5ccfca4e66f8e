import Foundation
import PinproxyCertificates
import PinproxyHTTP1

/// One request and its response as they pass through the HTTP/1 layer, and
/// the flow they make once recorded. A class, so that updating it as bytes
/// pass does not copy its heads and flow in and out of an optional each time.
final class HTTP1Exchange {
    let request: HTTP1RequestHead
    let target: UpstreamTarget
    let names: TargetNames
    // Queue-confined; unchecked exclusivity as in HTTP1ExchangeLayer.
    @exclusivity(unchecked) var requestEnded = false
    /// How the response goes to the client, once its head was sent.
    @exclusivity(unchecked) var responseFraming: HTTP1BodyFraming?
    /// Whether the client connection may stay open after the response.
    @exclusivity(unchecked) var responseKeepsClient = false
    @exclusivity(unchecked) var upstreamStatus = 0
    @exclusivity(unchecked) var upstreamKeepAlive = true
    @exclusivity(unchecked) var inInterim = false
    /// What the flow will show; the flow itself is built once, when it is recorded.
    @exclusivity(unchecked) var response: FlowResponse?
    @exclusivity(unchecked) var upstreamTLS: UpstreamTLSDetails?
    @exclusivity(unchecked) var error: String?
    @exclusivity(unchecked) var requestBody: BodyCapture
    @exclusivity(unchecked) var responseBody: BodyCapture
    let started = Date()
    @exclusivity(unchecked) var requestSent: Date?
    @exclusivity(unchecked) var firstResponseByte: Date?

    init(request: HTTP1RequestHead, target: UpstreamTarget, names: TargetNames, requestBody: BodyCapture, responseBody: BodyCapture) {
        self.request = request
        self.target = target
        self.names = names
        self.requestBody = requestBody
        self.responseBody = responseBody
    }

    /// An interim (1xx) response for the client, or nil when it is not
    /// relayed (`100 Continue` the client did not ask for); the exchange
    /// waits for the final response meanwhile.
    func interim(_ head: HTTP1ResponseHead) -> [UInt8]? {
        inInterim = true
        guard head.status != 100 || request.expectsContinue else { return nil }
        return HTTP1ResponseHead(status: head.status, reason: head.reason, headers: HTTP1Forwarding.removingHopByHop(head.headers)).serialized()
    }

    /// Notes the final response head the client was sent, and how its body goes.
    func responseHeadSent(_ head: HTTP1ResponseHead, framing: HTTP1BodyFraming, keepsClient: Bool, upstreamKeepAlive: Bool) {
        responseFraming = framing
        responseKeepsClient = keepsClient
        upstreamStatus = head.status
        self.upstreamKeepAlive = upstreamKeepAlive
        response = FlowResponse(status: head.status, reason: head.reason, httpVersion: head.version.description, headers: head.headers.fields)
    }

    /// The exchange's flow, built in one go. `upstream`: the connection that
    /// carried it (its connect timings count for its first exchange only).
    func flow(clientAddress: String, clientTLS: ClientTLSDetails?, upstream: Upstream?, outcome: TLSOutcomeEvent?) -> Flow {
        let now = Date()
        let timings = FlowTimings.exchange(started: started, requestSent: requestSent, firstResponseByte: firstResponseByte,
                                           end: now, connect: upstream?.takeConnectTimings() ?? (connect: -1, ssl: -1))
        // As in `HTTP2Exchange.takeFlow`.
        let captured = responseBody.captured
        return Flow(
            startedAt: started, clientAddress: clientAddress, scheme: target.scheme,
            host: names.host, port: target.port, request: HTTP1Exchange.flowRequest(request, names: names, body: requestBody),
            response: response?.withBody(size: responseBody.size, captured: captured), timings: timings, clientTLS: clientTLS,
            upstreamTLS: upstreamTLS ?? upstream?.tlsDetails, outcome: outcome, error: error)
    }

    /// The flow of a request the proxy answered itself before an exchange
    /// began (a refusal, or the error of an upstream that failed earlier).
    static func answeredFlow(_ request: HTTP1RequestHead, target: UpstreamTarget?, names: TargetNames?, clientAddress: String,
                             clientTLS: ClientTLSDetails?, status: Int, reason: String) -> Flow {
        var flow = Flow(clientAddress: clientAddress, scheme: target?.scheme ?? "http",
                        host: target?.host.description ?? "", port: target?.port ?? 0,
                        request: flowRequest(request, names: names), clientTLS: clientTLS, error: reason)
        flow.response = FlowResponse(status: status, reason: HTTP1Response.reasonPhrase(for: status))
        return flow
    }

    /// The request side of a flow; the URL is absolute, named by the
    /// target's server name (or as written, when there is no target).
    static func flowRequest(_ head: HTTP1RequestHead, names: TargetNames?, body: BodyCapture? = nil) -> FlowRequest {
        let url: String
        if case .absolute(let absolute) = head.target { url = absolute.description }
        else if let names { url = names.url(path: head.target.path) }
        else { url = head.target.description }
        return FlowRequest(method: head.method, url: url, httpVersion: head.version.description,
                           headers: capturedFields(head.headers), headersSize: -1, bodySize: body?.size ?? 0, body: body?.captured)
    }

    /// What a flow shows of the client's fields: all of them, except that a Proxy-Authorization's
    /// credentials (the proxy's own, `--proxy-auth`; never sent upstream) read ``redacted``: flows
    /// and capture files are shared, the credentials must not go with them.
    static func capturedFields(_ headers: HTTPHeaders) -> [FlowHeader] {
        guard headers.contains(name: "proxy-authorization") else { return headers.fields }
        return headers.fields.map { field in
            field.name.equalsIgnoringASCIICase("proxy-authorization") ? FlowHeader(name: field.name, value: redacted) : field
        }
    }

    /// The value a flow shows for the proxy's credentials.
    static let redacted = "[redacted by pinproxy]"
}

/// The text forms of a target, kept: a keep-alive connection asks for the
/// same target's names with every request.
final class TargetNames {
    /// The host as flows show it.
    let host: String
    /// `scheme://authority` of request URLs, named by the server name.
    let urlPrefix: String
    /// The target's `Host` field value.
    let authority: String

    init(_ target: UpstreamTarget) {
        host = target.host.description
        urlPrefix = "\(target.scheme)://\(target.authority(naming: target.serverName))"
        authority = target.authority
    }

    /// ``urlPrefix`` followed by `path`, made in one allocation of the
    /// exact size: `+` grew a copy of the prefix (~580 instructions per flow).
    func url(path: String) -> String {
        var prefix = urlPrefix, path = path
        return prefix.withUTF8 { head in
            path.withUTF8 { tail in
                String(unsafeUninitializedCapacity: head.count + tail.count) { out in
                    _ = out.initialize(fromContentsOf: head)
                    _ = UnsafeMutableBufferPointer(rebasing: out[head.count...]).initialize(fromContentsOf: tail)
                    return head.count + tail.count
                }
            }
        }
    }

    /// The names of the last target, kept: a keep-alive connection asks for
    /// the same target's names with every request.
    struct Cache {
        private var last: (target: UpstreamTarget, names: TargetNames)?

        mutating func names(of target: UpstreamTarget) -> TargetNames {
            if let last, last.target == target { return last.names }
            let names = TargetNames(target)
            last = (target, names)
            return names
        }
    }
}
