/// The stored properties of a value type kept in one box that copies share
/// until one of them changes (copy on write).
///
/// A connection's TLS details and outcome go into every flow it records.
/// Held inline, each copy retained every string in them (a dozen for an
/// outcome, seven for the client's TLS details) and released them again
/// when the flow went: about forty atomic operations per relayed request.
/// In a box a copy is one retain, and two copies are known equal without
/// looking at a field (``isShared(with:)``).
struct SharedFields<Fields: Sendable>: Sendable {
    private final class Box: @unchecked Sendable {
        // Sendable: written only while uniquely referenced (see `fields`),
        // read-only once shared, so no two accesses overlap and the run-time
        // exclusivity checks are skipped too.
        @exclusivity(unchecked) var fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var box: Box

    init(_ fields: Fields) { box = Box(fields) }

    /// Read in place; a change copies the box first when another value shares it.
    var fields: Fields {
        _read { yield box.fields }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
            yield &box.fields
        }
    }

    /// Whether both are the one box: copies of one value, so equal.
    @inline(__always)
    func isShared(with other: SharedFields) -> Bool { box === other.box }
}

extension SharedFields: Equatable where Fields: Equatable {
    static func == (a: SharedFields, b: SharedFields) -> Bool {
        a.isShared(with: b) || a.fields == b.fields
    }
}

/// Hashes the fields, as if they were stored inline.
extension SharedFields: Hashable where Fields: Hashable {
    func hash(into hasher: inout Hasher) { fields.hash(into: &hasher) }
}
