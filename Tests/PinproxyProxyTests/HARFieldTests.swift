import Foundation
@testable import PinproxyProxy
import Testing

/// A HAR entry's derived fields, from one flow: cookies as HAR lists them, an exchange
/// without a response, and timings that HAR wants non-negative.
@Suite("HAR entry fields")
struct HARFieldTests {
    private func entry(_ flow: Flow) throws -> [String: Any] {
        var output = JSONOutput()
        output.harEntry(flow)
        let object = try JSONSerialization.jsonObject(with: Data(output.bytes))
        return try #require(object as? [String: Any])
    }

    private func pairs(_ list: Any?) -> [[String]] {
        ((list as? [[String: Any]]) ?? []).map { [$0["name"] as? String ?? "?", $0["value"] as? String ?? "?"] }
    }

    @Test("request cookies are the Cookie fields' pairs, split at ';'; response cookies are each Set-Cookie's pair without its attributes; a pair without a name is none")
    func cookies() throws {
        var flow = sampleFlow(1)
        flow.request.headers = [FlowHeader(name: "Host", value: "api.example.test"),
                                FlowHeader(name: "Cookie", value: "s=1; t=a,b;=nameless; novalue; u="),
                                FlowHeader(name: "cookie", value: "v=2")]
        flow.response?.headers = [FlowHeader(name: "Set-Cookie", value: "id=9; Path=/; HttpOnly"),
                                  FlowHeader(name: "set-cookie", value: "=x; Path=/"),
                                  FlowHeader(name: "Set-Cookie", value: "theme=dark;Max-Age=60")]
        let har = try entry(flow)
        let request = try #require(har["request"] as? [String: Any]), response = try #require(har["response"] as? [String: Any])
        #expect(pairs(request["cookies"]) == [["s", "1"], ["t", "a,b"], ["u", ""], ["v", "2"]])
        #expect(pairs(response["cookies"]) == [["id", "9"], ["theme", "dark"]])
    }

    @Test("an exchange without a response has HAR's empty response: status 0, content of size 0 and type x-unknown, sizes -1")
    func noResponse() throws {
        let har = try entry(sampleFlow(2, failed: true))
        let response = try #require(har["response"] as? [String: Any])
        #expect(response["status"] as? Int == 0)
        #expect(response["statusText"] as? String == "")
        #expect(response["httpVersion"] as? String == (har["request"] as? [String: Any])?["httpVersion"] as? String)
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] as? Int == 0 && content["mimeType"] as? String == "x-unknown", "\(content)")
        #expect(response["headersSize"] as? Int == -1 && response["bodySize"] as? Int == -1)
        #expect((response["headers"] as? [Any])?.isEmpty == true && (response["cookies"] as? [Any])?.isEmpty == true)
    }

    @Test("send, wait and receive are never negative (a clock step between two readings); -1 stays for the phases that did not happen")
    func timingsAreNotNegative() throws {
        var flow = sampleFlow(3)
        flow.timings = FlowTimings(connect: -1, ssl: -1, send: -0.25, wait: -3, receive: -0.5)
        let timings = try #require(try entry(flow)["timings"] as? [String: Any])
        for phase in ["send", "wait", "receive"] {
            #expect((timings[phase] as? Double).map { $0 >= 0 } == true, "\(phase): \(timings[phase] ?? "none")")
        }
        #expect(timings["connect"] as? Double == -1 && timings["ssl"] as? Double == -1 && timings["dns"] as? Double == -1)
    }
}
