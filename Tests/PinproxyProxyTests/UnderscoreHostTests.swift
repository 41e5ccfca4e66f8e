import Foundation
import PinproxyBase
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Host names with underscores (Docker Compose and Kubernetes service names)
/// are proxied like any other: CONNECT by the name, the upstream verified for
/// it, a leaf forged for it that the client accepts.
@Suite("Host names with underscores", .timeLimit(.minutes(5)))
struct UnderscoreHostTests {
    static let names = ["my_api", "web_1.svc_net.test"]

    @Test("curl reaches an origin named with an underscore through the proxy, which verified the origin for that name and forged a leaf for it")
    func connectByAnUnderscoreName() throws {
        let f = try Fixtures()
        let leaf = try LeafForger(authority: f.originCA, keyStrategy: .freshPerLeaf).forge(hostNames: Self.names)
        let chain = f.directory.file("underscore-chain.pem"), key = f.directory.file("underscore-key.pem")
        try FileIO.write(Array(leaf.chain.map { $0.pemEncoded }.joined().utf8), to: chain, mode: 0o644)
        try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: key, mode: 0o600)
        let origin = try Origin(chain: chain, key: key)
        var addresses: UpstreamAddresses?
        let proxy = try RunningProxy(f) { addresses = $0.upstreamAddresses }
        for name in Self.names + ["other_name.test"] { try #require(addresses).set(name, to: "127.0.0.1") }

        for name in Self.names {
            let r = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-sS", "-w", "\n%{http_code}",
                              "-o", "/dev/null", "https://\(name):\(origin.port)/peer"])
            #expect(r.stdout.hasSuffix("200"), "\(name): \(r.stdout) \(r.stderr)")
            let presented = try receivedChain(proxyPort: proxy.port, host: name, originPort: origin.port)
            let names = try #require(presented.first).subjectAlternativeNames
            #expect(names.contains(.dns(name)), "the leaf forged for \(name) names \(names)")
        }
        // A name with an underscore the origin's certificate does not cover is still refused upstream.
        let other = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-s", "-w", "\n%{http_code}",
                              "https://other_name.test:\(origin.port)/peer"])
        #expect(other.stdout.hasSuffix("502") && other.stdout.contains("mismatch"), "\(other.stdout)")
        withExtendedLifetime(origin) {}
    }
}
