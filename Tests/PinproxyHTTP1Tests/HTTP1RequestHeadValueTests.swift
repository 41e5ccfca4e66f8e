import PinproxyHTTP1
import Testing

/// A request head is a value: its parts are shared between copies only
/// until one of them changes.
@Suite("HTTP/1.1 request heads as values")
struct HTTP1RequestHeadValueTests {
    private static func head() throws -> HTTP1RequestHead {
        var parser = HTTP1Parser(mode: .request)
        let events = try parser.feed(Array("POST /a?b HTTP/1.1\r\nHost: example.test\r\nContent-Length: 3\r\nX-Trace: 1\r\n\r\nabc".utf8))
        let head = events.first.flatMap { event -> HTTP1RequestHead? in
            if case .requestHead(let head) = event { return head }
            return nil
        }
        return try #require(head, "no head in \(events)")
    }

    @Test("changing a copy, part by part, leaves the original as it was")
    func copiesAreIndependent() throws {
        let original = try Self.head()
        let before = original

        var copy = original
        copy.method = "PUT"
        copy.target = .origin("/elsewhere")
        copy.version = .http1_0
        copy.headers.add(name: "Via", value: "1.1 proxy")
        copy.headers.remove(name: "X-Trace")
        copy.framing = .chunked

        #expect(original.method == "POST")
        #expect(original.target == .origin("/a?b"))
        #expect(original.version == .http1_1)
        #expect(original.headers["X-Trace"] == ["1"] && original.headers["Via"].isEmpty)
        #expect(original.framing == .contentLength(3))
        #expect(original == before)

        #expect(copy.method == "PUT" && copy.target == .origin("/elsewhere") && copy.version == .http1_0)
        #expect(copy.headers["Via"] == ["1.1 proxy"] && copy.headers["X-Trace"].isEmpty && copy.framing == .chunked)
        #expect(copy != original)
    }

    @Test("a head changed in place, with no copy of it around, keeps the change")
    func changedInPlace() throws {
        var head = try Self.head()
        head.headers.add(name: "X-More", value: "2")
        head.method = "GET"
        #expect(head.headers["X-More"] == ["2"] && head.method == "GET")
    }

    @Test("equal heads hash alike, whether they share their parts or were built apart")
    func equalityAndHashing() throws {
        let parsed = try Self.head()
        let built = HTTP1RequestHead(method: "POST", target: .origin("/a?b"), version: .http1_1,
                                     headers: ["Host": "example.test", "Content-Length": "3", "X-Trace": "1"], framing: .contentLength(3))
        #expect(parsed == built)
        #expect(Set([parsed, built, parsed]).count == 1)
        var other = built
        other.headers.add(name: "X-Trace", value: "2")
        #expect(other != built)
        #expect(Set([parsed, other]).count == 2)
    }
}
