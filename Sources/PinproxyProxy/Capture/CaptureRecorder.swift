import Logging
import PinproxyCertificates

/// A destination for completed flows and TLS outcome events.
///
/// Implementations are called from many connection queues at once and must
/// have written the record durably enough (at least `write()`) when `record`
/// returns.
public protocol CaptureSink: AnyObject, Sendable {
    func record(_ flow: Flow) throws(PinproxyError)
    func record(_ event: TLSOutcomeEvent) throws(PinproxyError)
    /// Flushes and releases the destination; records after this may throw.
    func close()
}

/// Where connections report what they saw: fans each record out to the
/// files (HAR, JSON lines) and the in-memory ring behind the control API.
///
/// Recording never throws: a failing file is logged once per failure and
/// the proxy keeps serving, since a full disk must not take down traffic.
public final class CaptureRecorder: Sendable {
    public let sinks: [any CaptureSink]
    /// Recent flows and events for `GET /flows` and `GET /events`.
    public let recent: RecentCapture
    /// How many bytes of each body to keep; 0 keeps none.
    public let bodyCaptureLimit: Int
    private let logger: Logger?

    public init(sinks: [any CaptureSink] = [], recent: RecentCapture = RecentCapture(), bodyCaptureLimit: Int = 0, logger: Logger? = nil) {
        self.sinks = sinks
        self.recent = recent
        self.bodyCaptureLimit = max(0, bodyCaptureLimit)
        self.logger = logger
    }

    /// A body accumulator with this recorder's limit.
    public func makeBodyCapture() -> BodyCapture { BodyCapture(limit: bodyCaptureLimit) }

    /// Records a completed (or failed) exchange everywhere.
    public func record(_ flow: Flow) {
        recent.record(flow)
        for sink in sinks {
            do { try sink.record(flow) } catch {
                logger?.error("could not record flow \(flow.request.method) \(flow.request.url): \(error.reason)")
            }
        }
    }

    /// Records a TLS outcome everywhere and logs its plain-words message.
    public func record(_ event: TLSOutcomeEvent) {
        recent.record(event)
        if event.kind.isDefiniteRefusal || event.kind == .upstreamVerificationFailed {
            logger?.warning("\(event.clientAddress): \(event.message)")
        } else if event.kind.isSuspectedRefusal {
            // A probe looks the same: worth a notice, not a warning.
            logger?.notice("\(event.clientAddress): \(event.message)")
        } else {
            logger?.info("\(event.clientAddress): \(event.message)")
        }
        for sink in sinks {
            do { try sink.record(event) } catch {
                logger?.error("could not record a TLS event for \(event.host): \(error.reason)")
            }
        }
    }

    /// Closes every sink; call once when the daemon stops.
    public func close() {
        for sink in sinks { sink.close() }
    }
}
