/// Which fields stay on this hop (RFC 9110 §7.6.1), decided without
/// lower-casing every name.
///
/// The rule is ``HTTP1Forwarding/removingHopByHop(_:keepingUpgrade:)``'s: a
/// field goes when its lower-cased name is in
/// ``HTTP1Forwarding/hopByHopFields`` or is listed in `Connection`, except
/// `upgrade` while an upgrade is relayed, and except `host`: a sender must not
/// name an end-to-end field in `Connection` (RFC 9110 §7.6.1), and Host is
/// what the request is routed by — dropped, it would leave an HTTP/1.1
/// request without one, which the proxy itself refuses. The fast path finds those fields
/// through the head's ``HTTPFieldIndex`` and marks their positions; it
/// applies to wire-safe heads (token names, so ASCII) whose `Connection`
/// values are ASCII, which is what parsed heads are. Anything else takes the
/// rule as written, on lower-cased strings.
enum HopByHop {
    /// The hop-by-hop fields, as indexed names.
    static let fieldNames: HTTPFieldIndex.Names = [
        .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .proxyAuthenticate,
        .te, .trailer, .transferEncoding, .upgrade,
    ]

    /// `headers` without the fields the rule drops.
    static func removing(from headers: HTTPHeaders, keepingUpgrade: Bool) -> HTTPHeaders {
        if let dropped = dropped(in: headers, keepingUpgrade: keepingUpgrade) {
            // Nothing to drop (a request with none of these fields): share the storage.
            guard !dropped.positions.isEmpty else { return headers }
            var kept: [HTTPHeaders.Field] = []
            // Every caller adds a few fields afterwards.
            kept.reserveCapacity(headers.count + 4)
            for position in headers.fields.indices where !dropped.positions.contains(position) {
                kept.append(headers.fields[position])
            }
            return HTTPHeaders(
                wireSafeFields: kept,
                index: headers.fieldIndex.removing(names: dropped.names, positions: dropped.positions))
        }
        var result = HTTPHeaders()
        result.reserveCapacity(headers.count + 4)
        var drop = HTTP1Forwarding.hopByHopFields
        for token in headers.tokens(name: "Connection") where token != "upgrade" || !keepingUpgrade {
            drop.insert(token)
        }
        if keepingUpgrade { drop.remove("upgrade") }
        drop.remove("host")
        for field in headers where !drop.contains(field.name.lowercased()) { result.add(field) }
        return result
    }

    /// What the rule drops: every field with an indexed name in `names`, and
    /// the fields at `positions` (those included).
    struct Dropped {
        var names = HTTPFieldIndex.Names()
        var positions = HTTPFieldIndex.Positions()

        /// Drops every field with `name`; an indexed name goes for all its fields or none.
        mutating func drop(_ name: HTTPFieldIndex.Name, in headers: HTTPHeaders) {
            guard !names.contains(name), var position = headers.firstIndex(name) else { return }
            names.insert(name)
            positions.insert(position)
            while let next = headers.firstIndex(name, from: position + 1) {
                positions.insert(next)
                position = next
            }
        }

        /// Drops the fields called `name` (ASCII), indexed or not.
        mutating func drop(named name: UnsafeBufferPointer<UInt8>, in headers: HTTPHeaders) {
            if let indexed = HTTPFieldIndex.Name.matching(name) { return drop(indexed, in: headers) }
            for position in headers.fields.indices
            where headers.fields[position].name.withUTF8Bytes({ HTTP1Bytes.equalsIgnoringCase($0, name) }) {
                positions.insert(position)
            }
        }
    }

    /// The fields to drop, or nil when the rule must be applied as written (see the type's note).
    static func dropped(in headers: HTTPHeaders, keepingUpgrade: Bool) -> Dropped? {
        guard headers.isWireSafe, headers.isIndexed else { return nil }
        var dropped = Dropped()
        var present = headers.fieldIndex.present.intersection(fieldNames)
        if keepingUpgrade { present.remove(.upgrade) }
        for name in present { dropped.drop(name, in: headers) }
        // The fields `Connection` names, by name.
        var connection = headers.firstIndex(.connection)
        while let position = connection {
            let isASCII = headers.fields[position].value.withUTF8Bytes { list -> Bool in
                guard HTTP1Bytes.isASCII(list) else { return false }
                var elements = HTTP1Bytes.ListElements(list)
                while let element = elements.next() {
                    if element.isEmpty { continue }
                    let indexed = HTTPFieldIndex.Name.matching(element)
                    if indexed == .host || keepingUpgrade && indexed == .upgrade { continue }
                    dropped.drop(named: element, in: headers)
                }
                return true
            }
            guard isASCII else { return nil }
            connection = headers.firstIndex(.connection, from: position + 1)
        }
        return dropped
    }
}
