import PinproxyCertificates

/// What one client connection records: its TLS outcome, at most once, and
/// its flows, which carry that outcome. Shared by the connection's layers
/// in turn, on the connection's queue.
final class ConnectionRecord {
    /// The client's address, as flows and log lines show it.
    let peer: String
    private let recorder: FlowRecorder
    // Read for every flow; unchecked exclusivity as in HTTP1ExchangeLayer.
    /// The client's TLS outcome once recorded; flows on this connection carry it.
    @exclusivity(unchecked) private(set) var outcome: TLSOutcomeEvent?
    @exclusivity(unchecked) private(set) var outcomeRecorded = false

    init(peer: String, recorder: FlowRecorder) {
        self.peer = peer
        self.recorder = recorder
    }

    /// Records the connection's TLS outcome, unless one was already recorded.
    func recordOutcome(_ kind: TLSOutcomeEvent.Kind, host: String, port: Int, alert: String? = nil, reason: String?,
                       profile: AttackProfile?) {
        guard !outcomeRecorded else { return }
        outcomeRecorded = true
        let event = TLSOutcomeEvent(kind: kind, host: host, port: port, clientAddress: peer, alert: alert, reason: reason,
                                    profile: profile?.name)
        outcome = event
        recorder.record(event)
    }

    /// A request or CONNECT addressed to the proxy itself: always recorded,
    /// also after this connection's TLS outcome (a passthrough tunnel's).
    func recordSelfAddressed(_ own: OwnAddresses.Endpoint, host: HostName, port: Int) {
        let event = TLSOutcomeEvent(kind: .selfAddressed, host: host.description, port: port, clientAddress: peer,
                                    reason: own.description)
        if !outcomeRecorded {
            outcomeRecorded = true
            outcome = event
        }
        recorder.record(event)
    }

    func record(_ flow: Flow) { recorder.record(flow) }

    /// Whether a flow recorded here goes anywhere; when not, a layer calls
    /// ``countUnbuiltFlow()`` instead of building one.
    var wantsFlows: Bool { recorder.wantsFlows }

    func countUnbuiltFlow() { recorder.countUnbuiltFlow() }

    func makeBodyCapture() -> BodyCapture { recorder.makeBodyCapture() }
}
