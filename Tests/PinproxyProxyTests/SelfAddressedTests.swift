import Foundation
import PinproxyProxy
import Testing

/// Requests and CONNECTs addressed to the proxy's own listener or control
/// API are refused with 403 and a `self-addressed` event: through the proxy,
/// a client that may reach only the proxy port (`--allow-remote`) would
/// otherwise reach the loopback-only control API.
@Suite("Requests addressed to the proxy itself", .timeLimit(.minutes(10)))
struct SelfAddressedTests {
    @Test("plain requests to the control API or the proxy port: 403 naming pinproxy, an event, nothing relayed")
    func plainRequests() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try #require(proxy.admin?.address?.port)
        let urls = [
            "http://127.0.0.1:\(admin)/rules",
            "http://localhost:\(admin)/health",
            "http://0.0.0.0:\(admin)/rules",
            "http://[::ffff:127.0.0.1]:\(admin)/rules",
            "http://127.0.0.1:\(proxy.port)/",
            "http://localhost:\(proxy.port)/",
        ]
        for url in urls {
            let r = try curl(["--proxy", proxy.url, "-w", "\n%{http_code}", url])
            #expect(r.stdout.hasSuffix("\n403"), "\(url): \(r.stdout) \(r.stderr)")
            #expect(r.stdout.contains("addressed to pinproxy itself"), "\(url): \(r.stdout)")
            #expect(!r.stdout.contains("defaultProfile") && !r.stdout.contains("uptimeSeconds"), "\(url): \(r.stdout)")
        }
        // Each refusal is recorded before its answer is sent.
        let events = proxy.server.recorder.recent.events.filter { $0.kind == .selfAddressed }
        #expect(events.count == urls.count, "\(events)")
        let toAdmin = events.filter { $0.port == admin }
        #expect(toAdmin.count == 4, "\(events)")
        #expect(toAdmin.allSatisfy { $0.message.contains("control API") }, "\(toAdmin.map(\.message))")
        // A flow records each refusal, with its status.
        #expect(proxy.server.recorder.recent.flows.filter { $0.response?.status == 403 }.count == urls.count)
    }

    @Test("a name that resolves to the proxy's own address is caught once connected: 403")
    func resolvedName() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try #require(proxy.admin?.address?.port)
        // glibc's resolver reads 0x7f000001 as 127.0.0.1; no text check can know every such spelling.
        let client = try RawClient(port: proxy.port)
        client.send("GET http://0x7f000001:\(admin)/rules HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = client.receiveText()
        #expect(answer.hasPrefix("HTTP/1.1 403"), "\(answer)")
        #expect(!answer.contains("defaultProfile"), "\(answer)")
        #expect(proxy.waitForEvent(.selfAddressed) != nil)
    }

    @Test("an intercepted CONNECT whose host resolves to the control API: the request inside the tunnel gets 403")
    func interceptedResolvedName() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try #require(proxy.admin?.address?.port)
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        // openssl sends the CONNECT host as written; curl would rewrite it as 127.0.0.1.
        let r = try runProcess(openssl, ["s_client", "-quiet", "-ign_eof", "-proxy", "127.0.0.1:\(proxy.port)",
                                         "-connect", "0x7f000001:\(admin)", "-servername", "localhost"],
                               input: Array("GET /rules HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8), timeout: 30)
        #expect(r.stdout.hasPrefix("HTTP/1.1 403"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("control API"), "\(r.stdout)")
        #expect(!r.stdout.contains("defaultProfile"), "\(r.stdout)")
        #expect(proxy.waitForEvent(.selfAddressed) != nil)
    }

    @Test("a proxy on the any address (--allow-remote) refuses requests to itself over loopback")
    func anyAddressListener() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f) {
            $0.listen = ListenAddress(host: "0.0.0.0", port: 0)
            $0.allowRemote = true
        }
        let r = try curl(["--proxy", proxy.url, "-w", "\n%{http_code}", "http://127.0.0.1:\(proxy.port)/"])
        #expect(r.stdout.hasSuffix("\n403"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("pinproxy's proxy port 0.0.0.0:\(proxy.port)"), "\(r.stdout)")
    }

    @Test("CONNECT to the control API or the proxy port: 403 instead of a tunnel")
    func connects() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try #require(proxy.admin?.address?.port)
        for target in ["127.0.0.1:\(admin)", "localhost:\(admin)", "127.0.0.1:\(proxy.port)", "[::ffff:127.0.0.1]:\(proxy.port)"] {
            let client = try RawClient(port: proxy.port)
            client.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            client.send("GET /rules HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = client.receiveText()
            #expect(answer.hasPrefix("HTTP/1.1 403"), "\(target): \(answer)")
            #expect(!answer.contains("defaultProfile"), "\(target): \(answer)")
        }
        // curl's own tunnel (-p) sees the refusal of its CONNECT.
        let r = try curl(["--proxy", proxy.url, "-p", "-w", "%{http_connect}", "http://127.0.0.1:\(admin)/rules"])
        #expect(r.stdout == "403", "\(r.stdout) \(r.stderr)")
        #expect(proxy.waitForEvent(.selfAddressed) != nil)
    }

    @Test("other ports on the same address are still proxied")
    func otherPortsStillWork() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f, admin: true)
        let r = try curl(["--proxy", proxy.url, "http://127.0.0.1:\(plainOrigin.port)/hello"])
        #expect(r.stdout == "hello from origin\n", "\(r.stdout) \(r.stderr)")
        let viaLocalhost = try curl(["--proxy", proxy.url, "http://localhost:\(plainOrigin.port)/hello"])
        #expect(viaLocalhost.stdout == "hello from origin\n", "\(viaLocalhost.stdout) \(viaLocalhost.stderr)")
    }
}
