import Foundation
import PinproxyCertificates
import PinproxyProxy
import Testing

/// The upstream leg resumes TLS sessions (TLS 1.3 tickets, TLS 1.2 tickets and
/// session IDs) with what the full handshake verified, while the client leg
/// gets a forged certificate on every connection.
@Suite("Upstream session resumption", .timeLimit(.minutes(10)))
struct UpstreamResumptionTests {
    /// `openssl s_server` options per protocol: TLS 1.3 tickets, TLS 1.2 tickets, TLS 1.2 session IDs.
    static let protocols: [[String]] = [["-tls1_3"], ["-tls1_2"], ["-tls1_2", "-no_ticket"]]

    @Test("the second upstream connection resumes; chain and verification are reported; the client is never resumed",
          arguments: protocols)
    func resumes(protocolOptions: [String]) throws {
        let f = try Fixtures()
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        let server = try SServer(openssl, ["-cert", f.originChainPath, "-key", f.originKeyPath, "-www"] + protocolOptions)
        let proxy = try RunningProxy(f)
        let url = "https://localhost:\(server.port)/"
        for _ in 0..<3 {
            // Verified against the proxy CA only: the forged leaf, every time.
            let r = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-o", "/dev/null",
                              "-w", "%{http_code}", url])
            #expect(r.stdout == "200", "\(r.stdout) \(r.stderr)")
        }
        let flows = proxy.server.recorder.recent.flows.reversed().compactMap(\.upstreamTLS)
        try #require(flows.count == 3, "\(flows)")
        #expect(flows.map(\.resumed) == [false, true, true], "\(flows.map(\.resumed))")
        let originLeaf = try Certificate(pemEncoded: String(decoding: try FileIO.read(f.originChainPath), as: UTF8.self))
        for details in flows {
            #expect(details.verified)
            #expect(details.chain.first?.serial == originLeaf.serialNumberHex, "\(details.chain)")
        }

        // A client that offers its session back is not resumed: a new
        // handshake with a forged leaf issued by the proxy CA.
        for clientOptions in [[], ["-tls1_2"]] {
            let session = f.directory.file("client-session\(clientOptions.joined()).pem")
            for attempt in 0..<2 {
                // Offered when the first handshake gave the client a resumable session (it should not).
                let offer = attempt == 1 && FileManager.default.fileExists(atPath: session) ? ["-sess_in", session] : ["-sess_out", session]
                let s = try runProcess(openssl, ["s_client", "-proxy", "127.0.0.1:\(proxy.port)", "-connect", "localhost:\(server.port)",
                                                 "-servername", "localhost", "-CAfile", f.proxyCAPath, "-verify_return_error", "-ign_eof"] + clientOptions + offer,
                                       input: Array("GET / HTTP/1.0\r\nHost: localhost\r\n\r\n".utf8))
                let summary = s.stdout.split(separator: "\n").first { $0.hasPrefix("New, ") || $0.hasPrefix("Reused, ") }
                #expect(summary?.hasPrefix("New, TLSv1") == true, "\(s.stdout) \(s.stderr)")
                #expect(s.stdout.contains("Verification: OK"), "\(s.stdout)")
                #expect(s.stdout.contains("issuer=O = pinproxy, CN = \(CertificateAuthority.defaultCommonName)"), "\(s.stdout)")
            }
        }
    }

    @Test("a new certificate after a failed resumption is verified again; a failed verification is never cached",
          arguments: protocols)
    func changedCertificateIsVerified(protocolOptions: [String]) throws {
        let f = try Fixtures()
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        let server = try SServer(openssl, ["-cert", f.originChainPath, "-key", f.originKeyPath, "-www"] + protocolOptions)
        let port = server.port
        let proxy = try RunningProxy(f)
        let url = "https://localhost:\(port)/"
        func fetch() throws -> String {
            let r = try curl(["--max-time", "15", "--proxy", proxy.url, "--cacert", f.proxyCAPath, "-o", "/dev/null",
                              "-w", "%{http_code}", url])
            return r.stdout
        }
        func latest() -> UpstreamTLSDetails? { proxy.server.recorder.recent.flows.first?.upstreamTLS }
        #expect(try fetch() == "200")
        #expect(try fetch() == "200")
        #expect(latest()?.resumed == true)

        // Same address, a server that cannot resume the session and whose
        // certificate the proxy does not trust: a full handshake, refused.
        SServer.stop(server.process)
        var restarted = try SServerOnPort(openssl, port: port, ["-cert", f.untrustedChainPath, "-key", f.untrustedKeyPath, "-www"] + protocolOptions)
        #expect(try fetch() == "502")
        #expect(proxy.waitForEvent(.upstreamVerificationFailed) != nil)
        // Had the refused handshake left a session behind, this server would resume it.
        #expect(try fetch() == "502")

        // A trusted server with another certificate: verified, then resumed with that certificate.
        let renewed = try LeafForger(authority: f.originCA, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost"])
        let chainPath = f.directory.file("renewed-chain.pem"), keyPath = f.directory.file("renewed-key.pem")
        try FileIO.write(Array(renewed.chain.map { $0.pemEncoded }.joined().utf8), to: chainPath, mode: 0o644)
        try FileIO.write(Array(try renewed.privateKey.pemEncoded().utf8), to: keyPath, mode: 0o600)
        SServer.stop(restarted.process)
        restarted = try SServerOnPort(openssl, port: port, ["-cert", chainPath, "-key", keyPath, "-www"] + protocolOptions)
        #expect(try fetch() == "200")
        #expect(latest()?.resumed == false)
        #expect(latest()?.chain.first?.serial == renewed.certificate.serialNumberHex)
        #expect(try fetch() == "200")
        #expect(latest()?.resumed == true)
        #expect(latest()?.chain.first?.serial == renewed.certificate.serialNumberHex)
        #expect(latest()?.verified == true)
        withExtendedLifetime(restarted) {}
    }
}

/// `openssl s_server` on a given loopback port (another server's, once it stopped), until the test ends.
final class SServerOnPort: @unchecked Sendable {
    let process = Process()
    private let stdin = Pipe()

    init(_ openssl: String, port: Int, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = stdin
        try process.run()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var text = ""
            while !text.contains("ACCEPT") {
                let d = out.fileHandleForReading.availableData
                if d.isEmpty { return }
                text += String(decoding: d, as: UTF8.self)
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else {
            SServer.stop(process)
            throw HarnessError("openssl s_server did not start on port \(port)")
        }
    }

    deinit {
        SServer.stop(process)
        try? stdin.fileHandleForWriting.close()
    }
}
