import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Raw tunnels (passthrough hosts, CONNECT without TLS) end after
/// `--tunnel-idle-timeout` without traffic either way.
@Suite("Raw tunnels", .timeLimit(.minutes(2)))
struct TunnelTests {
    @Test("a plaintext CONNECT tunnel stays open while used and closes once idle")
    func plaintextTunnelIdles() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f) { $0.timeouts.tunnelIdle = 1.5 }
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT 127.0.0.1:\(plainOrigin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        // Requests 0.25 s apart, 3 s in all (twice the limit): traffic keeps it open.
        for _ in 0..<12 {
            client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.receiveText(until: "hello from origin\n").hasSuffix("hello from origin\n"))
            usleep(250_000)
        }
        #expect(client.closedByPeer(timeout: 15), "the idle tunnel stayed open")
    }

    @Test("a passthrough tunnel closes once idle")
    func passthroughTunnelIdles() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let pattern = try HostPattern(parsing: "localhost")
        let proxy = try RunningProxy(f) {
            $0.timeouts.tunnelIdle = 1
            $0.rules.passthrough = [pattern]
        }
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT localhost:\(origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        #expect(client.closedByPeer(timeout: 15), "the idle tunnel stayed open")
        #expect(proxy.waitForEvent(.passthrough) != nil)
    }
}
