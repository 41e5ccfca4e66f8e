import Foundation

/// Finds the first syntax error of a JSON text and where it is, so a policy file's
/// error can name the line and column.
///
/// Strict RFC 8259 (what docs/policies.md promises): no trailing commas, no
/// comments, no single quotes, and — because a policy must say one thing — no key
/// repeated in one object (JSONSerialization would silently keep the last).
enum JSONSyntax {
    struct Problem: Error, Equatable {
        /// Byte offset in the text.
        var offset: Int
        var message: String
    }

    /// The first problem, or nil when the text is well-formed JSON.
    static func check(_ bytes: [UInt8]) -> Problem? {
        var scanner = JSONScanner(bytes: bytes)
        do {
            try scanner.document()
            return nil
        } catch let problem as Problem {
            return problem
        } catch {
            return nil
        }
    }

    /// The 1-based line and column (counted in characters) of a byte offset.
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while index < min(offset, bytes.count) {
            let byte = bytes[index]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return (line, column)
    }

    /// The byte offset in a JSONSerialization error ("… around character 40."), if it gives one.
    static func offset(inParserError error: any Error) -> Int? {
        let info = (error as NSError).userInfo
        let text = (info[NSDebugDescriptionErrorKey] as? String) ?? ""
        if let index = info["NSJSONSerializationErrorIndex"] as? Int { return index }
        guard let range = text.range(of: "around character ") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }
}

private struct JSONScanner {
    let bytes: [UInt8]
    var index = 0
    var depth = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func document() throws {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipSpace()
        if current == nil { throw fail("the file is empty; expected a JSON object") }
        try value()
        skipSpace()
        if current != nil { throw fail("unexpected \(found()) after the end of the top-level value") }
    }

    func fail(_ message: String, at offset: Int? = nil) -> JSONSyntax.Problem {
        JSONSyntax.Problem(offset: offset ?? index, message: message)
    }

