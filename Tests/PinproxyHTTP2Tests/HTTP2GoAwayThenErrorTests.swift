import PinproxyHTTP1
import PinproxyHTTP2
import Testing

/// A connection error found after this side's own GOAWAY (a graceful
/// shutdown under way) still ends the connection as a failure: RFC 9113 §5.4.1
/// lets an endpoint send a second GOAWAY with the error, and the application
/// is told why, as it would be without the first GOAWAY.
@Suite("HTTP/2 server session: connection errors during a graceful shutdown")
struct HTTP2GoAwayThenErrorTests {
    typealias Exchange = HTTP2MalformedInputTests.Exchange

    @Test("a PROTOCOL_ERROR after this side's GOAWAY is reported as the connection's failure",
          arguments: [false, true])
    func errorAfterGoAway(compression: Bool) throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(), flags: RawFrame.endHeaders))
        try exchange.session.goAway()
        exchange.feed([])
        if compression {
            // An index past the HPACK tables: COMPRESSION_ERROR.
            exchange.send(.headers(stream: 1, block: HPACK.indexed(2) + HPACK.indexed(70)))
        } else {
            // A WINDOW_UPDATE of 0 on the connection: PROTOCOL_ERROR (§6.9).
            exchange.send(RawFrame(.windowUpdate, stream: 0, payload: RawFrame.uint32(0)))
        }
        let code: HTTP2ErrorCode = compression ? .compressionError : .protocolError
        #expect(exchange.goAwayCodes == [.noError, code])
        #expect(exchange.session.failure?.wireCode == code)
        #expect(exchange.connectionError?.wireCode == code)
    }
}
