import Dispatch
import Foundation

/// The one deadline an HTTP/1 layer keeps, set for the phase its connection
/// is in: the rest of a request's headers (408), an exchange that must keep
/// making progress (504, or the client cut off), and between exchanges the
/// upstream hold (the idle leg is let go) followed by the idle timeout.
///
/// A connection is in one phase at a time, so one ``DeadlineTimer`` serves
/// them all. The actions are made once per layer rather than once per
/// arming: the exchange deadline moves with every slice of a response.
struct HTTP1LayerDeadlines {
    private let timer: DeadlineTimer
    let timeouts: ProxyConfiguration.Timeouts
    /// A request's headers did not complete in time.
    var headersLate: () -> Void = {}
    /// The exchange in progress made no progress in time.
    var exchangeStalled: () -> Void = {}
    /// The upstream hold ran out between exchanges.
    var holdEnded: () -> Void = {}
    /// The client sent nothing for the idle timeout.
    var idle: () -> Void = {}
    /// The headers' deadline is set for the request arriving now.
    private var headersArmed = false

    init(queue: DispatchQueue, timeouts: ProxyConfiguration.Timeouts) {
        timer = DeadlineTimer(queue: queue)
        self.timeouts = timeouts
    }

    /// The first bytes of a request head arrived: the rest must follow in time.
    mutating func headersStarted() {
        guard !headersArmed else { return }
        headersArmed = true
        timer.arm(timeouts.requestHeaders, headersLate)
    }

    /// A request began, or its exchange moved on.
    mutating func exchangeProgressed() {
        headersArmed = false
        timer.arm(timeouts.upstreamResponse, exchangeStalled)
    }

    /// Between exchanges: the idle timeout, and before it, while a leg is
    /// kept, the upstream hold.
    mutating func betweenExchanges(holdingLeg: Bool) {
        headersArmed = false
        if holdingLeg && timeouts.upstreamHold < timeouts.idle {
            timer.arm(timeouts.upstreamHold, holdEnded)
        } else {
            timer.arm(timeouts.idle, idle)
        }
    }

    /// The hold ran out: the idle timeout runs for the rest.
    func afterHold() {
        timer.arm(timeouts.idle - timeouts.upstreamHold, idle)
    }

    func cancel() { timer.cancel() }
}
