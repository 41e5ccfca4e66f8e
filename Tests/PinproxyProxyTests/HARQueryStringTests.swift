import Foundation
@testable import PinproxyProxy
import Testing

/// HAR's `queryString`: each item of a URL's query as a name and a value,
/// `+` read as a space and percent escapes decoded, as form encoding has it.
@Suite("HAR query strings")
struct HARQueryStringTests {
    private func pairs(_ url: String) -> [[String]] {
        HARFormat.queryString(of: url).map { [$0.name, $0.value] }
    }

    @Test("items without + or % come out exactly as written, in order, empty names and values kept")
    func plainItems() {
        #expect(pairs("/a?x=1&y=two&z") == [["x", "1"], ["y", "two"], ["z", ""]])
        #expect(pairs("/a?=v&k=&k=2") == [["", "v"], ["k", ""], ["k", "2"]])
        #expect(pairs("/a?é=ü&ключ=значение") == [["é", "ü"], ["ключ", "значение"]])
        #expect(pairs("/a?q=a=b") == [["q", "a=b"]])
        #expect(pairs("/a?x=1#frag&y=2") == [["x", "1"]])
        #expect(pairs("/a") == [])
        #expect(pairs("https://h.test/p?1234") == [["1234", ""]])
    }

    @Test("+ is a space and percent escapes are decoded, in names and values")
    func decodedItems() {
        #expect(pairs("/s?q=a+b&x=%2F&na%6De=v%C3%A9") == [["q", "a b"], ["x", "/"], ["name", "vé"]])
        #expect(pairs("/s?plus=%2B&sp=%20+") == [["plus", "+"], ["sp", "  "]])
    }

    @Test("a malformed escape or one that is not UTF-8 is kept as written (with + still a space)")
    func malformedEscapes() {
        #expect(pairs("/s?a=100%&b=%zz+c&c=%FF") == [["a", "100%"], ["b", "%zz c"], ["c", "%FF"]])
    }
}
