/// Where in a field list the fields with the names the proxy itself reads
/// are: framing, routing, `Connection` and the other hop-by-hop fields.
///
/// A proxy asks the same few questions of every head, several times per
/// exchange (is there a `Connection: close`, how long is the body, which
/// fields are hop-by-hop). ``HTTPHeaders`` notes each field's name once, as
/// it is added, so that these questions go straight to the field instead of
/// comparing every name of the head again. Every change to the list goes
/// through ``HTTPHeaders``, which keeps the index exact; a list of more than
/// 254 fields is not indexed, and lookups then compare names as before.
struct HTTPFieldIndex: Hashable, Sendable {
    /// The names indexed. Matching ignores ASCII case, as field names do.
    enum Name: Int, CaseIterable, Sendable {
        case host, contentLength, transferEncoding, connection, upgrade, te, expect
        case keepAlive, proxyConnection, proxyAuthorization, proxyAuthenticate, trailer

        /// The name in lower case.
        var lowercased: StaticString {
            switch self {
            case .host: return "host"
            case .contentLength: return "content-length"
            case .transferEncoding: return "transfer-encoding"
            case .connection: return "connection"
            case .upgrade: return "upgrade"
            case .te: return "te"
            case .expect: return "expect"
            case .keepAlive: return "keep-alive"
            case .proxyConnection: return "proxy-connection"
            case .proxyAuthorization: return "proxy-authorization"
            case .proxyAuthenticate: return "proxy-authenticate"
            case .trailer: return "trailer"
            }
        }

        /// The indexed name `bytes` spells in any case, if any; the length
        /// alone rules out most names.
        static func matching(_ bytes: UnsafeBufferPointer<UInt8>) -> Name? {
            func check(_ name: Name) -> Name? {
                HTTP1Bytes.equalsLowercased(bytes, HTTP1Bytes.buffer(name.lowercased)) ? name : nil
            }
            switch bytes.count {
            case 2: return check(.te)
            case 4: return check(.host)
            case 6: return check(.expect)
            case 7: return check(.upgrade) ?? check(.trailer)
            case 10: return check(.connection) ?? check(.keepAlive)
            case 14: return check(.contentLength)
            case 16: return check(.proxyConnection)
            case 17: return check(.transferEncoding)
            case 18: return check(.proxyAuthenticate)
            case 19: return check(.proxyAuthorization)
            default: return nil
            }
        }

        @inline(__always)
        static func matching(_ name: String) -> Name? { name.withUTF8Bytes { matching($0) } }
    }

    /// Position + 1 of the first field with each name; 0 when there is none.
    private var first = SIMD16<UInt8>()
    /// The names that occur at all.
    private(set) var present = Names()
    /// Bit `Name.rawValue` is set when a name occurs more than once.
    private var repeated: UInt16 = 0
    /// False once the list has outgrown the positions a byte can hold.
    private(set) var isComplete = true

    /// The position of the first field called `name`, if any. Only meaningful when ``isComplete``.
    @inline(__always)
    func first(_ name: Name) -> Int? {
        let stored = first[name.rawValue]
        return stored == 0 ? nil : Int(stored) - 1
    }

    /// Whether more than one field is called `name`.
    @inline(__always)
    func isRepeated(_ name: Name) -> Bool { repeated & (1 << name.rawValue) != 0 }

    /// Notes that a field called `name` was appended at `position`.
    mutating func noteAppended(_ name: String, at position: Int) {
        guard isComplete else { return }
        guard position < 255 else {
            isComplete = false
            return
        }
        guard let match = Name.matching(name) else { return }
        if first[match.rawValue] == 0 {
            first[match.rawValue] = UInt8(position + 1)
            present.insert(match)
        } else {
            repeated |= 1 << match.rawValue
        }
    }

    /// The index of no fields.
    init() {}

    /// The index of `fields`, from scratch (after fields were removed).
    init(_ fields: [HTTPHeaders.Field]) {
        for position in fields.indices { noteAppended(fields[position].name, at: position) }
    }

    /// The index after the fields at `positions` were removed, which include
    /// every field with a name in `names` and no other indexed field.
    func removing(names: Names, positions: Positions) -> HTTPFieldIndex {
        var result = self
        for name in present {
            guard let position = first(name) else { continue }
            if names.contains(name) {
                result.first[name.rawValue] = 0
                result.repeated &= ~(1 << name.rawValue)
                result.present.remove(name)
            } else {
                result.first[name.rawValue] = UInt8(position - positions.count(below: position) + 1)
            }
        }
        return result
    }

    /// A set of indexed names, one bit each.
    struct Names: Hashable, Sendable, Sequence, ExpressibleByArrayLiteral {
        private var bits: UInt16 = 0

        init(arrayLiteral names: Name...) { for name in names { insert(name) } }

        func contains(_ name: Name) -> Bool { bits & (1 << name.rawValue) != 0 }
        mutating func insert(_ name: Name) { bits |= 1 << name.rawValue }
        mutating func remove(_ name: Name) { bits &= ~(1 << name.rawValue) }
        func intersection(_ other: Names) -> Names {
            var result = Names()
            result.bits = bits & other.bits
            return result
        }

        /// The names in the set, in `rawValue` order.
        func makeIterator() -> Iterator { Iterator(bits: bits) }

        struct Iterator: IteratorProtocol {
            var bits: UInt16
            mutating func next() -> Name? {
                guard bits != 0 else { return nil }
                let raw = bits.trailingZeroBitCount
                bits &= bits - 1
                return Name(rawValue: raw)
            }
        }
    }

    /// A set of field positions in an indexed list (below 255).
    struct Positions: Sendable {
        private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        var isEmpty: Bool { words.0 | words.1 | words.2 | words.3 == 0 }

        mutating func insert(_ position: Int) {
            let bit: UInt64 = 1 << UInt64(position & 63)
            switch position >> 6 {
            case 0: words.0 |= bit
            case 1: words.1 |= bit
            case 2: words.2 |= bit
            default: words.3 |= bit
            }
        }

        func contains(_ position: Int) -> Bool {
            let word: UInt64
            switch position >> 6 {
            case 0: word = words.0
            case 1: word = words.1
            case 2: word = words.2
            default: word = words.3
            }
            return word & (1 << UInt64(position & 63)) != 0
        }

        /// The highest position, or -1 when there is none.
        var highest: Int {
            if words.3 != 0 { return 255 - words.3.leadingZeroBitCount }
            if words.2 != 0 { return 191 - words.2.leadingZeroBitCount }
            if words.1 != 0 { return 127 - words.1.leadingZeroBitCount }
            return 63 - words.0.leadingZeroBitCount
        }

        /// How many positions are below `position`.
        func count(below position: Int) -> Int {
            let below: UInt64 = (1 << UInt64(position & 63)) &- 1
            switch position >> 6 {
            case 0: return (words.0 & below).nonzeroBitCount
            case 1: return words.0.nonzeroBitCount + (words.1 & below).nonzeroBitCount
            case 2: return words.0.nonzeroBitCount + words.1.nonzeroBitCount + (words.2 & below).nonzeroBitCount
            default:
                return words.0.nonzeroBitCount + words.1.nonzeroBitCount + words.2.nonzeroBitCount
                    + (words.3 & below).nonzeroBitCount
            }
        }
    }
}
