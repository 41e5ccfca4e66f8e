import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Raw tunnels (passthrough hosts, CONNECT without TLS) end after
/// `--tunnel-idle-timeout` without traffic either way.
@Suite("Raw tunnels", .timeLimit(.minutes(10)))
struct TunnelTests {
    @Test("a plaintext CONNECT tunnel stays open while used and closes once idle")
    func plaintextTunnelIdles() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f) { $0.timeouts.tunnelIdle = 1.5 }
        let client = try RawClient.tunnel(through: proxy.port, to: "127.0.0.1:\(plainOrigin.port)")
        // Requests 0.25 s apart, 3 s in all (twice the limit): traffic keeps it open.
        for _ in 0..<12 {
            client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.receiveText(until: "hello from origin\n").hasSuffix("hello from origin\n"))
            usleep(250_000)
        }
        #expect(client.closedByPeer(timeout: 15), "the idle tunnel stayed open")
    }

    @Test("a tunnel where only the upstream talks stays open while it does, and closes once idle")
    func upstreamTrafficKeepsATunnelOpen() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f) { $0.timeouts.tunnelIdle = 1.5 }
        let client = try RawClient.tunnel(through: proxy.port, to: "127.0.0.1:\(plainOrigin.port)")
        // One request, then 3 s (twice the limit) of the origin's chunks, 0.25 s apart.
        client.send("GET /drip/12/250 HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = client.receiveText(timeout: 20, until: "\r\n0\r\n\r\n")
        #expect(answer.contains("drip 11\n") && answer.hasSuffix("\r\n0\r\n\r\n"), "the tunnel ended mid-answer: \(answer.suffix(80))")
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
        let client = try RawClient.tunnel(through: proxy.port, to: "localhost:\(origin.port)")
        #expect(client.closedByPeer(timeout: 15), "the idle tunnel stayed open")
        #expect(proxy.waitForEvent(.passthrough) != nil)
    }

    /// A tunnel whose client vanishes (a reset) while the upstream streams: the
    /// send that finds the client gone ends the connection in the middle of the
    /// upstream's event, and the tunnel must not touch the finished connection
    /// afterwards (it did: "read an unowned reference … already destroyed").
    @Test("clients that reset a busy tunnel end it cleanly; the proxy goes on")
    func resetMidStream() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f)
        for _ in 0..<60 {
            let client = try RawClient.tunnel(through: proxy.port, to: "127.0.0.1:\(plainOrigin.port)", receiveBuffer: 4096)
            client.send("GET /bytes/67108864 HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = client.receive { $0.count >= 8192 }
            client.resetClose()
        }
        let check = try RawClient.tunnel(through: proxy.port, to: "127.0.0.1:\(plainOrigin.port)")
        check.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(check.receiveText(until: "hello from origin").contains("hello from origin"))
    }
}

extension RawClient {
    /// A client whose `CONNECT target` the proxy listening on `port` answered with 200.
    static func tunnel(through port: Int, to target: String, receiveBuffer: Int32? = nil) throws -> RawClient {
        let client = try RawClient(port: port, receiveBuffer: receiveBuffer)
        client.send("CONNECT \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = client.receiveText(until: "\r\n\r\n")
        guard answer.hasPrefix("HTTP/1.1 200") else { throw HarnessError("CONNECT \(target) was answered \(answer.prefix(60))") }
        return client
    }
}
