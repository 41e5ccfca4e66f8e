import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyTestSupport
import Testing

/// `pin --connect HOST:PORT --proxy URL`: the chain a running proxy presents for a host.
@Suite(.timeLimit(.minutes(10)))
struct PinThroughProxyTests {
    @Test func pinConnectThroughARunningServeShowsTheForgedChain() throws {
        let host = try HostName(validating: "api.example.com")
        let world = try HarnessWorld.generate(host: host)
        defer { world.removeFiles() }
        let origin = try OriginServer(host: host, chain: world.originChain, key: world.originKey)
        let directory = try TemporaryDirectory()
        let daemon = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure",
                                                                 "--resolve", "api.example.com:127.0.0.1"])
        let through = try pinproxy(["pin", "--connect", "api.example.com:\(origin.port)", "--proxy", daemon.proxy])
        #expect(through.status == 0, "\(through.output)")
        #expect(through.stdout.contains("api.example.com:\(origin.port) presented 2 certificates (not verified)"), "\(through.stdout)")
        // The leaf is the proxy's: issued by its CA, not by the world's intermediate.
        let proxyCA = try Certificate(pemEncoded: String(contentsOfFile: directory.file("ca") + "/pinproxy-ca.pem", encoding: .utf8))
        #expect(through.stdout.contains(proxyCA.spkiPin.okhttp), "\(through.stdout)")
        #expect(!through.stdout.contains(world.leaf.spkiPin.okhttp), "\(through.stdout)")

        // A proxy that refuses the tunnel, and a proxy URL of another scheme, are one line each.
        let refused = try pinproxy(["pin", "--connect", "127.0.0.1:\(daemon.proxy.split(separator: ":").last!)", "--proxy", daemon.proxy])
        #expect(refused.status == 2, "\(refused.output)")
        #expect(refused.stderr.contains("the proxy refused CONNECT") || refused.stderr.contains("closed the connection"), "\(refused.stderr)")
        let scheme = try pinproxy(["pin", "--connect", "api.example.com:443", "--proxy", "https://127.0.0.1:1"])
        #expect(scheme.status == 2 && scheme.stderr.contains("only http:// proxies are spoken"), "\(scheme.stderr)")
        let alone = try pinproxy(["pin", "x.pem", "--proxy", daemon.proxy])
        #expect(alone.status == 2 && alone.stderr.contains("--proxy needs --connect"), "\(alone.stderr)")
    }

    /// A proxy that cannot reach the upstream still completes the handshake with a chain of its
    /// own (to say why in a 502): pin says whose chain it is and that the upstream failed.
    @Test func pinConnectThroughAProxyThatCannotReachTheUpstreamSaysSo() throws {
        let directory = try TemporaryDirectory()
        let closed = try LoopbackPort(listening: false)
        let daemon = try ControlAPIProxyTests.Daemon(arguments: ["--dir", directory.file("ca"), "--upstream-insecure",
                                                                 "--resolve", "api.example.com:127.0.0.1"])
        let out = directory.file("chain.pem")
        let r = try pinproxy(["pin", "--connect", "api.example.com:\(closed.port)", "--proxy", daemon.proxy, "--out", out])
        #expect(r.status == 2, "\(r.output)")
        #expect(r.stdout.contains("the proxy \(daemon.proxy) presented ") && r.stdout.contains(" of its own for api.example.com:\(closed.port) (not verified)"), "\(r.stdout)")
        #expect(r.stderr.contains("the proxy \(daemon.proxy) could not reach api.example.com:\(closed.port): ") && r.stderr.contains("refused"), "\(r.stderr)")
        #expect(r.stderr.contains("the chain above is the proxy's own") && r.stderr.contains("nothing was written to \(out)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // Read through one pipe, as a terminal or `2>&1 | less` shows it, "the chain above" is above.
        let combined = try run(["/bin/sh", "-c", "\"$0\" \"$@\" 2>&1", pinproxyBinary,
                                "pin", "--connect", "api.example.com:\(closed.port)", "--proxy", daemon.proxy])
        let chain = try #require(combined.stdout.range(of: "certificate #0"), "\(combined.stdout)")
        let error = try #require(combined.stdout.range(of: "the chain above is the proxy's own"), "\(combined.stdout)")
        #expect(chain.lowerBound < error.lowerBound, "\(combined.stdout)")
    }
}

