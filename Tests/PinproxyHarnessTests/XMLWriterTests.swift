import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyBase
@testable import PinproxyHarness
import Testing

/// The JUnit writer's escaping, read back by a real XML parser.
@Suite struct XMLWriterTests {
    @Test func everyValueReadsBackAsWrittenOrWithControlsReplaced() throws {
        let hostile = "a <b> & \"c\" 'd'\n\tnext line\u{1}\u{1B}[31m ✓ \u{10FFFF}\u{FFFE}\u{FFFF}\u{FFFD}\r"
        var root = XMLWriterElement("testsuites", [("name", hostile)])
        root.children.append(XMLWriterElement("system-out", text: hostile))
        root.children.append(XMLWriterElement("skipped", [("message", "")]))
        let text = root.document()
        #expect(text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\""))
        #expect(!text.contains("\u{1}") && !text.contains("\u{1B}") && !text.contains("\u{FFFE}") && !text.contains("\u{FFFF}"))
        let expected = "a <b> & \"c\" 'd'\n\tnext line\u{FFFD}\u{FFFD}[31m ✓ \u{10FFFF}\u{FFFD}\u{FFFD}\u{FFFD}\r"
        try XMLSerialization.exclusively {
            let document = try XMLDocument(data: Data(text.utf8))
            let parsed = try #require(document.rootElement())
            #expect(parsed.attribute(forName: "name")?.stringValue == expected)
            #expect(parsed.elements(forName: "system-out").first?.stringValue == expected)
            #expect(parsed.elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue == "")
            withExtendedLifetime(document) {}
        }
    }
}
