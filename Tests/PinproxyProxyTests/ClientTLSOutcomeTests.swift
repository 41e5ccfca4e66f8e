import Logging
import PinproxyCertificates
@testable import PinproxyProxy
import PinproxyTLS
import Testing

/// How the TLS layer names a client's refusal, driven without sockets.
@Suite("Client TLS outcome")
struct ClientTLSOutcomeTests {
    /// An outcome for `example.com:443` under `forge`, and where its events land.
    static func outcome(upstreamFailed: Bool = false) -> (ClientTLSOutcome, CaptureRecorder) {
        let capture = CaptureRecorder()
        let recorder = FlowRecorder(capture: capture, counters: ProxyCounters(), logger: Logger(label: "test"))
        let record = ConnectionRecord(peer: "127.0.0.1:50000", recorder: recorder)
        let outcome = ClientTLSOutcome(connectionRecord: record, host: "example.com", port: 443, profile: .forge,
                                       upstreamFailed: upstreamFailed)
        return (outcome, capture)
    }

    @Test("an alert during the handshake is the client's refusal, named")
    func alertIsARefusal() throws {
        let (outcome, capture) = Self.outcome()
        outcome.endedDuringHandshake(.tlsFailed(TLSFailure(kind: .alertReceived, reason: "alert", receivedAlert: .unknownCA)))
        let event = try #require(capture.recent.events.first)
        #expect(event.kind == .clientAlert)
        #expect(event.alert == "unknown_ca")
        #expect(event.host == "example.com" && event.port == 443 && event.profile == "forge")
    }

    @Test("a reset and a plain close during the handshake are told apart")
    func resetAndClose() {
        let (reset, resets) = Self.outcome()
        reset.endedDuringHandshake(.reset)
        #expect(resets.recent.events.map(\.kind) == [.reset])
        let (closed, closes) = Self.outcome()
        closed.endedDuringHandshake(.closed)
        #expect(closes.recent.events.map(\.kind) == [.closedDuringHandshake])
    }

    @Test("no shared protocol or cipher, and other failures only when nothing was recorded")
    func handshakeFailures() {
        let (outcome, capture) = Self.outcome()
        outcome.handshakeFailed(TLSFailure(kind: .noSharedParameters, reason: "no shared cipher"), tls: nil)
        #expect(capture.recent.events.map(\.kind) == [.noSharedProtocolOrCipher])
        outcome.handshakeFailed(TLSFailure(kind: .other, reason: "later"), tls: nil)
        #expect(capture.recent.events.count == 1, "one outcome per connection")
    }

    @Test("the first request makes it intercepted, unless the upstream failed")
    func firstRequest() {
        let (outcome, capture) = Self.outcome()
        outcome.firstRequest()
        #expect(capture.recent.events.map(\.kind) == [.intercepted])
        let (failed, failures) = Self.outcome(upstreamFailed: true)
        failed.firstRequest()
        #expect(failures.recent.events.isEmpty)
    }
}
