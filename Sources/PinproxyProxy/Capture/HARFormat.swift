import Foundation

/// HTTP Archive 1.2 entries (http://www.softwareishard.com/blog/har-12-spec/).
///
/// Fields HAR requires are always present; what HAR has no place for (TLS
/// details of both legs, the TLS outcome, the error) goes under `_pinproxy`,
/// as HAR allows custom fields that start with an underscore.
enum HARFormat {
    struct NameValue: Encodable {
        var name: String
        var value: String
    }

    struct Entry: Encodable {
        var startedDateTime: String
        var time: Double
        var request: Request
        var response: Response
        var cache: [String: String] = [:]
        var timings: Timings
        var comment: String?
        var _pinproxy: Extra
    }

    struct Request: Encodable {
        var method: String
        var url: String
        var httpVersion: String
        var cookies: [NameValue]
        var headers: [NameValue]
        var queryString: [NameValue]
        var postData: PostData?
        var headersSize: Int
        var bodySize: Int
    }

    struct PostData: Encodable {
        var mimeType: String
        var text: String
        var encoding: String?
        var comment: String?
    }

    struct Response: Encodable {
        var status: Int
        var statusText: String
        var httpVersion: String
        var cookies: [NameValue]
        var headers: [NameValue]
        var content: Content
        var redirectURL: String
        var headersSize: Int
        var bodySize: Int
    }

    struct Content: Encodable {
        var size: Int
        var mimeType: String
        var text: String?
        var encoding: String?
        var comment: String?
    }

    struct Timings: Encodable {
        var blocked: Double
        var dns: Double
        var connect: Double
        var send: Double
        var wait: Double
        var receive: Double
        var ssl: Double
    }

    struct Extra: Encodable {
        var id: String
        var clientAddress: String
        var clientTLS: ClientTLSDetails?
        var upstreamTLS: UpstreamTLSDetails?
        var outcome: TLSOutcomeEvent?
        var error: String?
    }

    static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }

    static func entry(for flow: Flow) -> Entry {
        let request = flow.request
        let requestMime = request.headers.first { $0.name.equalsIgnoringASCIICase("Content-Type") }?.value ?? ""
        var postData: PostData?
        if let body = request.body {
            let (text, encoding) = encode(body)
            postData = PostData(mimeType: requestMime, text: text, encoding: encoding,
                                comment: body.truncated ? "truncated to the first \(body.data.count) bytes" : nil)
        }
        let harRequest = Request(
            method: request.method, url: request.url, httpVersion: request.httpVersion,
            cookies: requestCookies(request.headers), headers: request.headers.map(pair),
            queryString: queryString(of: request.url), postData: postData,
            headersSize: request.headersSize, bodySize: request.bodySize)

        let harResponse: Response
        if let response = flow.response {
            var content = Content(size: response.bodySize, mimeType: response.mimeType)
            if let body = response.body {
                (content.text, content.encoding) = encode(body)
                if body.truncated { content.comment = "truncated to the first \(body.data.count) bytes" }
            }
            let location = response.headers.first { $0.name.equalsIgnoringASCIICase("Location") }?.value ?? ""
            harResponse = Response(
                status: response.status, statusText: response.reason, httpVersion: response.httpVersion,
                cookies: responseCookies(response.headers), headers: response.headers.map(pair), content: content,
                redirectURL: location, headersSize: response.headersSize, bodySize: response.bodySize)
        } else {
            // HAR needs a response; browsers record failed requests with status 0 the same way.
            harResponse = Response(
                status: 0, statusText: "", httpVersion: request.httpVersion, cookies: [], headers: [],
                content: Content(size: 0, mimeType: "x-unknown"), redirectURL: "", headersSize: -1, bodySize: -1)
        }
        let t = flow.timings
        return Entry(
            startedDateTime: timestamp(flow.startedAt), time: t.total, request: harRequest, response: harResponse,
            timings: Timings(blocked: t.blocked, dns: t.dns, connect: t.connect, send: max(0, t.send),
                             wait: max(0, t.wait), receive: max(0, t.receive), ssl: t.ssl),
            comment: flow.error,
            _pinproxy: Extra(id: flow.id, clientAddress: flow.clientAddress, clientTLS: flow.clientTLS,
                             upstreamTLS: flow.upstreamTLS, outcome: flow.outcome, error: flow.error))
    }

    private static func pair(_ header: FlowHeader) -> NameValue { NameValue(name: header.name, value: header.value) }

    /// UTF-8 bodies as text, anything else as base64 (HAR 1.2 `encoding`).
    private static func encode(_ body: CapturedBody) -> (String, String?) {
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
        guard let question = url.firstIndex(of: "?") else { return [] }
        var query = url[url.index(after: question)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        return query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String {
                let spaced = s.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            return NameValue(name: decode(parts[0]), value: parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}
