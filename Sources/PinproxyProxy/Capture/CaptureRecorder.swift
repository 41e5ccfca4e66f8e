import Dispatch
import Logging
import PinproxyCertificates

/// Where connections report what they saw: keeps each record in the
/// in-memory ring behind the control API and queues it for the files (HAR,
/// JSON lines).
///
/// Recording costs the connection's event loop one lock and one array
/// append: encoding and writing happen on the capture writer's own queue,
/// in groups (see ``CaptureWriterQueue``). Recording never throws: a failing
/// file is logged once per failure, counted in ``statistics``, and the proxy
/// keeps serving, since a full disk must not take down traffic.
public final class CaptureRecorder: Sendable {
    public let sinks: [any CaptureSink]
    /// Recent flows and events for `GET /flows` and `GET /events`.
    public let recent: RecentCapture
    /// How many bytes of each body to keep; 0 keeps none.
    public let bodyCaptureLimit: Int
    /// Whether flows go to ``recent`` (TLS outcomes always do). Off, a flow
    /// is only written to the files, and with no files nobody reads it.
    public let keepsRecentFlows: Bool
    /// Whether a flow recorded here goes anywhere: the ring of recent flows
    /// or a file.
    public var wantsFlows: Bool { keepsRecentFlows || writer != nil }
    private let writer: CaptureWriterQueue?
    private let logger: Logger?

    /// - Parameter groupWindow: how long the writer gathers records into one
    ///   group under load; a lone record is written at once.
    /// - Parameter keepsRecentFlows: false for a daemon without the control
    ///   API, where no one asks for `GET /flows`.
    public init(sinks: [any CaptureSink] = [], recent: RecentCapture = RecentCapture(), bodyCaptureLimit: Int = 0,
                keepsRecentFlows: Bool = true, groupWindow: DispatchTimeInterval = .milliseconds(1), logger: Logger? = nil) {
        self.sinks = sinks
        self.recent = recent
        self.bodyCaptureLimit = max(0, bodyCaptureLimit)
        self.keepsRecentFlows = keepsRecentFlows
        self.logger = logger
        writer = sinks.isEmpty ? nil : CaptureWriterQueue(sinks: sinks, groupWindow: groupWindow, logger: logger)
    }

    /// A body accumulator with this recorder's limit.
    public func makeBodyCapture() -> BodyCapture { BodyCapture(limit: bodyCaptureLimit) }

    /// Records a completed (or failed) exchange everywhere.
    public func record(_ flow: Flow) {
        if keepsRecentFlows { recent.record(flow) }
        writer?.enqueue(.flow(flow))
    }

    /// Records a TLS outcome everywhere and logs its plain-words message.
    public func record(_ event: TLSOutcomeEvent) {
        recent.record(event)
        if event.kind.isDefiniteRefusal || event.kind == .upstreamVerificationFailed {
            logger?.warning("\(event.clientAddress): \(event.message)")
        } else if event.kind.isSuspectedRefusal {
            // A probe looks the same: worth a notice, not a warning.
            logger?.notice("\(event.clientAddress): \(event.message)")
        } else if event.kind == .intercepted, let profile = event.profile, profile != AttackProfile.forge.name,
                  !AttackProfile(profile).isRotation {
            // A client that accepts an expired, self-signed, misissued... chain is
            // the finding a tester is looking for: louder than an ordinary flow. Accepting a
            // rotation (`rotate-…`) is what a good client does: an ordinary line.
            logger?.warning("\(event.clientAddress): \(event.message)")
        } else {
            logger?.info("\(event.clientAddress): \(event.message)")
        }
        writer?.enqueue(.event(event))
    }

    /// Returns once every record recorded before the call is in the files.
    public func flush() { writer?.flush() }

    /// What the capture writer has written and lost so far.
    public var statistics: CaptureStatistics { writer?.currentStatistics ?? CaptureStatistics() }

    /// Writes what is queued and closes every sink; call once when the daemon stops.
    public func close() {
        if let writer { writer.close() } else { for sink in sinks { sink.close() } }
    }
}
