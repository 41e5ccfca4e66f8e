import Foundation
import PinproxyBase
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Reverse mode reached by an address (`https://127.0.0.1:PORT/`): clients send no SNI for an IP
/// literal, and check the certificate against the address they dialled, so the leaf names it.
@Suite("Reverse mode reached by address", .timeLimit(.minutes(5)))
struct ReverseModeByAddressTests {
    /// The origin's certificate names `other.test` only, never an address.
    static func proxy(_ f: Fixtures, origin: Origin) throws -> RunningProxy {
        var addresses: UpstreamAddresses?
        let proxy = try RunningProxy(f) {
            $0.mode = .reverse(scheme: "https", host: .dns("other.test"), port: origin.port)
            addresses = $0.upstreamAddresses
        }
        try #require(addresses).set("other.test", to: "127.0.0.1")
        return proxy
    }

    @Test("curl by address gets a leaf naming that address (and the origin's names), and its answer")
    func byAddress() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.otherNameChainPath, key: f.otherNameKeyPath)
        let proxy = try Self.proxy(f, origin: origin)
        let r = try curl(["--max-time", "15", "--cacert", f.proxyCAPath, "-sS", "-w", "\n%{http_code}", "https://127.0.0.1:\(proxy.port)/peer"])
        #expect(r.status == 0 && r.stdout.hasSuffix("\n200"), "\(r.status) \(r.stdout) \(r.stderr)")
        // What openssl sends with -noservername: no SNI at all.
        let presented = try runProcess("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(proxy.port)", "-noservername"],
                                       input: [], timeout: 30)
        let leaf = try #require(try Certificate.all(pemEncoded: presented.stdout).first, "\(presented.stderr)")
        #expect(leaf.subjectAlternativeNames.contains(.ipAddress([127, 0, 0, 1])), "\(leaf.subjectAlternativeNames)")
        #expect(leaf.subjectAlternativeNames.contains(.dns("other.test")), "\(leaf.subjectAlternativeNames)")
        // The event still names the origin's host.
        let event = proxy.waitForEvent(.intercepted)
        #expect(event?.host == "other.test", "\(String(describing: event))")
        withExtendedLifetime(origin) {}
    }

    @Test("a client that sends SNI gets a leaf for that name only")
    func byNameKeepsTheName() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.otherNameChainPath, key: f.otherNameKeyPath)
        let proxy = try Self.proxy(f, origin: origin)
        let r = try curl(["--max-time", "15", "--cacert", f.proxyCAPath, "-sS", "-w", "\n%{http_code}",
                          "--resolve", "other.test:\(proxy.port):127.0.0.1", "https://other.test:\(proxy.port)/peer"])
        #expect(r.status == 0 && r.stdout.hasSuffix("\n200"), "\(r.status) \(r.stdout) \(r.stderr)")
        let presented = try runProcess("/usr/bin/env", ["openssl", "s_client", "-connect", "127.0.0.1:\(proxy.port)", "-servername", "other.test"],
                                       input: [], timeout: 30)
        let leaf = try #require(try Certificate.all(pemEncoded: presented.stdout).first, "\(presented.stderr)")
        #expect(!leaf.subjectAlternativeNames.contains { if case .ipAddress = $0 { return true } else { return false } },
                "\(leaf.subjectAlternativeNames)")
        withExtendedLifetime(origin) {}
    }
}
