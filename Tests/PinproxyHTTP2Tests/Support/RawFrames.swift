/// HTTP/2 frames written and read by hand, without nghttp2, so that tests can
/// send what no well-behaved peer would and check exactly what came back.
struct RawFrame: Equatable, CustomStringConvertible {
    enum Kind: UInt8 {
        case data = 0, headers = 1, priority = 2, rstStream = 3, settings = 4, pushPromise = 5
        case ping = 6, goAway = 7, windowUpdate = 8, continuation = 9
    }
    static let endStream: UInt8 = 0x1
    static let ack: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4

    var type: UInt8
    var flags: UInt8 = 0
    var stream: UInt32 = 0
    var payload: [UInt8] = []
    /// The length written in the header, when a test lies about it.
    var declaredLength: Int?

    init(_ kind: Kind, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = [], declaredLength: Int? = nil) {
        type = kind.rawValue
        self.flags = flags
        self.stream = stream
        self.payload = payload
        self.declaredLength = declaredLength
    }

    init(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) {
        self.type = type
        self.flags = flags
        self.stream = stream
        self.payload = payload
    }

    var kind: Kind? { Kind(rawValue: type) }

    var bytes: [UInt8] {
        let length = declaredLength ?? payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
            + RawFrame.uint32(stream & 0x7fff_ffff) + payload
    }

    var description: String { "\(kind.map { "\($0)" } ?? "type \(type)") flags=\(flags) stream=\(stream) length=\(payload.count)" }

    static func uint32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    static func readUInt32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The client connection preface.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func settings(_ entries: [(UInt16, UInt32)] = []) -> RawFrame {
        RawFrame(.settings, payload: entries.flatMap { [UInt8($0.0 >> 8), UInt8($0.0 & 0xff)] + uint32($0.1) })
    }

    static let settingsAck = RawFrame(.settings, flags: ack)

    static func headers(stream: UInt32, block: [UInt8], flags: UInt8 = endHeaders | endStream) -> RawFrame {
        RawFrame(.headers, flags: flags, stream: stream, payload: block)
    }

    /// Frames parsed from `bytes`, after the client preface if it starts them.
    static func parse(_ bytes: [UInt8]) -> [RawFrame] {
        var rest = bytes[...]
        if rest.starts(with: preface) { rest = rest.dropFirst(preface.count) }
        var frames: [RawFrame] = []
        while rest.count >= 9 {
            let length = Int(rest[rest.startIndex]) << 16 | Int(rest[rest.startIndex + 1]) << 8 | Int(rest[rest.startIndex + 2])
            guard rest.count >= 9 + length else { break }
            let header = rest.prefix(9)
            let stream = readUInt32(header.dropFirst(5)) & 0x7fff_ffff
            frames.append(RawFrame(type: header[header.startIndex + 3], flags: header[header.startIndex + 4], stream: stream,
                                   payload: Array(rest.dropFirst(9).prefix(length))))
            rest = rest.dropFirst(9 + length)
        }
        return frames
    }

    /// The error code of a GOAWAY or RST_STREAM frame.
    var errorCode: UInt32? {
        switch kind {
        case .goAway: return payload.count >= 8 ? RawFrame.readUInt32(payload.dropFirst(4)) : nil
        case .rstStream: return payload.count >= 4 ? RawFrame.readUInt32(payload[...]) : nil
        default: return nil
        }
    }

    /// The SETTINGS entries of a SETTINGS frame.
    var settingsEntries: [UInt16: UInt32] {
        var entries: [UInt16: UInt32] = [:]
        var rest = payload[...]
        while rest.count >= 6 {
            entries[UInt16(rest[rest.startIndex]) << 8 | UInt16(rest[rest.startIndex + 1])] = RawFrame.readUInt32(rest.dropFirst(2))
            rest = rest.dropFirst(6)
        }
        return entries
    }
}

/// HPACK representations written by hand (RFC 7541), without Huffman coding.
enum HPACK {
    /// An integer with an `prefixBits`-bit prefix, the first byte's high bits set to `pattern`.
    static func integer(_ value: Int, prefixBits: Int, pattern: UInt8) -> [UInt8] {
        let limit = (1 << prefixBits) - 1
        if value < limit { return [pattern | UInt8(value)] }
        var out = [pattern | UInt8(limit)]
        var rest = value - limit
        while rest >= 128 {
            out.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        out.append(UInt8(rest))
        return out
    }

    static func string(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return integer(bytes.count, prefixBits: 7, pattern: 0) + bytes
    }

    /// A literal field without indexing, name given literally.
    static func literal(_ name: String, _ value: String) -> [UInt8] { [0x00] + string(name) + string(value) }

    /// A literal field with incremental indexing: it enters the dynamic table.
    static func indexedLiteral(_ name: String, _ value: String) -> [UInt8] { [0x40] + string(name) + string(value) }

    /// A field taken from the table by index (62 is the newest dynamic entry).
    static func indexed(_ index: Int) -> [UInt8] { integer(index, prefixBits: 7, pattern: 0x80) }

    /// A valid GET request for stream-less tests.
    static func request(path: String = "/", extra: [(String, String)] = []) -> [UInt8] {
        var block = literal(":method", "GET") + literal(":scheme", "https") + literal(":authority", "example.com")
            + literal(":path", path)
        for (name, value) in extra { block += literal(name, value) }
        return block
    }
}
