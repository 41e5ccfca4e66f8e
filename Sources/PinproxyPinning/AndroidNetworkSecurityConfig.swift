import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyCertificates

/// An app's `res/xml/network_security_config.xml`, read strictly.
///
/// Understood: `base-config`, `domain-config` (nested, with `domain
/// includeSubdomains`), `trust-anchors` with `certificates src="system" | "user" |
/// "@raw/name"` and `overridePins`, `pin-set expiration="yyyy-MM-dd"` with
/// `pin digest="SHA-256"`, and `debug-overrides` (parsed, then ignored: release
/// builds are not debuggable). `cleartextTrafficPermitted` and `hstsEnforced` are accepted
/// and have no bearing on certificate trust; `<certificateTransparency enabled=...>` (Android
/// 16, in base-config and domain-config) is accepted and recorded, but Certificate
/// Transparency is not modelled, which the verdict says. A domain named twice anywhere in
/// the file — in two domain-configs, twice in one, in a nested child and its parent, in
/// other letter case or spacing, with or without `includeSubdomains` — is an error, as
/// Android's `XmlConfigSource.parseDomain` refuses the whole file ("has already been
/// specified"). Anything else — an unknown element or attribute, a pin that is not 32
/// bytes of base64, a bad date, a raw resource that cannot be found — is an error naming
/// the file and line (Android skips unknown elements; pinproxy refuses them so a
/// misspelt `<pin-set>` is not silently ignored).
public struct NetworkSecurityConfig: Sendable {
    /// One `<certificates>` element.
    public struct CertificatesSource: Sendable {
        public enum Kind: Sendable, Equatable {
            case system
            case user
            /// A raw resource, with the file it was read from.
            case resource(String)
        }
        public var kind: Kind
        public var certificates: [Certificate]
        public var overridePins: Bool

        var label: String {
            switch kind {
            case .system: return "system"
            case .user: return "user"
            case .resource(let path): return (path as NSString).lastPathComponent
            }
        }
    }

    public struct PinSet: Sendable {
        public var pins: [SPKIPin]
        /// Pins stop being enforced from 00:00 UTC of this day.
        public var expiration: Date?
    }

    public struct Domain: Sendable {
        public var name: String
        public var includeSubdomains: Bool
    }

    public struct DomainConfig: Sendable {
        public var domains: [Domain]
        public var trustAnchors: [CertificatesSource]?
        public var pinSet: PinSet?
        public var children: [DomainConfig]
        public var line: Int
        /// `<certificateTransparency enabled=...>`, when the domain-config has one.
        public var certificateTransparency: Bool?
    }

    public var baseTrustAnchors: [CertificatesSource]?
    /// `<certificateTransparency enabled=...>` in base-config, when there is one.
    public var baseCertificateTransparency: Bool?
    public var domainConfigs: [DomainConfig]
    public var hasDebugOverrides: Bool
    /// The file it was read from, for messages.
    public var file: String

    /// Reads and checks `path`; raw resources are looked up in `../raw/` and `raw/`
    /// next to the file, then next to the file itself, with any extension.
    /// With a `world`, `src="world:root"` and `<pin digest="SHA-256">world:leaf</pin>` name its
    /// certificates (see ``PolicyWorld``).
    public static func load(contentsOf path: String, world: PolicyWorld? = nil) throws -> NetworkSecurityConfig {
        let bytes: [UInt8]
        do { bytes = try FileIO.read(path) } catch let error as PinproxyError {
            throw PinproxyError(.policyFile, error.reason)
        }
        let directory = FilePaths.parent(of: path)
        return try parse(Data(bytes), file: path, world: world) { name, line in
            try resolveRawResource(name, near: directory, file: path, line: line)
        }
    }

