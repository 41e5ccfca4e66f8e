/// An ordered list of header fields that keeps names as they were written.
///
/// Order, case and duplicates are preserved so that a relayed message looks
/// like the original; lookups compare names case-insensitively (RFC 9110 §5.1).
public struct HTTPHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field line: a name as written and its value without surrounding whitespace.
    public struct Field: Hashable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }
    public init(_ pairs: [(String, String)]) { fields = pairs.map { Field(name: $0.0, value: $0.1) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// Appends a field after all others.
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    /// Appends `field` after all others.
    public mutating func add(_ field: Field) { fields.append(field) }

    /// Replaces every field called `name` with one field (appended where the first one was, or at the end).
    public mutating func replaceOrAdd(name: String, value: String) {
        if let first = fields.firstIndex(where: { $0.name.equalsIgnoringASCIICase(name) }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name.equalsIgnoringASCIICase(name) { fields.remove(at: index) } else { index += 1 }
            }
        } else {
            add(name: name, value: value)
        }
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// All values of the fields called `name`, in order.
    public subscript(name: String) -> [String] {
        fields.lazy.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The value of the first field called `name`.
    public func first(name: String) -> String? {
        fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    public func contains(name: String) -> Bool { first(name: name) != nil }

    /// The comma-separated list elements of every field called `name`,
    /// trimmed, lower-cased, empty elements dropped (RFC 9110 §5.6.1).
    public func tokens(name: String) -> [String] {
        self[name].flatMap { value in
            value.split(separator: ",").map { $0.trimmingHTTPWhitespace().lowercased() }.filter { !$0.isEmpty }
        }
    }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }
}

extension StringProtocol {
    /// ASCII case-insensitive equality, which is what header names and tokens need.
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7a)
        }
    }

    /// The string without leading and trailing spaces and tabs.
    func trimmingHTTPWhitespace() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let f = scalars.first, f == " " || f == "\t" { scalars.removeFirst() }
        while let l = scalars.last, l == " " || l == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
