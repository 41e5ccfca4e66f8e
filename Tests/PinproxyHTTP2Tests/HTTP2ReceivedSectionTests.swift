@testable import PinproxyHTTP1
@testable import PinproxyHTTP2
import Testing

/// A received header section becomes a head with its fields in place:
/// pseudo-header fields in their places, regular fields in order, the kind
/// told by the first field, a bad `:status` refused, and trailers checked
/// as any other list.
@Suite("HTTP/2 received header sections")
struct HTTP2ReceivedSectionTests {
    private func section(_ fields: [(String, String)]) -> HTTP2ReceivedSection {
        var section = HTTP2ReceivedSection()
        for (name, value) in fields {
            Array(name.utf8).withUnsafeBufferPointer { name in
                Array(value.utf8).withUnsafeBufferPointer { value in section.add(name: name, value: value) }
            }
        }
        return section
    }

    @Test func aRequestKeepsItsPseudoHeadersAndItsFieldsInOrder() throws {
        let received = section([(":method", "POST"), (":scheme", "https"), (":authority", "api.example.test:8443"),
                                (":path", "/v1/items?q=1"), (":protocol", "websocket"),
                                ("user-agent", "client/1.0 (a long product token)"), ("accept", "*/*"), ("x-b", "2"), ("x-a", "1")])
        #expect(received.kind == .request)
        #expect(received.count == 9)
        let head = try #require(HTTP2RequestHead(received: received))
        #expect(head.method == "POST")
        #expect(head.scheme == "https")
        #expect(head.authority == "api.example.test:8443")
        #expect(head.path == "/v1/items?q=1")
        #expect(head.headers.fields.map(\.name) == ["user-agent", "accept", "x-b", "x-a"])
        #expect(head.headers.fields[0].value == "client/1.0 (a long product token)")
        #expect(head.receivedFields.areChecked)
    }

    @Test func aConnectRequestHasNoSchemeOrPath() throws {
        let head = try #require(HTTP2RequestHead(received: section([(":method", "CONNECT"), (":authority", "h.test:443")])))
        #expect(head.scheme == nil && head.path == nil)
        #expect(head.authority == "h.test:443")
    }

    @Test func aRequestWithoutAMethodMakesNoHead() {
        #expect(HTTP2RequestHead(received: section([(":path", "/"), (":scheme", "https")])) == nil)
    }

    @Test func aResponseTakesItsStatusAndFields() throws {
        let received = section([(":status", "204"), ("date", "Fri, 27 Nov 2026 07:00:00 GMT"), ("server", "origin")])
        #expect(received.kind == .response)
        let head = try #require(HTTP2ResponseHead(received: received))
        #expect(head.status == 204)
        #expect(head.headers.fields.map(\.value) == ["Fri, 27 Nov 2026 07:00:00 GMT", "origin"])
    }

    @Test(arguments: ["075", "20", "2000", "2a0", "099"])
    func aStatusThatIsNotThreeDigitsFrom100IsRefused(_ status: String) {
        let received = section([(":status", status), ("server", "origin")])
        #expect(received.kind == .response && received.hasStatus)
        #expect(HTTP2ResponseHead(received: received) == nil)
    }

    @Test(arguments: ["100", "200", "999"])
    func everyStatusFrom100To999IsKept(_ status: String) throws {
        #expect(try #require(HTTP2ResponseHead(received: section([(":status", status)]))).status == Int(status))
    }

    @Test func aSectionOfRegularFieldsIsTrailersAndTheyAreChecked() {
        let received = section([("grpc-status", "0"), ("x-note", "a\u{0}b")])
        #expect(received.kind == .trailers)
        #expect(received.regular.fields.map(\.name) == ["grpc-status", "x-note"])
        // A value with NUL is not written as it is: the list looked at it.
        #expect(!received.regular.isWireSafe)
        #expect(section([("grpc-status", "0")]).regular.isWireSafe)
    }

    @Test func fieldTextThatIsNotUTF8KeepsEveryByte() throws {
        var received = HTTP2ReceivedSection()
        let name = Array(":method".utf8), value: [UInt8] = [0x47, 0xE9, 0x54]
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { received.add(name: name, value: $0) } }
        let head = try #require(HTTP2RequestHead(received: received))
        #expect(head.method.unicodeScalars.map(\.value) == [0x47, 0xE9, 0x54])
    }
}