    /// Parses XML text; `resolve` turns a raw resource name into certificates.
    public static func parse(
        _ data: Data, file: String, world: PolicyWorld? = nil, resolve: (String, Int) throws -> (String, [Certificate])
    ) throws -> NetworkSecurityConfig {
        let root = try XMLTree.parse(data, file: file)
        func fail(_ node: XMLTree.Node, _ message: String) -> PinproxyError {
            PinproxyError(.policyFile, "\(file):\(node.line): \(message)")
        }
        func allow(_ node: XMLTree.Node, attributes: Set<String>) throws {
            for name in node.attributes.keys where !attributes.contains(name) {
                throw fail(node, "attribute '\(name)' is not allowed on <\(node.name)>\(NearestName.hint(for: name, among: attributes.sorted()))" + (attributes.isEmpty ? "" : " (allowed: \(attributes.sorted().joined(separator: ", ")))"))
            }
        }
        /// `<NAME> is not allowed in <PARENT>`, with the nearest allowed child's name when it looks mistyped.
        func misplaced(_ child: XMLTree.Node, in parent: String, allowed: [String]) -> PinproxyError {
            let nearest = NearestName.hint(for: child.name, among: allowed) { "<\($0)>" }
            return fail(child, "<\(child.name)> is not allowed in <\(parent)>\(nearest)")
        }
        func boolean(_ node: XMLTree.Node, _ name: String, default value: Bool) throws -> Bool {
            guard let text = node.attributes[name] else { return value }
            switch text {
            case "true": return true
            case "false": return false
            default: throw fail(node, "\(name)=\"\(text)\" must be \"true\" or \"false\"")
            }
        }
        func trustAnchors(_ node: XMLTree.Node) throws -> [CertificatesSource] {
            try allow(node, attributes: [])
            var sources: [CertificatesSource] = []
            for child in node.children {
                guard child.name == "certificates" else {
                    let nearest = NearestName.hint(for: child.name, among: ["certificates"]) { "<\($0)>" }
                    throw fail(child, "<\(child.name)> is not allowed in <trust-anchors>\(nearest); use <certificates src=...>")
                }
                try allow(child, attributes: ["src", "overridePins"])
                guard let src = child.attributes["src"] else { throw fail(child, "<certificates> needs a src attribute (system, user or @raw/name)") }
                let overridePins = try boolean(child, "overridePins", default: false)
                switch src {
                case "system": sources.append(CertificatesSource(kind: .system, certificates: [], overridePins: overridePins))
                case "user": sources.append(CertificatesSource(kind: .user, certificates: [], overridePins: overridePins))
                case _ where PolicyWorld.isReference(src):
                    do {
                        sources.append(CertificatesSource(kind: .resource(src), certificates: [try world.certificate(src)], overridePins: overridePins))
                    } catch let error as PinproxyError {
                        throw fail(child, error.reason)
                    }
                default:
                    guard src.hasPrefix("@raw/"), src.count > 5 else {
                        throw fail(child, "certificates src=\"\(src)\" is not system, user or @raw/name")
                    }
                    let (path, certificates) = try resolve(String(src.dropFirst(5)), child.line)
                    sources.append(CertificatesSource(kind: .resource(path), certificates: certificates, overridePins: overridePins))
                }
            }
            return sources
        }
        func pinSet(_ node: XMLTree.Node) throws -> PinSet {
            try allow(node, attributes: ["expiration"])
            var expiration: Date? = nil
            if let text = node.attributes["expiration"] {
                guard let date = parseDay(text) else { throw fail(node, "expiration=\"\(text)\" is not a yyyy-MM-dd date") }
                expiration = date
            }
            var pins: [SPKIPin] = []
            for child in node.children {
                guard child.name == "pin" else { throw misplaced(child, in: "pin-set", allowed: ["pin"]) }
                try allow(child, attributes: ["digest"])
                guard let digest = child.attributes["digest"] else { throw fail(child, "<pin> needs digest=\"SHA-256\"") }
                // `Pin.isSupportedDigestAlgorithm`: "SHA-256".equalsIgnoreCase(digest).
                guard Self.equalsIgnoringCaseAsJava(digest, "SHA-256") else {
                    throw fail(child, "pin digest '\(digest)' is not supported; Android accepts only SHA-256 (in any case)")
                }
                let written = child.text.trimmingCharacters(in: .whitespacesAndNewlines)
                let text: String
                do { text = try world.pinText(written, notation: \.base64) } catch let error as PinproxyError {
                    throw fail(child, error.reason)
                }
                guard let data = Data(base64Encoded: text) else { throw fail(child, "pin '\(text)' is not valid base64") }
                guard data.count == 32 else { throw fail(child, "pin '\(text)' decodes to \(data.count) bytes, a SHA-256 pin has 32") }
                pins.append(try SPKIPin(sha256: Array(data)))
            }
            // An empty set is kept: Android's parser takes it, and it enforces no pin
            // (NetworkSecurityTrustManager.checkPins returns at once for an empty set).
            return PinSet(pins: pins, expiration: expiration)
        }
        func certificateTransparency(_ node: XMLTree.Node) throws -> Bool {
            try allow(node, attributes: ["enabled"])
            if let child = node.children.first { throw fail(child, "<\(child.name)> is not allowed in <certificateTransparency>") }
            return try boolean(node, "enabled", default: false)
        }
        // Every domain of the file, with the line that named it first (XmlConfigSource's seenDomains).
        var seenDomains: [String: Int] = [:]
        func domainConfig(_ node: XMLTree.Node) throws -> DomainConfig {
            try allow(node, attributes: ["cleartextTrafficPermitted", "hstsEnforced"])
            _ = try boolean(node, "cleartextTrafficPermitted", default: true)
            _ = try boolean(node, "hstsEnforced", default: false)
            var config = DomainConfig(domains: [], trustAnchors: nil, pinSet: nil, children: [], line: node.line)
            for child in node.children {
                switch child.name {
                case "domain":
                    try allow(child, attributes: ["includeSubdomains"])
                    let name = child.text.trimmingCharacters(in: .whitespacesAndNewlines)
                    // Android takes the text as it is (underscores too: subdomain_user.android.com
                    // in its own tests); anything that cannot name a host is refused.
                    do { _ = try HostName(validating: name) } catch let error as PinproxyError {
                        throw fail(child, "<domain>\(name)</domain>: \(error.reason)")
                    }
                    let domain = Domain(name: name.lowercased(), includeSubdomains: try boolean(child, "includeSubdomains", default: false))
                    if let first = seenDomains[domain.name] {
                        throw fail(child, "\(domain.name) has already been specified (line \(first)); Android refuses to load the whole file (XmlConfigSource.parseDomain allows no duplicate, includeSubdomains or not), so the app has no working network security config")
                    }
                    seenDomains[domain.name] = child.line
                    config.domains.append(domain)
                case "certificateTransparency":
                    if config.certificateTransparency != nil { throw fail(child, "a second <certificateTransparency> in one <domain-config>") }
                    config.certificateTransparency = try certificateTransparency(child)
                case "trust-anchors":
                    if config.trustAnchors != nil { throw fail(child, "a second <trust-anchors> in one <domain-config>") }
                    config.trustAnchors = try trustAnchors(child)
                case "pin-set":
                    if config.pinSet != nil { throw fail(child, "a second <pin-set> in one <domain-config>") }
                    config.pinSet = try pinSet(child)
                case "domain-config":
                    config.children.append(try domainConfig(child))
                default:
                    throw misplaced(child, in: "domain-config", allowed: ["domain", "certificateTransparency", "trust-anchors", "pin-set", "domain-config"])
                }
            }
            if config.domains.isEmpty { throw fail(node, "<domain-config> names no <domain>") }
            return config
        }

        guard root.name == "network-security-config" else {
            throw fail(root, "the root element is <\(root.name)>, expected <network-security-config>")
        }
        try allow(root, attributes: [])
        var config = NetworkSecurityConfig(baseTrustAnchors: nil, baseCertificateTransparency: nil, domainConfigs: [], hasDebugOverrides: false, file: file)
        var sawBase = false
        for child in root.children {
            switch child.name {
            case "base-config":
                if sawBase { throw fail(child, "a second <base-config>") }
                sawBase = true
                try allow(child, attributes: ["cleartextTrafficPermitted", "hstsEnforced"])
                _ = try boolean(child, "cleartextTrafficPermitted", default: true)
                _ = try boolean(child, "hstsEnforced", default: false)
                for grandchild in child.children {
                    switch grandchild.name {
                    case "trust-anchors":
                        if config.baseTrustAnchors != nil { throw fail(grandchild, "a second <trust-anchors> in <base-config>") }
                        config.baseTrustAnchors = try trustAnchors(grandchild)
                    case "certificateTransparency":
                        if config.baseCertificateTransparency != nil { throw fail(grandchild, "a second <certificateTransparency> in <base-config>") }
                        config.baseCertificateTransparency = try certificateTransparency(grandchild)
                    case "pin-set": throw fail(grandchild, "<pin-set> is only allowed in <domain-config>, not in <base-config>")
                    default: throw misplaced(grandchild, in: "base-config", allowed: ["trust-anchors", "certificateTransparency"])
                    }
                }
            case "domain-config":
                config.domainConfigs.append(try domainConfig(child))
            case "debug-overrides":
                if config.hasDebugOverrides { throw fail(child, "a second <debug-overrides>") }
                try allow(child, attributes: ["cleartextTrafficPermitted", "hstsEnforced"])
                _ = try boolean(child, "cleartextTrafficPermitted", default: true)
                _ = try boolean(child, "hstsEnforced", default: false)
                for grandchild in child.children {
                    guard grandchild.name == "trust-anchors" else { throw misplaced(grandchild, in: "debug-overrides", allowed: ["trust-anchors"]) }
                    _ = try trustAnchors(grandchild)
                }
                config.hasDebugOverrides = true
            default:
                throw misplaced(child, in: "network-security-config", allowed: ["base-config", "domain-config", "debug-overrides"])
            }
        }
        return config
    }

