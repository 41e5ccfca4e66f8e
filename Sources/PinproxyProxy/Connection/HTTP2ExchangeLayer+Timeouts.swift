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

    /// A relayed stream's upstream stream sent no head in time.
    func relayedResponseTimedOut(_ exchange: HTTP2Exchange, _ reason: String) {
        guard byClient[exchange.clientStream] === exchange, exchange.response == nil, !exchange.answeredLocally else { return }
        if let up = exchange.upstreamStream, byUpstream.removeValue(forKey: up) != nil {
            try? upstreamSession?.reset(up, code: .cancel)
        }
        services.logger.notice("\(record.peer): stream \(exchange.clientStream): \(reason)")
        answer(exchange, status: 504, reason: reason)
    }
}
