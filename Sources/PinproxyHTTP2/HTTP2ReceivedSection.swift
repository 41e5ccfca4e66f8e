import Glibc
import PinproxyHTTP1

/// The fields of one header section as nghttp2 decodes them, kept the way
/// the head made of them keeps them: pseudo-header fields in their own
/// places, regular fields in an ``HTTPHeaders`` list. A head then takes
/// them over (``takeRequestHead()``, ``takeResponseHead()``): moved, not
/// copied, so that no field text is retained on the way and released after.
///
/// nghttp2 has checked the section before the application sees a field
/// (RFC 9113 §8.1.2, §8.3): pseudo-header fields come first, each at most
/// once, only those of the session's role; regular names are lower-case
/// tokens; values have no CR, LF or NUL.
struct HTTP2ReceivedSection {
    enum Kind { case request, response, trailers }

    /// What the first field made of the section: `:status` a response,
    /// another pseudo-header field a request, a regular field (or none) trailers.
    private(set) var kind = Kind.trailers
    /// Fields so far, pseudo-header fields included.
    private(set) var count = 0
    private(set) var method: String?
    private(set) var scheme: String?
    private(set) var authority: String?
    private(set) var path: String?
    /// `:status`, when it was 100 to 999.
    private(set) var status: Int?
    private(set) var regular = HTTPHeaders()

    /// Adds a field; its text comes from `texts` when the same bytes were
    /// at the same place last time.
    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, texts: inout HTTP2FieldTextCache) {
        let place = count
        count += 1
        guard name.first == UInt8(ascii: ":") else {
            // One allocation for most heads.
            if regular.isEmpty { regular.reserveCapacity(8) }
            let field = HTTPHeaders.Field(name: texts.name(name, at: place), value: texts.value(value, at: place))
            // A head's fields are as nghttp2 checked them; trailers are
            // looked at again, as any other list is.
            if kind == .trailers { regular.add(field) } else { regular.addWireSafe(field) }
            return
        }
        switch Name(name) {
        case .status:
            if count == 1 { kind = .response }
            status = HTTP2ResponseHead.status(value)
        case let other:
            if count == 1 { kind = .request }
            switch other {
            case .method: method = texts.value(value, at: place)
            case .scheme: scheme = texts.value(value, at: place)
            case .authority: authority = texts.value(value, at: place)
            case .path: path = texts.value(value, at: place)
            // `:protocol` (RFC 8441) and anything else: not kept.
            case .status, .other: break
            }
        }
    }

    /// The pseudo-header field names a head keeps.
    private enum Name {
        case method, scheme, authority, path, status, other

        init(_ name: UnsafeBufferPointer<UInt8>) {
            // Told apart by length and a letter, then confirmed whole (one
            // `memcmp`): generic comparison cost ~180 instructions a field.
            func equals(_ literal: StaticString) -> Bool {
                literal.utf8CodeUnitCount == name.count && memcmp(literal.utf8Start, name.baseAddress!, name.count) == 0
            }
            guard name.count >= 5 else { self = .other; return }
            switch (name.count, name[1]) {
            case (5, UInt8(ascii: "p")) where equals(":path"): self = .path
            case (7, UInt8(ascii: "m")) where equals(":method"): self = .method
            case (7, UInt8(ascii: "s")) where equals(":scheme"): self = .scheme
            case (7, UInt8(ascii: "s")) where equals(":status"): self = .status
            case (10, UInt8(ascii: "a")) where equals(":authority"): self = .authority
            default: self = .other
            }
        }
    }

    /// The request head made of the section, its fields moved into it; nil
    /// without `:method`. nghttp2 has checked the section: exactly one of
    /// each required pseudo-header, all before the regular fields.
    mutating func takeRequestHead() -> HTTP2RequestHead? {
        guard let method = method.take() else { return nil }
        return HTTP2RequestHead(method: method, scheme: scheme.take(), authority: authority.take(), path: path.take(),
                                receivedHeaders: takeFields())
    }

    /// The response head made of the section, its fields moved into it;
    /// nil without a `:status` of 100 to 999.
    mutating func takeResponseHead() -> HTTP2ResponseHead? {
        guard let status else { return nil }
        return HTTP2ResponseHead(status: status, receivedHeaders: takeFields())
    }

    /// The regular fields, moved out (trailers).
    mutating func takeFields() -> HTTPHeaders {
        var fields = HTTPHeaders()
        swap(&fields, &regular)
        return fields
    }
}

/// The field texts a session decoded last, by their place in the header
/// section, handed out again when the same bytes come at the same place.
///
/// HPACK makes a peer repeat itself: on a connection, request after request
/// carries the same `user-agent` and `accept` at the same places, response
/// after response the same `server`, `content-type` and `etag`. Making a
/// `String` of field text costs a look at every byte and, past 15 bytes, an
/// allocation and its free; comparing the bytes with the text made last time
/// costs one `memcmp`, and the head then shares that text.
struct HTTP2FieldTextCache {
    /// Places remembered: the first fields of a section, where repeats are.
    static let places = 24
    /// Texts longer than this are made afresh each time.
    static let longest = 256
    private var names: [String] = []
    private var values: [String] = []

    mutating func name(_ bytes: UnsafeBufferPointer<UInt8>, at place: Int) -> String {
        Self.text(bytes, at: place, in: &names)
    }

    mutating func value(_ bytes: UnsafeBufferPointer<UInt8>, at place: Int) -> String {
        Self.text(bytes, at: place, in: &values)
    }

    /// Forgets every text (an idle session gives its memory back).
    mutating func removeAll() {
        names = []
        values = []
    }

    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, at place: Int, in texts: inout [String]) -> String {
        guard place < places, bytes.count <= longest else { return HTTP2FieldText.string(bytes) }
        if place < texts.count, texts[place].utf8.withContiguousStorageIfAvailable({ known in
            known.count == bytes.count && (bytes.isEmpty || memcmp(known.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }) == true {
            return texts[place]
        }
        let text = HTTP2FieldText.string(bytes)
        // Places before this one that had no text of this kind (pseudo-header
        // fields have no name here) stay empty.
        while texts.count < place { texts.append("") }
        if place < texts.count { texts[place] = text } else { texts.append(text) }
        return text
    }
}
