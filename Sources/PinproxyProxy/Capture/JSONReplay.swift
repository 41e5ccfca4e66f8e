/// What a capture writer wrote last for each kind of repeated value, with
/// the bytes it wrote, so that a flow repeating it costs one comparison and
/// one copy instead of encoding it again.
///
/// Flows repeat most of what they hold: the flows of one connection share
/// their TLS details and outcome, a client sends the same request fields
/// every time, and a server's response fields change once a second (`Date`).
/// Encoding the header lists alone was a third of the capture writer's
/// instructions per flow. Comparing is cheap when the values share storage
/// (an array or string compares its buffer first) and still far cheaper
/// than escaping when they are equal copies; a value that differs costs the
/// comparison, usually cut short at the first differing field.
///
/// One per ``JSONOutput``, used only by its owner (a writer under its lock).
final class JSONReplay {
    /// One kind of value: the last few written, each with its bytes.
    ///
    /// Several, because flows of many connections interleave in a group:
    /// with one entry, every flow from another connection than the one
    /// before re-encoded its outcome and TLS details. An entry that shares
    /// the value's storage is looked for first (``ReplayIdentity``: a copy of
    /// a connection's outcome or TLS details); then the entry hit last, then
    /// the others, are compared with `==`; a value found in none replaces the
    /// entries in turn.
    ///
    /// Values are kept behind a pointer and compared in place: comparing an
    /// optional stored property copied the whole value first (a retain and a
    /// release for each of its strings and arrays), which cost more than the
    /// comparison itself.
    final class Slot<Value: ReplayIdentity> {
        let capacity: Int
        private let values: UnsafeMutablePointer<Value>
        private var filled = 0
        /// The bytes written for each entry. Used only by the owner, under
        /// its lock: the run-time exclusivity checks (three per flow) are skipped.
        @exclusivity(unchecked) var bytes: [[UInt8]]
        /// The entry hit or written last, compared first.
        private var last = 0
        /// The entry the next new value replaces.
        private var next = 0

        init(capacity: Int) {
            self.capacity = max(1, capacity)
            values = .allocate(capacity: self.capacity)
            bytes = Array(repeating: [], count: self.capacity)
        }

        /// The entry holding a value equal to `value`, if any: one that
        /// shares its storage, else one equal to it.
        func find(_ value: Value) -> Int? {
            if Value.sharedAcrossFlows {
                for index in 0..<filled where values[index].sharesStorage(with: value) {
                    last = index
                    return index
                }
            }
            guard let equal = findEqual(value) else { return nil }
            guard Value.sharedAcrossFlows else { return equal }
            // Equal, in other storage: another connection's copy of the same
            // details. Kept as an entry of its own, with the same bytes
            // (shared, not copied), so that its next flows find it by storage.
            let alias = keep(value)
            bytes[alias] = bytes[equal]
            return alias
        }

        private func findEqual(_ value: Value) -> Int? {
            if last < filled && values[last] == value { return last }
            for index in 0..<filled where index != last && values[index] == value {
                last = index
                return index
            }
            return nil
        }

        /// Keeps a copy of `value` in the next entry in turn and returns it.
        func keep(_ value: Value) -> Int {
            let index = next
            if index < filled { values[index] = value } else {
                (values + index).initialize(to: value)
                filled += 1
            }
            next = (index + 1) % capacity
            last = index
            return index
        }

        deinit {
            values.deinitialize(count: filled)
            values.deallocate()
        }
    }

    /// Per connection: as many as connections whose flows interleave (TLS
    /// details equal across connections take an entry per connection too).
    let event = Slot<TLSOutcomeEvent>(capacity: 64)
    let clientTLS = Slot<ClientTLSDetails>(capacity: 64)
    let upstreamTLS = Slot<UpstreamTLSDetails>(capacity: 64)
    /// The JSON lines file's `request` and `response` objects.
    let request = Slot<FlowRequest>(capacity: 8)
    let response = Slot<FlowResponse>(capacity: 8)
    /// The HAR's `request` and `response` objects (with cookies, query string, MIME type).
    let harRequest = Slot<FlowRequest>(capacity: 8)
    let harResponse = Slot<FlowResponse>(capacity: 8)
    /// Header lists, the same in both formats: reused when the request or
    /// response around them differs (another URL, another `Date`).
    let requestHeaders = Slot<[FlowHeader]>(capacity: 8)
    let responseHeaders = Slot<[FlowHeader]>(capacity: 8)
    /// `"2026-11-24T10:11:31.` for ``dateSecond``: dates in one second share it.
    @exclusivity(unchecked) var datePrefix: [UInt8] = []
    @exclusivity(unchecked) var dateSecond: Int64 = -1
}

extension JSONOutput {
    /// Writes `value` through `write`, or copies the bytes written for it
    /// last time when it equals one of the slot's values. `write` is handed the value
    /// rather than capturing it: a capture copied it. Without `keeping`, the
    /// value is written afresh and not kept (a captured body: bodies seldom
    /// repeat, and a kept one would hold up to the capture limit's bytes).
    mutating func cached<Value: ReplayIdentity>(_ value: Value, in slot: JSONReplay.Slot<Value>, keeping: Bool = true,
                                           _ write: (inout JSONOutput, Value) -> Void) {
        guard keeping else { return write(&self, value) }
        if let index = slot.find(value) { return writeRecorded(slot.bytes[index]) }
        let index = slot.keep(value)
        recording(into: &slot.bytes[index]) { write(&$0, value) }
    }
}
