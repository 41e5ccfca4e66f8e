import Foundation

extension FlowTimings {
    /// The phases of one exchange from its instants: started, request sent, first response
    /// byte, done (a missing instant counts as `end`), with the upstream's connect and TLS
    /// times (-1 when the exchange did not open its connection). Shared by HTTP/1 and HTTP/2.
    static func exchange(started: Date, requestSent: Date?, firstResponseByte: Date?, end: Date,
                         connect: (connect: Double, ssl: Double)) -> FlowTimings {
        let sent = requestSent ?? end
        let first = firstResponseByte ?? end
        return FlowTimings(
            connect: connect.connect, ssl: connect.ssl,
            send: max(0, sent.timeIntervalSince(started) * 1000),
            wait: max(0, first.timeIntervalSince(sent) * 1000),
            receive: max(0, end.timeIntervalSince(first) * 1000))
    }
}
