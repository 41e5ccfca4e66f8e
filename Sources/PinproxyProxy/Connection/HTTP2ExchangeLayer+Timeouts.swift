import Foundation
import PinproxyHTTP2

/// Per-stream response timeouts: a stream whose upstream sends no response
/// head within `services.timeouts.upstreamResponse` is answered 504 with the
/// reason, and its upstream stream is reset (relayed) or its HTTP/1.1
/// connection closed (translated). The clock starts when the request goes
/// upstream and starts again with each sign of progress before the head:
/// request body bytes the upstream took, an interim (1xx) response. The
/// connection's other streams go on.
extension HTTP2ExchangeLayer {
    /// Starts `exchange`'s response clock; `timedOut` gets the reason when it runs out.
    func armResponseTimer(_ exchange: HTTP2Exchange, _ timedOut: @escaping (String) -> Void) {
        let seconds = services.timeouts.upstreamResponse
        let timer = exchange.responseTimer ?? DeadlineTimer(queue: client.queue)
        exchange.responseTimer = timer
        let reason = "the upstream sent no response within \(TimeoutText.seconds(seconds))"
        exchange.responseTimeout = { [weak self] in
            guard let self, !self.closed else { return }
            timedOut(reason)
            self.pump()
        }
        extendResponseTimer(exchange)
    }

    /// Progress before the response head: the clock starts again.
    func extendResponseTimer(_ exchange: HTTP2Exchange) {
        guard exchange.response == nil, let timer = exchange.responseTimer, let action = exchange.responseTimeout else { return }
        timer.arm(services.timeouts.upstreamResponse, action)
    }

}
