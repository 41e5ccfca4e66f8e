/// An ordered list of header fields that keeps names as they were written.
///
/// Order, case and duplicates are preserved so that a relayed message looks
/// like the original; lookups compare names case-insensitively (RFC 9110 §5.1).
///
/// Besides the fields, a list keeps two facts up to date as it changes, for
/// speed only (they take no part in equality): where the fields the proxy
/// itself reads are (``HTTPFieldIndex``), and whether every field can be
/// written as it is (``isWireSafe``).
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

    public private(set) var fields: [Field] {
        // Any change to a field, however made, leaves the received lines behind.
        didSet { wireLines = nil }
    }

    /// The field lines as they were received, when they spell exactly the
    /// fields (each `name: value` CRLF, nothing else), so that a writer may
    /// copy runs of them instead of the fields one by one. Set by the parser
    /// for the heads it completes, and gone with the first change to
    /// ``fields`` (see ``HTTP1HeadMemory``). Takes no part in equality.
    private(set) var wireLines: [UInt8]?

    /// Whether every field can be written as it is: a token name and a value
    /// without CR, LF or NUL, so that the serializer checks nothing.
    package private(set) var isWireSafe = true

    /// Where the fields with the names the proxy reads are.
    private var index = HTTPFieldIndex()

    /// Whether indexed names are found through the index (at most 255 fields).
    var isIndexed: Bool { index.isComplete }

    /// The index itself, for code that derives the index of a changed copy.
    var fieldIndex: HTTPFieldIndex { index }

    public init() { fields = [] }
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
        isWireSafe = fields.allSatisfy(HTTPHeaders.isWireSafe)
        index = HTTPFieldIndex(fields)
    }
    /// Fields the caller knows to be wire-safe (taken from wire-safe headers),
    /// and their index when the caller has it.
    init(wireSafeFields fields: [Field], index: HTTPFieldIndex? = nil) {
        assert(fields.allSatisfy(HTTPHeaders.isWireSafe))
        self.fields = fields
        self.index = index ?? HTTPFieldIndex(fields)
        assert(self.index == HTTPFieldIndex(fields), "a derived field index is wrong")
    }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Keeps the lines these fields were received as; `lines` must be
    /// the fields' `name: value` CRLF back to back (checked in debug builds).
    mutating func keepReceivedLines(_ lines: [UInt8]) {
        wireLines = lines
        assert(wireLinesMatchFields, "received lines that do not spell the fields")
    }

    /// Whether ``wireLines`` (if any) is each field's `name: value` CRLF, back to back.
    var wireLinesMatchFields: Bool {
        guard let wireLines else { return true }
        var spelled: [UInt8] = []
        for field in fields { spelled += Array("\(field.name): \(field.value)\r\n".utf8) }
        return spelled == wireLines
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool { lhs.fields == rhs.fields }
    public func hash(into hasher: inout Hasher) { hasher.combine(fields) }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    // MARK: - Changing

    /// Appends a field after all others.
    public mutating func add(name: String, value: String) { add(Field(name: name, value: value)) }

    /// Appends `field` after all others.
    public mutating func add(_ field: consuming Field) {
        if isWireSafe { isWireSafe = HTTPHeaders.isWireSafe(field) }
        index.noteAppended(field.name, at: fields.count)
        fields.append(field)
    }

    /// Appends a field the caller knows to be wire-safe (parsed, or made of
    /// literals) without looking at its bytes. Taken, not copied: a field
    /// made for the list costs no retain of its text.
    package mutating func addWireSafe(_ field: consuming Field) {
        assert(HTTPHeaders.isWireSafe(field), "\(field) is not wire-safe")
        index.noteAppended(field.name, at: fields.count)
        fields.append(field)
    }

    package mutating func addWireSafe(name: String, value: String) { addWireSafe(Field(name: name, value: value)) }

    /// Replaces every field called `name` with one field (appended where the first one was, or at the end).
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = firstIndex(name: name) else { return add(name: name, value: value) }
        if isWireSafe { isWireSafe = HTTPHeaders.isWireSafe(value: value) }
        fields[first].value = value
        if index.isComplete, let indexed = HTTPFieldIndex.Name.matching(name), !index.isRepeated(indexed) { return }
        let before = fields.count
        var position = first + 1
        while position < fields.count {
            if fields[position].name.equalsIgnoringASCIICase(name) { fields.remove(at: position) } else { position += 1 }
        }
        if fields.count != before { index = HTTPFieldIndex(fields) }
    }

    /// `replaceOrAdd(name: "Content-Length", value: String(length))`, which
    /// leaves a head that already says exactly that as it is, without
    /// writing the number out.
    mutating func setContentLength(_ length: Int) {
        if let first = firstIndex(.contentLength), firstIndex(.contentLength, from: first + 1) == nil,
           fields[first].value.withUTF8Bytes({ HTTP1Bytes.isDecimal($0, of: length) }) {
            return
        }
        replaceOrAdd(name: "Content-Length", value: String(length))
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        guard firstIndex(name: name) != nil else { return }
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
        index = HTTPFieldIndex(fields)
    }

    /// Reserves room for `count` fields, so that building a head allocates once.
    package mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Whether `field` can be written as it is (see ``isWireSafe``).
    static func isWireSafe(_ field: Field) -> Bool {
        field.name.withUTF8Bytes(HTTP1Bytes.isToken) && isWireSafe(value: field.value)
    }

    static func isWireSafe(value: String) -> Bool {
        value.withUTF8Bytes { bytes in
            HTTP1Bytes.isPrintableASCII(bytes) || !bytes.contains { $0 == Byte.cr || $0 == Byte.lf || $0 == 0 }
        }
    }

    // MARK: - Looking up

    /// All values of the fields called `name`, in order.
    public subscript(name: String) -> [String] {
        fields.lazy.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The value of the first field called `name`.
    public func first(name: String) -> String? {
        firstIndex(name: name).map { fields[$0].value }
    }

    public func contains(name: String) -> Bool { firstIndex(name: name) != nil }

    /// The position of the first field called `name` at or after `start`.
    ///
    /// Indexed names are found without comparing; otherwise fields are
    /// looked at in place (no copies, so no reference counting), and most are
    /// passed over on their name's length alone.
    func firstIndex(name: String, from start: Int = 0) -> Int? {
        if index.isComplete, let indexed = HTTPFieldIndex.Name.matching(name) { return firstIndex(indexed, from: start) }
        return scan(for: name, from: start)
    }

    /// The position of the first field with the indexed `name` at or after `start`.
    @inline(__always)
    func firstIndex(_ name: HTTPFieldIndex.Name, from start: Int = 0) -> Int? {
        guard index.isComplete else { return scan(for: name, from: start) }
        guard let first = index.first(name) else { return nil }
        if start <= first { return first }
        return index.isRepeated(name) ? scan(for: name, from: start) : nil
    }

    private func scan(for name: String, from start: Int) -> Int? {
        let length = name.utf8.count
        var position = start
        while position < fields.count {
            if fields[position].name.utf8.count == length && fields[position].name.equalsIgnoringASCIICase(name) {
                return position
            }
            position += 1
        }
        return nil
    }

    private func scan(for name: HTTPFieldIndex.Name, from start: Int) -> Int? {
        var position = start
        while position < fields.count {
            if HTTPFieldIndex.Name.matching(fields[position].name) == name { return position }
            position += 1
        }
        return nil
    }
}
