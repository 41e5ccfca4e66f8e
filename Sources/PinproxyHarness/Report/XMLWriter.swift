/// A small XML element tree that writes itself as UTF-8 text, pretty-printed.
///
/// The JUnit report is built with this rather than Foundation's XMLDocument:
/// on Linux that type sits on libxml2, whose trees must be freed in order
/// (a document before its elements crashes) and whose global state is not
/// safe across threads, and it writes C0 control characters as character
/// references that XML 1.0 forbids. Here every attribute and text value is
/// escaped, and characters XML 1.0 cannot carry become U+FFFD.
struct XMLWriterElement {
    var name: String
    var attributes: [(String, String)] = []
    var text: String?
    var children: [XMLWriterElement] = []

    init(_ name: String, _ attributes: [(String, String)] = [], text: String? = nil) {
        self.name = name
        self.attributes = attributes
        self.text = text
    }

    /// The whole document: declaration, then this element as its root.
    func document() -> String {
        var output = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        write(into: &output, depth: 0)
        return output
    }

    private func write(into output: inout String, depth: Int) {
        let indent = String(repeating: "    ", count: depth)
        output += indent + "<" + name
        for (key, value) in attributes {
            output += " \(key)=\"\(Self.escaped(value, inAttribute: true))\""
        }
        if children.isEmpty, text == nil || text?.isEmpty == true {
            output += "></\(name)>\n"
            return
        }
        output += ">"
        if let text { output += Self.escaped(text, inAttribute: false) }
        if !children.isEmpty {
            output += "\n"
            for child in children { child.write(into: &output, depth: depth + 1) }
            output += indent
        }
        output += "</\(name)>\n"
    }

    /// `value` with markup characters as entities; in an attribute, also quotes
    /// and the white space an XML parser would otherwise normalise to spaces.
    static func escaped(_ value: String, inAttribute: Bool) -> String {
        var output = ""
        output.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"" where inAttribute: output += "&quot;"
            case "\n" where inAttribute: output += "&#10;"
            case "\r": output += "&#13;"
            case "\t" where inAttribute: output += "&#9;"
            default:
                output.unicodeScalars.append(allowedInXML(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return output
    }

    /// XML 1.0's Char production: tab, newline, carriage return, and every
    /// scalar from U+0020 except U+FFFE and U+FFFF.
    private static func allowedInXML(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: return true
        case 0x20...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }
}
