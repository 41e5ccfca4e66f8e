import Foundation
import Logging
import PinproxyBase
import PinproxyProxy
import Testing

/// How the proxy speaks of the rotation profiles (`serve --rotation-ca`): a legitimate change,
/// not an attack. Accepting one is what a good client does; refusing one is an outage to come.
@Suite("Capture: rotation profiles in events and log lines")
struct RotationEventTests {
    /// The log line the recorder writes for `event`, as "level message".
    static func logged(_ event: TLSOutcomeEvent) -> String {
        let lines = Locked<[String]>([])
        var logger = Logger(label: "pinproxy-test") { _ in CollectingLogHandler(lines: lines) }
        logger.logLevel = .info
        CaptureRecorder(logger: logger).record(event)
        return lines.withLock { $0.joined(separator: "\n") }
    }

    static func event(_ kind: TLSOutcomeEvent.Kind, profile: String, alert: String? = nil) -> TLSOutcomeEvent {
        TLSOutcomeEvent(kind: kind, host: "api.staging.example.com", clientAddress: "127.0.0.1:1", alert: alert, profile: profile)
    }

    @Test func anAcceptedRotationIsAnOrdinaryLineAndARefusedOneAnOutageToCome() {
        let accepted = Self.logged(Self.event(.intercepted, profile: "rotate-rekey"))
        #expect(accepted == "info 127.0.0.1:1: client accepted the rotated certificate for api.staging.example.com and sent a request (profile rotate-rekey)")
        // An accepted attack stays the warning a tester looks for.
        #expect(Self.logged(Self.event(.intercepted, profile: "expired")).hasPrefix("warning "))
        let refused = Self.logged(Self.event(.clientAlert, profile: "rotate-ca-switch", alert: "unknown_ca"))
        #expect(refused == "warning 127.0.0.1:1: client refused the rotated certificate for api.staging.example.com (alert unknown_ca) — the app would go offline on this change: an outage to come, not an attack stopped (profile rotate-ca-switch)")
    }
}
