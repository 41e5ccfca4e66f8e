import Dispatch
import Foundation
import PinproxyHTTP1
import PinproxyHTTP2

/// One HTTP/2 stream as it passes through the HTTP/2 layer: the client's
/// stream, the upstream stream it was relayed to, and the flow it makes
/// once recorded (HAR `httpVersion` "HTTP/2.0"). Touched only on its
/// connection's queue, so its stored state skips the run-time exclusivity checks.
final class HTTP2Exchange {
    let clientStream: HTTP2StreamID
    /// The stream on the upstream session, once the request went there.
    @exclusivity(unchecked) var upstreamStream: HTTP2StreamID?
    let request: HTTP2RequestHead
    /// The client's stream ended its request (END_STREAM or trailers).
    @exclusivity(unchecked) var requestEnded: Bool
    /// The leg that carries the stream: the layer's ``HTTP2ExchangeLayer/legGeneration``
    /// when it was opened (a stream stays on a leg whose upstream said GOAWAY
    /// until it is done; newer streams go to the next leg).
    @exclusivity(unchecked) var legGeneration = 0
    /// Request body bytes or trailers went to the upstream stream: the request
    /// cannot be sent again on another connection.
    @exclusivity(unchecked) var sentBodyUpstream = false
    /// The proxy answered the stream itself (an error status): its request body goes nowhere.
    @exclusivity(unchecked) var answeredLocally = false
    /// The upstream's response ended (END_STREAM on its last frame).
    @exclusivity(unchecked) var responseEnded = false
    /// The connection that carried the stream, when the layer's leg no longer names it: a translated
    /// stream's HTTP/1.1 connection, or the connection of a relay that went away (GOAWAY) and was
    /// let go (its TLS details and timings go in the flow).
    @exclusivity(unchecked) var upstreamConnection: Upstream?
    /// When the upstream's response head is due; nil when none is awaited (see `HTTP2ExchangeLayer.armResponseTimer`).
    @exclusivity(unchecked) var responseDeadline: DispatchTime?
    @exclusivity(unchecked) var response: FlowResponse?
    @exclusivity(unchecked) var error: String?
    @exclusivity(unchecked) var requestBody: BodyCapture
    @exclusivity(unchecked) var responseBody: BodyCapture
    let started = Date()
    @exclusivity(unchecked) var requestSent: Date?
    @exclusivity(unchecked) var firstResponseByte: Date?
    @exclusivity(unchecked) private(set) var recorded = false

    init(clientStream: HTTP2StreamID, request: HTTP2RequestHead, requestEnded: Bool, requestBody: BodyCapture,
         responseBody: BodyCapture) {
        self.clientStream = clientStream
        self.request = request
        self.requestEnded = requestEnded
        self.requestBody = requestBody
        self.responseBody = responseBody
    }

    /// What ``takeFlow(clientAddress:names:target:clientTLS:upstream:outcome:)``
    /// does besides building the flow, for a proxy that records none: true
    /// the first time, so a stream is counted once.
    func endUnrecorded() -> Bool {
        guard !recorded else { return false }
        recorded = true
        stopResponseClock()
        return true
    }

    /// The flow, built once; later calls return nil so a stream is recorded once.
    func takeFlow(clientAddress: String, names: TargetNames, target: UpstreamTarget, clientTLS: ClientTLSDetails?,
                  upstream: Upstream?, outcome: TLSOutcomeEvent?) -> Flow? {
        guard !recorded else { return nil }
        recorded = true
        let now = Date()
        let path = request.path ?? (request.method == "CONNECT" ? "" : "/")
        // The first byte rather than `hasPrefix("/")`, which compared by
        // grapheme clusters (~220 instructions).
        let url = path.utf8.first == UInt8(ascii: "/") || path == "*" ? names.url(path: path) : path
        let timings = FlowTimings.exchange(started: started, requestSent: requestSent, firstResponseByte: firstResponseByte,
                                           end: now, connect: upstream?.takeConnectTimings() ?? (connect: -1, ssl: -1))
        stopResponseClock()
        // The request and response are made in the call, by their
        // initialisers (see ``FlowRequest``), and the response's captured
        // body before: made in between, it had the response copied first.
        let captured = responseBody.captured
        // The pseudo-header fields first, as the client sent them (browsers' HAR files list them
        // too): the :authority a client asked for is in no other field of an HTTP/2 request.
        var headers: [FlowHeader] = [FlowHeader(name: ":method", value: request.method)]
        if let scheme = request.scheme { headers.append(FlowHeader(name: ":scheme", value: scheme)) }
        if let authority = request.authority { headers.append(FlowHeader(name: ":authority", value: authority)) }
        if let path = request.path { headers.append(FlowHeader(name: ":path", value: path)) }
        headers += request.headers.fields
        return Flow(
            startedAt: started, clientAddress: clientAddress, scheme: target.scheme, host: names.host, port: target.port,
            request: FlowRequest(method: request.method, url: url, httpVersion: HTTP2Exchange.versionText,
                                 headers: headers, headersSize: -1, bodySize: requestBody.size,
                                 body: requestBody.captured),
            response: response?.withBody(size: responseBody.size, captured: captured), timings: timings, clientTLS: clientTLS,
            upstreamTLS: upstream?.tlsDetails, outcome: outcome, error: error)
    }

    /// No response head is awaited any more (it came, or the stream is over).
    func stopResponseClock() {
        responseDeadline = nil
    }

    /// `HTTP/2.0`, made once: `HTTPVersion.description` builds it from the
    /// numbers each time (~800 instructions, twice per stream).
    static let versionText = HTTPVersion.http2.description

    /// The response side of the flow for a head that went to the client.
    static func flowResponse(_ head: HTTP2ResponseHead) -> FlowResponse {
        FlowResponse(status: head.status, reason: HTTP1Response.reasonPhrase(for: head.status),
                     httpVersion: HTTP2Exchange.versionText, headers: head.headers.fields)
    }

    /// The response side for an exchange whose flow nobody builds: its status
    /// alone, which says that the head came.
    static func unrecordedResponse(status: Int) -> FlowResponse {
        FlowResponse(status: status, reason: "", httpVersion: HTTP2Exchange.versionText)
    }
}
