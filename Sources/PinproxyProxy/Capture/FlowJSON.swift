import Foundation

/// Flows and TLS outcome events written as the JSON their `Codable`
/// conformances describe (the JSON lines file's `flow` and `event` objects),
/// without going through `JSONEncoder`.
///
/// Same member names, optional members left out when nil, dates as ISO 8601
/// with milliseconds and body bytes as base64, so `JSONDecoder` reads these
/// objects back into equal values (CaptureTests checks both directions).
extension JSONOutput {
    mutating func flow(_ flow: Flow) {
        beginObject()
        field("id", flow.id)
        field("startedAt", flow.startedAt)
        field("clientAddress", flow.clientAddress)
        field("scheme", flow.scheme)
        field("host", flow.host)
        field("port", flow.port)
        key("request")
        request(flow.request)
        member("response", flow.response) { $0.response($1) }
        key("timings")
        timings(flow.timings)
        member("clientTLS", flow.clientTLS) { $0.clientTLS($1) }
        member("upstreamTLS", flow.upstreamTLS) { $0.upstreamTLS($1) }
        member("outcome", flow.outcome) { $0.event($1) }
        field("error", flow.error)
        endObject()
    }

    /// `name` and the value `write` writes, when there is a value. Fields are
    /// handed on as they are borrowed from the flow: binding one (`if let`)
    /// copied it.
    mutating func member<Value>(_ name: StaticString, _ value: Value?, _ write: (inout JSONOutput, Value) -> Void) {
        guard let value else { return }
        key(name)
        write(&self, value)
    }

    /// The request (the bytes reused while the next flow's request is equal).
    mutating func request(_ request: FlowRequest) {
        cached(request, in: replay.request, keeping: request.body == nil) { output, request in
            output.beginObject()
            output.field("method", request.method)
            output.field("url", request.url)
            output.messageRest(request, headersIn: output.replay.requestHeaders)
        }
    }

    /// The response (reused like ``request(_:)``).
    mutating func response(_ response: FlowResponse) {
        cached(response, in: replay.response, keeping: response.body == nil) { output, response in
            output.beginObject()
            output.field("status", response.status)
            output.field("reason", response.reason)
            output.messageRest(response, headersIn: output.replay.responseHeaders)
        }
    }

    /// What follows either side's start line, to the end of its object.
    private mutating func messageRest(_ message: some FlowMessage, headersIn slot: JSONReplay.Slot<[FlowHeader]>) {
        field("httpVersion", message.httpVersion)
        key("headers")
        headers(message.headers, in: slot)
        field("headersSize", message.headersSize)
        field("bodySize", message.bodySize)
        if let body = message.body {
            key("body")
            capturedBody(body)
        }
        endObject()
    }

    /// `[{"name":...,"value":...}]`: the shape of header lists in both
    /// formats, reused from `slot` while the list repeats.
    mutating func headers(_ headers: [FlowHeader], in slot: JSONReplay.Slot<[FlowHeader]>) {
        guard !headers.isEmpty else {
            beginArray()
            return endArray()
        }
        cached(headers, in: slot) { output, headers in
            output.beginArray()
            for header in headers { output.nameValue(header.name, header.value) }
            output.endArray()
        }
    }

    mutating func nameValue(_ name: String, _ value: String) {
        beginObject()
        field("name", name)
        field("value", value)
        endObject()
    }

    mutating func timings(_ timings: FlowTimings) {
        beginObject()
        field("blocked", timings.blocked)
        field("dns", timings.dns)
        field("connect", timings.connect)
        field("ssl", timings.ssl)
        field("send", timings.send)
        field("wait", timings.wait)
        field("receive", timings.receive)
        endObject()
    }

    mutating func capturedBody(_ body: CapturedBody) {
        beginObject()
        field("data", body.data.base64EncodedString())
        field("truncated", body.truncated)
        endObject()
    }

    /// The client leg's TLS details (the bytes reused while a connection's flows repeat them).
    mutating func clientTLS(_ details: ClientTLSDetails) {
        cached(details, in: replay.clientTLS) { output, details in
            output.beginObject()
            output.field("sni", details.sni)
            output.field("version", details.version)
            output.field("cipher", details.cipher)
            output.field("alpn", details.alpn)
            output.field("forgedLeafPin", details.forgedLeafPin)
            output.field("forgedLeafSerial", details.forgedLeafSerial)
            output.field("profile", details.profile)
            output.endObject()
        }
    }

    /// The upstream leg's TLS details and chain (reused like ``clientTLS(_:)``).
    mutating func upstreamTLS(_ details: UpstreamTLSDetails) {
        cached(details, in: replay.upstreamTLS) { output, details in
            output.beginObject()
            output.field("version", details.version)
            output.field("cipher", details.cipher)
            output.field("alpn", details.alpn)
            output.field("verified", details.verified)
            output.field("verifierReason", details.verifierReason)
            if let resumed = details.resumed { output.field("resumed", resumed) }
            output.key("chain")
            output.beginArray()
            for certificate in details.chain { output.certificate(certificate) }
            output.endArray()
            output.endObject()
        }
    }

    mutating func certificate(_ summary: CertificateSummary) {
        beginObject()
        field("subject", summary.subject)
        field("issuer", summary.issuer)
        field("serial", summary.serial)
        field("notBefore", summary.notBefore)
        field("notAfter", summary.notAfter)
        key("subjectAlternativeNames")
        beginArray()
        for name in summary.subjectAlternativeNames { string(name) }
        endArray()
        field("spkiPin", summary.spkiPin)
        endObject()
    }

    /// An event with, as its `Encodable` conformance writes, the refusal grade
    /// and the message (the bytes reused while the same event repeats).
    mutating func event(_ event: TLSOutcomeEvent) {
        cached(event, in: replay.event) { output, event in
            output.beginObject()
            output.field("kind", event.kind.rawValue)
            output.field("host", event.host)
            output.field("port", event.port)
            output.field("clientAddress", event.clientAddress)
            output.field("time", event.time)
            output.field("alert", event.alert)
            output.field("reason", event.reason)
            output.field("profile", event.profile)
            output.field("refusal", event.refusal?.rawValue)
            output.field("message", event.message)
            output.endObject()
        }
    }

    /// One line of the JSON lines file: `{"type":"flow","flow":{...}}` or
    /// `{"type":"event","event":{...}}`, and its newline.
    mutating func line(_ record: CaptureRecord) {
        beginObject()
        switch record {
        case .flow(let flow):
            field("type", "flow")
            key("flow")
            self.flow(flow)
        case .event(let event):
            field("type", "event")
            key("event")
            self.event(event)
        }
        endObject()
        raw(JSONOutput.newline)
        nextDocument()
    }

    private static let newline: [UInt8] = [0x0a]
}
