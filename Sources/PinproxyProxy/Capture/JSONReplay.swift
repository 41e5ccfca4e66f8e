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
    /// One kind of value: the last one written and its bytes.
    ///
    /// The value is kept behind a pointer and compared in place: comparing
    /// an optional stored property copied the whole value first (a retain
    /// and a release for each of its strings and arrays), which cost more
    /// than the comparison itself.
    final class Slot<Value: Equatable> {
        private let stored = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        private var filled = false
        var bytes: [UInt8] = []

        /// Whether `value` equals the last one written.
        func holds(_ value: Value) -> Bool { filled && stored.pointee == value }

        /// Keeps a copy of `value` as the last one written.
        func keep(_ value: Value) {
            if filled { stored.pointee = value } else { stored.initialize(to: value) }
            filled = true
        }

        deinit {
            if filled { stored.deinitialize(count: 1) }
            stored.deallocate()
        }
    }

    let event = Slot<TLSOutcomeEvent>()
    let clientTLS = Slot<ClientTLSDetails>()
    let upstreamTLS = Slot<UpstreamTLSDetails>()
    /// The JSON lines file's `request` and `response` objects.
    let request = Slot<FlowRequest>()
    let response = Slot<FlowResponse>()
    /// The HAR's `request` and `response` objects (with cookies, query string, MIME type).
    let harRequest = Slot<FlowRequest>()
    let harResponse = Slot<FlowResponse>()
    /// Header lists, the same in both formats: reused when the request or
    /// response around them differs (another URL, another `Date`).
    let requestHeaders = Slot<[FlowHeader]>()
    let responseHeaders = Slot<[FlowHeader]>()
    /// `"2026-11-24T10:11:31.` for ``dateSecond``: dates in one second share it.
    var datePrefix: [UInt8] = []
    var dateSecond: Int64 = -1
}

extension JSONOutput {
    /// Writes `value` through `write`, or copies the bytes written for it
    /// last time when it equals the slot's value. `write` is handed the value
    /// rather than capturing it: a capture copied it.
    mutating func cached<Value: Equatable>(_ value: Value, in slot: JSONReplay.Slot<Value>,
                                           _ write: (inout JSONOutput, Value) -> Void) {
        if slot.holds(value) { return writeRecorded(slot.bytes) }
        slot.keep(value)
        recording(into: &slot.bytes) { write(&$0, value) }
    }
}
