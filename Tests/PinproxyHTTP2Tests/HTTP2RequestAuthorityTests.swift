import PinproxyHTTP1
@testable import PinproxyHTTP2
import Testing

/// A relay names the origin in `:authority` without copying the head to
/// change it (``HTTP2Session/sendRequest(_:authority:endStream:)``): the peer
/// gets the replacement and every other field as it was, whether the head
/// was received (sent without a second check) or built.
@Suite("HTTP/2 requests sent with another :authority")
struct HTTP2RequestAuthorityTests {
    /// Sends `head` from a client session with `authority`, returns the head the server got.
    private func relay(_ head: HTTP2RequestHead, authority: String?) throws -> HTTP2RequestHead {
        let pair = try SessionPair()
        _ = try pair.client.sendRequest(head, authority: authority, endStream: true)
        var received: HTTP2RequestHead?
        pair.pump { side, event in
            if side == .server, case .request(_, let head, _) = event { received = head }
        }
        return try #require(received)
    }

    /// A head as a server session received it (its fields marked as checked).
    private func receivedHead() throws -> HTTP2RequestHead {
        var head = HTTP2RequestHead(method: "GET", scheme: "https", authority: "proxy.test:8443", path: "/v1/items?x=1",
                                    headers: ["user-agent": "client/1.0", "accept": "*/*"])
        let pair = try SessionPair()
        _ = try pair.client.sendRequest(head, endStream: true)
        pair.pump { side, event in
            if side == .server, case .request(_, let got, _) = event { head = got }
        }
        #expect(head.receivedFields.areChecked)
        return head
    }

    @Test func aReceivedHeadGoesWithTheOriginsNameAndNothingElseChanged() throws {
        let head = try receivedHead()
        let got = try relay(head, authority: "origin.test:443")
        #expect(got.authority == "origin.test:443")
        #expect(got.method == "GET" && got.scheme == "https" && got.path == "/v1/items?x=1")
        #expect(got.headers.fields.map(\.name) == ["user-agent", "accept"])
        #expect(got.headers.fields.map(\.value) == ["client/1.0", "*/*"])
        // The head given is not changed.
        #expect(head.authority == "proxy.test:8443")
    }

    @Test func aBuiltHeadGoesWithTheReplacementToo() throws {
        let head = HTTP2RequestHead(method: "POST", scheme: "https", authority: nil, path: "/", headers: ["X-Trace": "1"])
        let got = try relay(head, authority: "origin.test")
        #expect(got.authority == "origin.test")
        #expect(got.headers.fields.map(\.name) == ["x-trace"])
    }

    @Test func withoutAReplacementTheHeadsOwnNameGoes() throws {
        #expect(try relay(try receivedHead(), authority: nil).authority == "proxy.test:8443")
    }
}
