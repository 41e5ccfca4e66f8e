/// Comma-separated lists in field values (RFC 9110 §5.6.1): `Connection`,
/// `Transfer-Encoding`, `Expect`, `TE`.
extension HTTPHeaders {
    /// The comma-separated list elements of every field called `name`,
    /// trimmed, lower-cased, empty elements dropped (RFC 9110 §5.6.1).
    public func tokens(name: String) -> [String] {
        self[name].flatMap(HTTPHeaders.tokens(in:))
    }

    /// Whether a field called `name` lists `token`, ignoring case: the same
    /// answer as `tokens(name: name).contains(token.lowercased())`, without
    /// allocating for ASCII values (`Connection: close`, `Expect: 100-continue`).
    public func containsToken(name: String, token: String) -> Bool {
        guard !token.isEmpty else { return false }
        return token.withUTF8Bytes { tokenBytes in
            guard HTTP1Bytes.isASCII(tokenBytes) else { return tokens(name: name).contains(token.lowercased()) }
            var found = firstIndex(name: name)
            while let position = found {
                if HTTPHeaders.list(fields[position].value, containsASCIIToken: tokenBytes) { return true }
                found = firstIndex(name: name, from: position + 1)
            }
            return false
        }
    }

    /// ``containsToken(name:token:)`` for an indexed name and a literal, lower-case ASCII token.
    func containsToken(_ name: HTTPFieldIndex.Name, _ token: StaticString) -> Bool {
        var found = firstIndex(name)
        while let position = found {
            if HTTPHeaders.list(fields[position].value, containsASCIIToken: HTTP1Bytes.buffer(token)) { return true }
            found = firstIndex(name, from: position + 1)
        }
        return false
    }

    /// Whether the list `value` has an element equal to `token` (ASCII) ignoring case.
    static func list(_ value: String, containsASCIIToken token: UnsafeBufferPointer<UInt8>) -> Bool {
        value.withUTF8Bytes { list in
            // Outside ASCII, Character-wise splitting may differ from byte-wise
            // (a combining mark joins a comma): ask the general code.
            guard HTTP1Bytes.isASCII(list) else {
                let lowered = String(decoding: token, as: UTF8.self).lowercased()
                return tokens(in: value).contains(lowered)
            }
            return HTTP1Bytes.anyListElement(list) { element in
                element.count == token.count && HTTP1Bytes.equalsIgnoringCase(element, token)
            }
        }
    }

    /// The elements of one list value, trimmed, lower-cased, empty ones dropped.
    static func tokens(in value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingHTTPWhitespace().lowercased() }.filter { !$0.isEmpty }
    }
}

extension String {
    /// ASCII case-insensitive equality, which is what header names and tokens need.
    /// (The `StringProtocol` version, for two `String`s without generic dispatch.)
    @inline(__always)
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return withUTF8Bytes { a in other.withUTF8Bytes { b in HTTP1Bytes.equalsIgnoringCase(a, b) } }
    }
}

extension StringProtocol {
    /// ASCII case-insensitive equality, which is what header names and tokens need.
    package func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        let contiguous = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in HTTP1Bytes.equalsIgnoringCase(x, y) }
        }
        if let contiguous, let result = contiguous { return result }
        return zip(a, b).allSatisfy { x, y in HTTP1Bytes.equalsIgnoringCase(x, y) }
    }

    /// The string without leading and trailing spaces and tabs.
    package func trimmingHTTPWhitespace() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let f = scalars.first, f == " " || f == "\t" { scalars.removeFirst() }
        while let l = scalars.last, l == " " || l == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
