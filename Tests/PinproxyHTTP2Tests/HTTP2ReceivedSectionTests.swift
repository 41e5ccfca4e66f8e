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
        var texts = HTTP2FieldTextCache()
        return section(fields, texts: &texts)
    }

    private func takingRequest(_ section: HTTP2ReceivedSection) -> HTTP2RequestHead? {
        var section = section
        return section.takeRequestHead()
    }

    private func takingResponse(_ section: HTTP2ReceivedSection) -> HTTP2ResponseHead? {
        var section = section
        return section.takeResponseHead()
    }

    private func section(_ fields: [(String, String)], texts: inout HTTP2FieldTextCache) -> HTTP2ReceivedSection {
        var section = HTTP2ReceivedSection()
        for (name, value) in fields {
            Array(name.utf8).withUnsafeBufferPointer { name in
                Array(value.utf8).withUnsafeBufferPointer { value in section.add(name: name, value: value, texts: &texts) }
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
        let head = try #require(takingRequest(received))
        #expect(head.method == "POST")
        #expect(head.scheme == "https")
        #expect(head.authority == "api.example.test:8443")
        #expect(head.path == "/v1/items?q=1")
        #expect(head.headers.fields.map(\.name) == ["user-agent", "accept", "x-b", "x-a"])
        #expect(head.headers.fields[0].value == "client/1.0 (a long product token)")
        #expect(head.receivedFields.areChecked)
    }

    @Test func aConnectRequestHasNoSchemeOrPath() throws {
        let head = try #require(takingRequest(section([(":method", "CONNECT"), (":authority", "h.test:443")])))
        #expect(head.scheme == nil && head.path == nil)
        #expect(head.authority == "h.test:443")
    }

    @Test func aRequestWithoutAMethodMakesNoHead() {
        #expect(takingRequest(section([(":path", "/"), (":scheme", "https")])) == nil)
    }

    @Test func aResponseTakesItsStatusAndFields() throws {
        let received = section([(":status", "204"), ("date", "Fri, 27 Nov 2026 07:00:00 GMT"), ("server", "origin")])
        #expect(received.kind == .response)
        let head = try #require(takingResponse(received))
        #expect(head.status == 204)
        #expect(head.headers.fields.map(\.value) == ["Fri, 27 Nov 2026 07:00:00 GMT", "origin"])
        #expect(head.receivedFields.areChecked, "a received response is relayed without a second check")
        var changed = head
        changed.headers.add(name: "x-added", value: "1")
        #expect(!changed.receivedFields.areChecked, "changed fields are checked again when sent")
    }

    @Test(arguments: ["075", "20", "2000", "2a0", "099"])
    func aStatusThatIsNotThreeDigitsFrom100IsRefused(_ status: String) {
        let received = section([(":status", status), ("server", "origin")])
        #expect(received.kind == .response && received.status == nil)
        var refused = received
        #expect(refused.takeResponseHead() == nil)
    }

    @Test(arguments: ["100", "200", "999"])
    func everyStatusFrom100To999IsKept(_ status: String) throws {
        #expect(try #require(takingResponse(section([(":status", status)]))).status == Int(status))
    }

    @Test func aSectionOfRegularFieldsIsTrailersAndTheyAreChecked() {
        let received = section([("grpc-status", "0"), ("x-note", "a\u{0}b")])
        #expect(received.kind == .trailers)
        var trailers = received
        let fields = trailers.takeFields()
        #expect(fields.fields.map(\.name) == ["grpc-status", "x-note"])
        #expect(trailers.regular.isEmpty)
        // A value with NUL is not written as it is: the list looked at it.
        #expect(!fields.isWireSafe)
        #expect(section([("grpc-status", "0")]).regular.isWireSafe)
    }

    @Test func fieldTextThatIsNotUTF8KeepsEveryByte() throws {
        var received = HTTP2ReceivedSection()
        let name = Array(":method".utf8), value: [UInt8] = [0x47, 0xE9, 0x54]
        var texts = HTTP2FieldTextCache()
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { received.add(name: name, value: $0, texts: &texts) } }
        let head = try #require(takingRequest(received))
        #expect(head.method.unicodeScalars.map(\.value) == [0x47, 0xE9, 0x54])
    }

    @Test func repeatedSectionsShareTheirTextsAndChangedTextIsNew() throws {
        var texts = HTTP2FieldTextCache()
        let longAgent = "client/1.0 (a user agent longer than fifteen bytes)"
        func request(_ agent: String, _ path: String) -> [(String, String)] {
            [(":method", "GET"), (":scheme", "https"), (":path", path), ("user-agent", agent), ("accept", "*/*")]
        }
        let first = try #require(takingRequest(section(request(longAgent, "/a"), texts: &texts)))
        let second = try #require(takingRequest(section(request(longAgent, "/b"), texts: &texts)))
        #expect(second.path == "/b")
        #expect(second.headers.fields.map(\.value) == [longAgent, "*/*"])
        // Shared: the same storage, not only equal text.
        #expect(first.headers.fields[0].value.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
                == second.headers.fields[0].value.utf8.withContiguousStorageIfAvailable { $0.baseAddress })
        let changed = longAgent.replacingOccurrences(of: "1.0", with: "2.0")
        let third = try #require(takingRequest(section(request(changed, "/b"), texts: &texts)))
        #expect(third.headers.fields[0].value == changed)
        // A field at another place, and a section of another kind, get their own text.
        let response = try #require(takingResponse(section([(":status", "200"), ("server", "origin"), ("x", longAgent)], texts: &texts)))
        #expect(response.headers.fields.map(\.name) == ["server", "x"])
        #expect(response.headers.fields.map(\.value) == ["origin", longAgent])
        let again = try #require(takingRequest(section(request(changed, "/c"), texts: &texts)))
        #expect(again.headers.fields.map(\.value) == [changed, "*/*"])
        #expect(again.method == "GET" && again.scheme == "https" && again.path == "/c")
    }

    @Test func aShorterOrLongerTextAtARememberedPlaceIsItsOwn() {
        var texts = HTTP2FieldTextCache()
        func value(_ text: String) -> String { Array(text.utf8).withUnsafeBufferPointer { texts.value($0, at: 3) } }
        #expect(value("text/html; charset=utf-8") == "text/html; charset=utf-8")
        // A prefix of the remembered text, then the text again, then one that continues it.
        #expect(value("text/html") == "text/html")
        #expect(value("text/html; charset=utf-8") == "text/html; charset=utf-8")
        #expect(value("text/html; charset=utf-8; x") == "text/html; charset=utf-8; x")
        #expect(value("") == "")
        #expect(value("t") == "t")
    }

    @Test func textThatIsNotUTF8IsNeverTakenForTheTextItDecodedTo() throws {
        var texts = HTTP2FieldTextCache()
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]  // "café" in Latin-1
        let decoded = latin1.withUnsafeBufferPointer { texts.value($0, at: 0) }
        #expect(decoded.unicodeScalars.map(\.value) == [0x63, 0x61, 0x66, 0xE9])
        // The UTF-8 spelling of what the Latin-1 bytes decoded to is other bytes, the same text.
        let utf8 = Array("café".utf8)
        #expect(utf8.withUnsafeBufferPointer { texts.value($0, at: 0) } == "café")
        #expect(latin1.withUnsafeBufferPointer { texts.value($0, at: 0) }.unicodeScalars.map(\.value) == [0x63, 0x61, 0x66, 0xE9])
        #expect(Array("cafe".utf8).withUnsafeBufferPointer { texts.value($0, at: 0) } == "cafe")
    }

    @Test(arguments: [[0x80], [0x61, 0x80], [0xFF]] as [[UInt8]])
    func aByteAboveASCIIIsNeverTakenForASCII(_ value: [UInt8]) throws {
        var received = HTTP2ReceivedSection()
        let name = Array(":method".utf8)
        var texts = HTTP2FieldTextCache()
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { received.add(name: name, value: $0, texts: &texts) } }
        let head = try #require(takingRequest(received))
        #expect(head.method.unicodeScalars.map(\.value) == value.map(UInt32.init))
    }
}
