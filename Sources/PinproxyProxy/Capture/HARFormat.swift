import Foundation

/// HTTP Archive 1.2 entries (http://www.softwareishard.com/blog/har-12-spec/).
///
/// Fields HAR requires are always present; what HAR has no place for (TLS
/// details of both legs, the TLS outcome, the error) goes under `_pinproxy`,
/// as HAR allows custom fields that start with an underscore.
enum HARFormat {
    struct NameValue: Equatable {
        var name: String
        var value: String
    }

    /// ISO 8601 with milliseconds, as `startedDateTime` and the JSON lines dates are written.
    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    /// UTF-8 bodies as text, anything else as base64 (HAR 1.2 `encoding`).
    static func encode(_ body: CapturedBody) -> (String, String?) {
        if let text = body.text { return (text, nil) }
        return (body.data.base64EncodedString(), "base64")
    }

    static func requestCookies(_ headers: [FlowHeader]) -> [NameValue] {
        headers.filter { $0.name.equalsIgnoringASCIICase("Cookie") }.flatMap { field in
            field.value.split(separator: ";").compactMap { cookie(String($0)) }
        }
    }

    static func responseCookies(_ headers: [FlowHeader]) -> [NameValue] {
        headers.filter { $0.name.equalsIgnoringASCIICase("Set-Cookie") }.compactMap { field in
            cookie(String(field.value.split(separator: ";", maxSplits: 1).first ?? ""))
        }
    }

    private static func cookie(_ text: String) -> NameValue? {
        let trimmed = text.trimmingHTTPWhitespace()
        guard let equals = trimmed.firstIndex(of: "="), equals != trimmed.startIndex else { return nil }
        return NameValue(name: String(trimmed[..<equals]), value: String(trimmed[trimmed.index(after: equals)...]))
    }

    static func queryString(of url: String) -> [NameValue] {
        // Searched as bytes first: a Character search walks grapheme clusters.
        guard url.utf8.contains(UInt8(ascii: "?")), let question = url.firstIndex(of: "?") else { return [] }
        var query = url[url.index(after: question)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        return query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                // Most names and values have nothing to decode: they are taken
                // as they are, not through Foundation's replacing and percent
                // decoding (about 14,000 instructions each per query item).
                if !s.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) { return String(s) }
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return NameValue(name: decode(parts[0]), value: parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}

extension JSONOutput {
    /// One HAR 1.2 entry for `flow`.
    mutating func harEntry(_ flow: Flow) {
        beginObject()
        field("startedDateTime", flow.startedAt)
        let t = flow.timings
        field("time", t.total)
        key("request")
        harRequest(flow.request)
        key("response")
        harResponse(flow.response, requestVersion: flow.request.httpVersion)
        key("cache")
        beginObject()
        endObject()
        key("timings")
        beginObject()
        field("blocked", t.blocked)
        field("dns", t.dns)
        field("connect", t.connect)
        field("send", max(0, t.send))
        field("wait", max(0, t.wait))
        field("receive", max(0, t.receive))
        field("ssl", t.ssl)
        endObject()
        field("comment", flow.error)
        key("_pinproxy")
        beginObject()
        field("id", flow.id)
        field("clientAddress", flow.clientAddress)
        member("clientTLS", flow.clientTLS) { $0.clientTLS($1) }
        member("upstreamTLS", flow.upstreamTLS) { $0.upstreamTLS($1) }
        member("outcome", flow.outcome) { $0.event($1) }
        field("error", flow.error)
        endObject()
        endObject()
    }

    /// The request (the bytes reused while the next flow's request is equal).
    private mutating func harRequest(_ request: FlowRequest) {
        cached(request, in: replay.harRequest, keeping: request.body == nil) { $0.writeHARRequest($1) }
    }

    private mutating func writeHARRequest(_ request: FlowRequest) {
        beginObject()
        field("method", request.method)
        field("url", request.url)
        field("httpVersion", request.httpVersion)
        key("cookies")
        nameValues(HARFormat.requestCookies(request.headers))
        key("headers")
        headers(request.headers, in: replay.requestHeaders)
        key("queryString")
        nameValues(HARFormat.queryString(of: request.url))
        if let body = request.body {
            key("postData")
            beginObject()
            field("mimeType", request.mimeType)
            harText(body)
            endObject()
        }
        harSizes(request)
    }

    /// The response, or for an exchange without one the status-0 response
    /// HAR needs (browsers record failed requests the same way).
    private mutating func harResponse(_ response: FlowResponse?, requestVersion: String) {
        guard let response else {
            beginObject()
            field("status", 0)
            field("statusText", "")
            field("httpVersion", requestVersion)
            key("cookies")
            nameValues([])
            key("headers")
            beginArray()
            endArray()
            key("content")
            beginObject()
            field("size", 0)
            field("mimeType", "x-unknown")
            endObject()
            field("redirectURL", "")
            field("headersSize", -1)
            field("bodySize", -1)
            endObject()
            return
        }
        cached(response, in: replay.harResponse, keeping: response.body == nil) { $0.writeHARResponse($1) }
    }

    private mutating func writeHARResponse(_ response: FlowResponse) {
        beginObject()
        field("status", response.status)
        field("statusText", response.reason)
        field("httpVersion", response.httpVersion)
        key("cookies")
        nameValues(HARFormat.responseCookies(response.headers))
        key("headers")
        headers(response.headers, in: replay.responseHeaders)
        key("content")
        beginObject()
        field("size", response.bodySize)
        field("mimeType", response.mimeType)
        if let body = response.body { harText(body) }
        endObject()
        field("redirectURL", response.firstValue(of: "Location"))
        harSizes(response)
    }

    /// A captured body as HAR's `text` (base64 when it is not UTF-8), with a comment when it was cut.
    private mutating func harText(_ body: CapturedBody) {
        let (text, encoding) = HARFormat.encode(body)
        field("text", text)
        field("encoding", encoding)
        if body.truncated { field("comment", "truncated to the first \(body.data.count) bytes") }
    }

    /// Either side's sizes, last in its object, and the end of the object.
    private mutating func harSizes(_ message: some FlowMessage) {
        field("headersSize", message.headersSize)
        field("bodySize", message.bodySize)
        endObject()
    }

    private mutating func nameValues(_ pairs: [HARFormat.NameValue]) {
        beginArray()
        for pair in pairs { nameValue(pair.name, pair.value) }
        endArray()
    }
}
