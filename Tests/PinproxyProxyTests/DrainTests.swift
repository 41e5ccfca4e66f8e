import Foundation
import PinproxyProxy
import Testing

/// Stopping the proxy (SIGTERM in `serve`) while a request is in flight: the
/// exchange finishes, and its client connection closes then, not at the
/// drain deadline.
@Suite("Stopping with a request in flight", .timeLimit(.minutes(5)))
struct DrainTests {
    @Test("an exchange in flight finishes; its keep-alive client is closed right after, long before the drain deadline")
    func anExchangeInFlightFinishesAndItsClientCloses() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f) { $0.timeouts.drain = 30 }
        let client = try RawClient(port: proxy.port)
        let authority = "127.0.0.1:\(plainOrigin.port)"
        // A keep-alive request whose answer takes about 1.5 s: six chunks, 0.25 s apart.
        client.send("GET http://\(authority)/drip/6/250 HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        var answer = client.receiveText(until: "\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            proxy.server.stop()
            stopped.signal()
        }.start()
        answer += client.receiveText(timeout: 10, until: "\r\n0\r\n\r\n")
        #expect(answer.contains("drip 5\n") && answer.hasSuffix("\r\n0\r\n\r\n"), "the answer was cut short: \(answer.suffix(80))")
        // The connection carries no other request: closed once the answer is out.
        #expect(client.closedByPeer(timeout: 8), "the client was kept after its exchange while the proxy stops")
        #expect(stopped.wait(timeout: .now() + 10) == .success, "stop waited for the drain deadline")
        // And nothing new is accepted.
        #expect((try? RawClient(port: proxy.port)).map { $0.closedByPeer(timeout: 2) } ?? true)
    }
}