    static func parseDay(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        guard let date = calendar.date(from: components),
              calendar.component(.day, from: date) == day else { return nil }
        return date
    }

    /// Java's `String.equalsIgnoreCase`: as many UTF-16 code units, each pair
    /// equal as it is, or once both are upper-cased, or once those are
    /// lower-cased (`Character.toUpperCase` and `toLowerCase` of each unit:
    /// one-to-one mappings, so `ß` stays `ß` and `ſ` matches `S`).
    static func equalsIgnoringCaseAsJava(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf16), right = Array(rhs.utf16)
        guard left.count == right.count else { return false }
        func mapped(_ unit: UInt16, _ mapping: (Unicode.Scalar.Properties) -> String) -> UInt16 {
            guard let scalar = Unicode.Scalar(unit) else { return unit }  // half of a surrogate pair
            let result = mapping(scalar.properties).unicodeScalars
            guard result.count == 1, let only = result.first, only.value <= 0xFFFF else { return unit }
            return UInt16(only.value)
        }
        for (a, b) in zip(left, right) where a != b {
            let upperA = mapped(a, \.uppercaseMapping), upperB = mapped(b, \.uppercaseMapping)
            if upperA == upperB { continue }
            if mapped(upperA, \.lowercaseMapping) == mapped(upperB, \.lowercaseMapping) { continue }
            return false
        }
        return true
    }
}

