import PinproxyCertificates

/// One thing a capture file records: a completed (or failed) exchange, or a
/// TLS outcome of a client connection.
public enum CaptureRecord: Sendable {
    case flow(Flow)
    case event(TLSOutcomeEvent)
}

/// A destination for completed flows and TLS outcome events.
///
/// The recorder hands a sink its records in groups, in the order they were
/// recorded, from one writer at a time (see ``CaptureWriterQueue``); a sink
/// used directly may be called from any thread and must lock for itself.
public protocol CaptureSink: AnyObject, Sendable {
    /// What log lines call this destination (a file's path).
    var name: String { get }
    /// Writes `records`, in order, as one group: when this returns the
    /// destination holds them (at least `write()`n, not necessarily synced),
    /// and a file is complete and valid after every group. On an error the
    /// destination is left as it was before the group where it can be.
    func write(_ records: [CaptureRecord]) throws(PinproxyError)
    /// Flushes and releases the destination; writes after this throw.
    func close()
}

extension CaptureSink {
    /// Writes one flow as a group of its own.
    public func record(_ flow: Flow) throws(PinproxyError) { try write([.flow(flow)]) }
    /// Writes one TLS outcome event as a group of its own.
    public func record(_ event: TLSOutcomeEvent) throws(PinproxyError) { try write([.event(event)]) }
}
