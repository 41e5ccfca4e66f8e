import Dispatch
import Foundation
import PinproxyHTTP2

/// Per-stream response timeouts: a stream whose upstream sends no response
/// head within `services.timeouts.upstreamResponse` is answered 504 with the
/// reason, and its upstream stream is reset (relayed) or its HTTP/1.1
/// connection closed (translated). The clock starts when the request goes
/// upstream and starts again with each sign of progress before the head:
/// request body bytes the upstream took, an interim (1xx) response. The
/// connection's other streams go on.
///
/// One clock serves every stream of the connection: a stream only notes its
/// deadline, and the clock, when it runs out, answers the streams past theirs
/// and runs again for the earliest one left. A dispatch timer, a closure and
/// a timer object per stream cost ~7,500 instructions per relayed request
/// (docs/proxy.md, "HTTP/2"); every deadline is the same time after the
/// moment it is set, so a stream armed later is never due earlier than the
/// clock already is.
extension HTTP2ExchangeLayer {
    /// Starts `exchange`'s response clock. When it runs out, the leg's
    /// ``HTTP2StreamLeg/responseTimedOut(_:reason:)`` gets the reason.
    func armResponseTimer(_ exchange: HTTP2Exchange) {
        let due = DispatchTime.now() + services.timeouts.upstreamResponse
        exchange.responseDeadline = due
        if responseClockDue == nil { runResponseClock(until: due) }
    }

    /// Progress before the response head: the clock starts again.
    func extendResponseTimer(_ exchange: HTTP2Exchange) {
        guard exchange.response == nil, exchange.responseDeadline != nil else { return }
        exchange.responseDeadline = DispatchTime.now() + services.timeouts.upstreamResponse
    }

    private func runResponseClock(until due: DispatchTime) {
        responseClockDue = due
        responseClock.arm(at: due) { [owner] in owner.object?.responseClockRanOut() }
    }

    /// Answers the streams past their deadline, oldest first; the clock
    /// runs again for the earliest deadline left.
    private func responseClockRanOut() {
        responseClockDue = nil
        guard !closed else { return }
        let now = DispatchTime.now()
        var expired: [HTTP2Exchange] = []
        var next: DispatchTime?
        for exchange in byClient.values {
            guard let due = exchange.responseDeadline, exchange.response == nil, !exchange.answeredLocally else { continue }
            if due <= now {
                expired.append(exchange)
            } else if next == nil || due < next! {
                next = due
            }
        }
        if let next { runResponseClock(until: next) }
        guard !expired.isEmpty else { return }
        let reason = "the upstream sent no response within \(TimeoutText.seconds(services.timeouts.upstreamResponse))"
        for exchange in expired.sorted(by: { $0.clientStream < $1.clientStream }) where !closed {
            exchange.stopResponseClock()
            leg(of: exchange)?.responseTimedOut(exchange, reason: reason)
        }
        pump()
    }
}