/// A minimal element tree over Foundation's XMLParser.
enum XMLTree {
    final class Node {
        let name: String
        let attributes: [String: String]
        let line: Int
        var children: [Node] = []
        var text = ""
        init(name: String, attributes: [String: String], line: Int) {
            self.name = name
            self.attributes = attributes
            self.line = line
        }
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [Node] = []
        var root: Node?
        weak var parser: XMLParser?

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            var attributes: [String: String] = [:]
            for (key, value) in attributeDict {
                // android:name style prefixes are not used by this format; keep the local name.
                attributes[key.split(separator: ":").last.map(String.init) ?? key] = value
            }
            let node = Node(name: elementName, attributes: attributes, line: parser.lineNumber)
            if let parent = stack.last { parent.children.append(node) } else if root == nil { root = node }
            stack.append(node)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            _ = stack.popLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.text += string
        }
    }

    static func parse(_ data: Data, file: String) throws -> Node {
        // FoundationXML traps on an element name, attribute name or comment
        // that is not UTF-8 (its libxml2 callbacks force-unwrap the decoded
        // string, and libxml2 in recovery mode passes such bytes on), so
        // they are refused before the parser sees them. With a UTF-16 or
        // UTF-32 byte-order mark libxml2 decodes the text itself.
        if !hasWideByteOrderMark(data), let offset = firstByteNotUTF8(in: data) {
            let line = 1 + data.prefix(offset).reduce(0) { $0 + ($1 == 0x0a ? 1 : 0) }
            throw PinproxyError(.policyFile, "\(file):\(line): not UTF-8 (byte 0x\(String(data[data.startIndex + offset], radix: 16)) at offset \(offset)); save the file as UTF-8")
        }
        // FoundationXML also reads a processing instruction's data without
        // checking it is there: `<?name?>` crashes it. A network security
        // config has no use for one, so an empty one is refused first.
        if let offset = firstEmptyProcessingInstruction(in: data) {
            let line = 1 + data.prefix(offset).reduce(0) { $0 + ($1 == 0x0a ? 1 : 0) }
            throw PinproxyError(.policyFile, "\(file):\(line): malformed XML (a processing instruction without data)")
        }
        return try XMLSerialization.exclusively {
            let parser = XMLParser(data: data)
            let builder = Builder()
            parser.delegate = builder
            guard parser.parse(), let root = builder.root else {
                let error = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "no root element"
                throw PinproxyError(.policyFile, "\(file):\(parser.lineNumber): malformed XML (\(error))")
            }
            if let open = builder.stack.last {
                // libxml2 recovers from an end tag that closes another element than the open
                // one by closing the open one: a missing </domain-config> surfaces as the root
                // never closed. The first such end tag names the element really left open.
                if let mismatch = firstMismatchedEndTag(in: data) {
                    throw PinproxyError(.policyFile, "\(file):\(mismatch.line): malformed XML (</\(mismatch.closing)> where <\(mismatch.open)> opened at line \(mismatch.openLine) is still open; is its </\(mismatch.open)> missing?)")
                }
                throw PinproxyError(.policyFile, "\(file):\(parser.lineNumber): malformed XML (<\(open.name)> opened at line \(open.line) is never closed)")
            }
            return root
        }
    }

    /// The first end tag that does not close the element open at that point, with the open
    /// element and the lines of both; nil when the tags nest. A plain scan of the tags:
    /// comments, CDATA sections, processing instructions and declarations are skipped, quoted
    /// attribute values may hold `>`. Only asked once the parser has found the file malformed.
    static func firstMismatchedEndTag(in data: Data) -> (closing: String, line: Int, open: String, openLine: Int)? {
        let bytes = [UInt8](data)
        var open: [(name: String, line: Int)] = []
        var index = 0, line = 1
        func find(_ end: String, from start: Int) -> Int? {
            let needle = Array(end.utf8)
            var at = start
            while at + needle.count <= bytes.count {
                if bytes[at] == needle[0] && Array(bytes[at..<at + needle.count]) == needle { return at + needle.count }
                at += 1
            }
            return nil
        }
        func advance(to end: Int) {
            line += bytes[index..<end].reduce(0) { $0 + ($1 == 0x0a ? 1 : 0) }
            index = end
        }
        func name(from start: Int) -> String {
            var end = start
            while end < bytes.count, !isXMLSpace(bytes[end]), bytes[end] != UInt8(ascii: ">"), bytes[end] != UInt8(ascii: "/") { end += 1 }
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                if bytes[index] == 0x0a { line += 1 }
                index += 1
                continue
            }
            let rest = bytes[index...]
            let skip: (opening: String, closing: String)? = rest.starts(with: Array("<!--".utf8)) ? ("<!--", "-->")
                : rest.starts(with: Array("<![CDATA[".utf8)) ? ("<![CDATA[", "]]>")
                : rest.starts(with: Array("<?".utf8)) ? ("<?", "?>")
                : rest.starts(with: Array("<!".utf8)) ? ("<!", ">") : nil
            if let skip {
                var from = index + skip.opening.utf8.count
                // A declaration's internal subset (`<!DOCTYPE x [ … ]>`) may hold `>`.
                if skip.opening == "<!", let subset = bytes[from...].firstIndex(where: { $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: ">") }),
                   bytes[subset] == UInt8(ascii: "[") {
                    guard let close = find("]", from: subset) else { return nil }
                    from = close
                }
                guard let end = find(skip.closing, from: from) else { return nil }
                advance(to: end)
                continue
            }
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
                let closing = name(from: index + 2)
                guard let last = open.popLast() else { return nil }
                if last.name != closing { return (closing, line, last.name, last.line) }
                guard let end = find(">", from: index) else { return nil }
                advance(to: end)
                continue
            }
            let tagLine = line, opened = name(from: index + 1)
            // To the tag's end, past quoted values.
            var cursor = index + 1, quote: UInt8?
            while cursor < bytes.count {
                let byte = bytes[cursor]
                if let q = quote { if byte == q { quote = nil } } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") { quote = byte } else if byte == UInt8(ascii: ">") { break }
                cursor += 1
            }
            guard cursor < bytes.count else { return nil }
            if bytes[cursor - 1] != UInt8(ascii: "/") { open.append((opened, tagLine)) }
            advance(to: cursor + 1)
        }
        return nil
    }

    /// The offset of the first `<?name?>` (a target and nothing else but white space), or nil.
    static func firstEmptyProcessingInstruction(in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var index = 0
        while index + 1 < bytes.count {
            defer { index += 1 }
            guard bytes[index] == UInt8(ascii: "<"), bytes[index + 1] == UInt8(ascii: "?") else { continue }
            var cursor = index + 2
            while cursor < bytes.count, !isXMLSpace(bytes[cursor]), bytes[cursor] != UInt8(ascii: "?") { cursor += 1 }
            while cursor < bytes.count, isXMLSpace(bytes[cursor]) { cursor += 1 }
            if cursor + 1 < bytes.count, bytes[cursor] == UInt8(ascii: "?"), bytes[cursor + 1] == UInt8(ascii: ">") { return index }
        }
        return nil
    }

    private static func isXMLSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d }

    /// The offset of the first byte that is not part of well-formed UTF-8, or nil.
    static func firstByteNotUTF8(in data: Data) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = data.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    private static func hasWideByteOrderMark(_ data: Data) -> Bool {
        let head = Array(data.prefix(4))
        return head.starts(with: [0xfe, 0xff]) || head.starts(with: [0xff, 0xfe]) || head.starts(with: [0, 0, 0xfe, 0xff])
    }
}