    /// What stands at the current position, for messages.
    func found() -> String {
        guard let byte = current else { return "the end of the file" }
        func isWord(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b | 0x20 >= 0x61 && b | 0x20 <= 0x7A) || b == 0x2D || b == 0x2B || b == 0x2E }
        if isWord(byte) {
            let word = bytes[index...].prefix(while: isWord).prefix(24)
            return "'\(String(decoding: word, as: UTF8.self))'"
        }
        if byte < 0x20 { return "a control character (0x\(String(byte, radix: 16)))" }
        let scalarBytes = bytes[index...].prefix(byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2)
        return "'\(String(decoding: scalarBytes, as: UTF8.self))'"
    }

    mutating func skipSpace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func value() throws {
        guard let byte = current else { throw fail("expected a value, found the end of the file") }
        switch byte {
        case UInt8(ascii: "{"): try object()
        case UInt8(ascii: "["): try array()
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        case UInt8(ascii: "'"): throw fail("strings take double quotes, not single quotes")
        case UInt8(ascii: "/"): throw fail("JSON has no comments")
        default: throw fail("expected a value, found \(found())")
        }
    }

    mutating func enter() throws {
        depth += 1
        if depth > 512 { throw fail("nested more than 512 levels deep") }
    }

    mutating func object() throws {
        var keys = Set<String>()
        try container(close: UInt8(ascii: "}"), noun: "object") { scanner in
            guard scanner.current == UInt8(ascii: "\"") else {
                if scanner.current == UInt8(ascii: "/") { throw scanner.fail("JSON has no comments") }
                throw scanner.fail("expected a key in double quotes, found \(scanner.found())")
            }
            let keyStart = scanner.index
            let key = try scanner.string()
            guard keys.insert(key).inserted else { throw scanner.fail("key \"\(key)\" appears twice in one object", at: keyStart) }
            scanner.skipSpace()
            guard scanner.current == UInt8(ascii: ":") else {
                throw scanner.fail("expected ':' after the key \"\(key)\", found \(scanner.found())")
            }
            scanner.index += 1
            scanner.skipSpace()
            try scanner.value()
            return "after the value of \"\(key)\""
        }
    }

    mutating func array() throws {
        try container(close: UInt8(ascii: "]"), noun: "list") { scanner in
            try scanner.value()
            return "in the list"
        }
    }

    /// An object or array: members separated by commas up to `close`.
    /// `member` reads one member and says where it is, for the message when
    /// neither a comma nor `close` follows.
    private mutating func container(close: UInt8, noun: String, member: (inout Self) throws -> String) throws {
        let start = index
        try enter()
        index += 1
        skipSpace()
        if current == close { index += 1; depth -= 1; return }
        let closing = String(UnicodeScalar(close))
        while true {
            skipSpace()
            if current == nil { throw fail("the \(noun) opened at \(place(start)) is never closed", at: start) }
            let position = try member(&self)
            skipSpace()
            switch current {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                skipSpace()
                if current == close { throw fail("a comma before '\(closing)' (trailing commas are not JSON)", at: comma) }
            case close:
                index += 1
                depth -= 1
                return
            case nil:
                throw fail("the \(noun) opened at \(place(start)) is never closed", at: start)
            default:
                throw fail("expected ',' or '\(closing)' \(position), found \(found())")
            }
        }
    }

    func place(_ offset: Int) -> String {
        let (line, column) = JSONSyntax.position(of: offset, in: bytes)
        return "line \(line), column \(column)"
    }

    /// A string at the current position, decoded.
    mutating func string() throws -> String {
        let start = index
        index += 1
        var decoded: [UInt8] = []
        while true {
            guard let byte = current else { throw fail("the string opened at \(place(start)) is never closed", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard let escape = current else { throw fail("the string opened at \(place(start)) is never closed", at: start) }
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    let escapeStart = index - 1
                    var unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit) {
                        guard bytes[index...].starts(with: Array("\\u".utf8)) else {
                            throw fail("\\u\(String(unit, radix: 16)) is half of a surrogate pair", at: escapeStart)
                        }
                        index += 1
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("\\u\(String(unit, radix: 16)) is half of a surrogate pair", at: escapeStart) }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        throw fail("\\u\(String(unit, radix: 16)) is half of a surrogate pair", at: escapeStart)
                    }
                    decoded += Array(String(Character(Unicode.Scalar(unit)!)).utf8)
                    continue
                default:
                    throw fail("'\\\(String(decoding: [escape], as: UTF8.self))' is not a JSON escape", at: index - 1)
                }
                index += 1
            case 0x0A, 0x0D:
                throw fail("the string opened at \(place(start)) runs to the end of the line (a missing '\"'?)", at: start)
            case ..<0x20:
                throw fail("a control character (0x\(String(byte, radix: 16))) in a string must be escaped")
            default:
                decoded.append(byte)
                index += 1
            }
        }
    }

    /// Reads `uXXXX` (the index is on the `u`) and leaves the index after it.
    mutating func hex4() throws -> UInt32 {
        let start = index - 1
        index += 1
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = hexValue(byte) else { throw fail("\\u needs four hex digits", at: start) }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    mutating func literal(_ word: String) throws {
        let expected = Array(word.utf8)
        guard bytes[index...].starts(with: expected) else { throw fail("expected a value, found \(found())") }
        let after = index + expected.count
        if after < bytes.count, (bytes[after] | 0x20) >= 0x61, (bytes[after] | 0x20) <= 0x7A {
            throw fail("expected a value, found \(found())")
        }
        index = after
    }

    mutating func number() throws {
        let start = index
        func digits() -> Int {
            let from = index
            while let byte = current, byte >= 0x30, byte <= 0x39 { index += 1 }
            return index - from
        }
        func bad() -> JSONSyntax.Problem {
            index = start
            return fail("\(found()) is not a JSON number")
        }
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
            if let byte = current, byte >= 0x30, byte <= 0x39 { throw bad() }
        } else if digits() == 0 {
            throw bad()
        }
        if current == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { throw bad() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            if digits() == 0 { throw bad() }
        }
    }
}
