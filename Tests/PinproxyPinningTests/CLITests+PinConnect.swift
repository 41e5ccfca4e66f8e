import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `pin --connect`: the presented chain fetched without trusting it, and each way a server can fail it.
extension CLITests {
    @Test func pinConnectFetchesThePresentedChainWithoutTrustingIt() throws {
        let w = try Workspace(pki)
        let forger = try LeafForger(authority: pki.proxyCA)
        let leaf = try forger.forge(LeafRequest(pki.host))
        try w.dir.write("leaf.pem", leaf.certificate.pemEncoded)
        try w.dir.write("chain.pem", pki.proxyCA.certificate.pemEncoded)
        try w.dir.write("leaf.key", try leaf.privateKey.pemEncoded())

        var lastFailure = ""
        for _ in 0..<5 {
            let port = Int.random(in: 20_000...60_000)
            let server = Process()
            // One connection, at most 20 s: a child started concurrently by another test may
            // inherit the server's descriptors, so the server must not outlive this test.
            server.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            server.arguments = ["20", "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:\(port)",
                                "-cert", w.path("leaf.pem"), "-key", w.path("leaf.key"),
                                "-cert_chain", w.path("chain.pem"), "-quiet", "-naccept", "1"]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            server.standardInput = FileHandle.nullDevice
            try server.run()
            defer { server.terminate(); server.waitUntilExit() }
            // Retry until the server listens (or exits because the port was taken).
            for _ in 0..<50 where server.isRunning {
                let result = try pinproxy(["pin", "--connect", "127.0.0.1:\(port)", "--servername", "api.example.com", "--timeout", "5",
                                           "--out", w.path("presented.pem")])
                if result.status == 0 {
                    // --out saves the chain as presented, leaf first, for verify --chain.
                    #expect(try Certificate.load(contentsOf: w.path("presented.pem")) == [leaf.certificate, pki.proxyCA.certificate])
                    #expect(result.stdout.contains("wrote the presented chain (2 certificates, leaf first) to \(w.path("presented.pem"))"))
                    let verified = try pinproxy(["verify", "--policy", w.path("policy/none.json"), "--chain", w.path("presented.pem"),
                                                 "--host", "api.example.com", "--trust-store", w.path("store.pem"),
                                                 "--user-anchor", w.path("proxy-ca.pem")])
                    #expect(verified.status == 0, "\(verified)")
                    #expect(result.stdout.contains("presented 2 certificates (not verified)"), "\(result.stdout)")
                    #expect(result.stdout.contains(leaf.certificate.spkiPin.okhttp))
                    #expect(result.stdout.contains(pki.proxyCA.certificate.spkiPin.okhttp))
                    #expect(result.stdout.contains("DNS:api.example.com"))
                    return
                }
                lastFailure = result.stderr
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        Issue.record(Comment(rawValue: "could not fetch a chain from openssl s_server: \(lastFailure)"))
    }

    @Test func pinConnectReportsRefusedConnections() throws {
        let result = try pinproxy(["pin", "--connect", "127.0.0.1:1", "--timeout", "2"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("127.0.0.1:1: cannot connect"), "\(result.stderr)")
        // An IPv6 literal is shown in brackets, as it was given.
        let v6 = try pinproxy(["pin", "--connect", "[::1]:1", "--timeout", "2"])
        #expect(v6.status == 2)
        #expect(v6.stderr.contains("[::1]:1: cannot connect"), "\(v6.stderr)")
        // A bare name gets the port it most likely lacks, and the help pointer of a usage error.
        let bare = try pinproxy(["pin", "--connect", "example.com"])
        #expect(bare.status == 2)
        #expect(bare.stderr == "pinproxy: error: 'example.com' is not HOST:PORT (for HTTPS: example.com:443) (see 'pinproxy pin --help')\n", "\(bare.stderr)")
    }

    @Test func pinConnectToAStalledServerTimesOut() throws {
        let listener = try TestListener()  // accepts into the backlog, never answers
        defer { listener.stop() }
        let started = Date()
        let result = try pinproxy(["pin", "--connect", "127.0.0.1:\(listener.port)", "--timeout", "1"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("127.0.0.1:\(listener.port): timed out after 1 s"), "\(result.stderr)")
        #expect(!result.stderr.contains("TLS handshake failed"))
        #expect(Date().timeIntervalSince(started) < 8)
    }

    @Test func pinConnectToAStalledIPv6Server() throws {
        let listener: TestListener
        do { listener = try TestListener(ipv6: true) } catch { return }  // no IPv6 loopback here
        defer { listener.stop() }
        let result = try pinproxy(["pin", "--connect", "[::1]:\(listener.port)", "--timeout", "0.5"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("[::1]:\(listener.port): timed out after 0.5 s"), "\(result.stderr)")
    }

    @Test func pinConnectToAPlainHTTPPort() throws {
        let listener = try TestListener { client in
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
            let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = write(client, answer, answer.count)
        }
        defer { listener.stop() }
        let result = try pinproxy(["pin", "--connect", "127.0.0.1:\(listener.port)", "--timeout", "5"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("the server did not answer with TLS (wrong version number: is this a plain-HTTP port?)"), "\(result.stderr)")
        #expect(!result.stderr.contains("Success"))
        #expect(!result.stderr.contains("error:0A"))
    }

    @Test func pinConnectToAServerThatHangsUp() throws {
        let listener = try TestListener { client in
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = read(client, &buffer, buffer.count)
        }
        defer { listener.stop() }
        let result = try pinproxy(["pin", "--connect", "127.0.0.1:\(listener.port)", "--timeout", "5"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("the server closed the connection during the TLS handshake"), "\(result.stderr)")
        #expect(!result.stderr.contains("(Success)"))
    }
}
