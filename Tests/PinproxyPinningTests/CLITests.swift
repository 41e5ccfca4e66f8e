import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// The built `pinproxy` executable: the newest of `.build/debug` and `.build-pinning/debug`
/// next to the package (the Makefile builds everything before the tests run).
let pinproxyExecutable: String? = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let candidates = [".build/debug/pinproxy", ".build-pinning/debug/pinproxy"].map { root.appendingPathComponent($0).path }
    let manager = FileManager.default
    return candidates
        .filter { manager.isExecutableFile(atPath: $0) }
        .max { a, b in
            let da = (try? manager.attributesOfItem(atPath: a)[.modificationDate] as? Date) ?? .distantPast
            let db = (try? manager.attributesOfItem(atPath: b)[.modificationDate] as? Date) ?? .distantPast
            return da < db
        }
}()

@Suite("pinproxy verify and pin", .serialized)
struct CLITests {
    let pki = PKI.shared

    /// A scratch directory with the device store, chains and policies written out.
    final class Workspace {
        let dir: TemporaryDirectory
        let pki: PKI
        init(_ pki: PKI) throws {
            self.pki = pki
            dir = try TemporaryDirectory()
            try dir.write("store.pem", pki.root.pemEncoded + pki.otherRoot.pemEncoded)
            try dir.write("proxy-ca.pem", pki.proxyCA.certificate.pemEncoded)
            try dir.write("genuine.pem", [pki.leaf, pki.intermediate].map(\.pemEncoded).joined())
            try dir.write("forged.pem", [pki.forgedLeaf, pki.proxyCA.certificate].map(\.pemEncoded).joined())
            try dir.write("expired.pem", [pki.expiredLeaf, pki.intermediate].map(\.pemEncoded).joined())
            try dir.write("policy/server.cer", bytes: pki.leaf.derEncoded)
            try dir.write("policy/af.json", #"{"family":"afnetworking","SSLPinningMode":"publicKey","pinnedCertificates":["server.cer"]}"#)
            try dir.write("policy/none.json", #"{"family":"afnetworking"}"#)
        }
        func path(_ name: String) -> String { (dir.path as NSString).appendingPathComponent(name) }
    }

    func pinproxy(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let executable = try #require(pinproxyExecutable, "build the pinproxy executable first (make test builds it)")
        return try run(executable, arguments)
    }

    func verify(_ w: Workspace, policy: String, chain: String, extra: [String] = []) throws -> (status: Int32, stdout: String, stderr: String) {
        try pinproxy(["verify", "--policy", w.path(policy), "--chain", w.path(chain), "--host", "api.example.test",
                      "--trust-store", w.path("store.pem")] + extra)
    }

    @Test func acceptExitsZeroRejectExitsOne() throws {
        let w = try Workspace(pki)
        let accept = try verify(w, policy: "policy/af.json", chain: "genuine.pem")
        #expect(accept.status == 0, "\(accept)")
        #expect(accept.stdout.hasPrefix("ACCEPT — afnetworking (4.x) for api.example.test"))
        #expect(accept.stdout.contains("NSURLSessionAuthChallengeUseCredential"))
        let reject = try verify(w, policy: "policy/af.json", chain: "forged.pem", extra: ["--user-anchor", w.path("proxy-ca.pem")])
        #expect(reject.status == 1, "\(reject)")
        #expect(reject.stdout.hasPrefix("REJECT"))
        #expect(reject.stdout.contains("no key equals a pinned key"))
        // Unpinned, the installed proxy CA is enough; without it the chain fails.
        #expect(try verify(w, policy: "policy/none.json", chain: "forged.pem", extra: ["--user-anchor", w.path("proxy-ca.pem")]).status == 0)
        let untrusted = try verify(w, policy: "policy/none.json", chain: "forged.pem")
        #expect(untrusted.status == 1)
        #expect(untrusted.stdout.contains("self-signed"))
    }

    @Test func evaluationTimeAndJSON() throws {
        let w = try Workspace(pki)
        let now = try verify(w, policy: "policy/none.json", chain: "expired.pem", extra: ["--json"])
        #expect(now.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(now.stdout.utf8)) as? [String: Any])
        #expect(object["decision"] as? String == "REJECT")
        #expect(object["family"] as? String == "afnetworking")
        #expect((object["steps"] as? [[String: Any]])?.contains { ($0["outcome"] as? String)?.contains("expired") == true } == true)
        let back = ISO8601DateFormatter().string(from: pki.expiredLeaf.notAfter.addingTimeInterval(-86_400))
        let then = try verify(w, policy: "policy/none.json", chain: "expired.pem", extra: ["--at", back])
        #expect(then.status == 0, "\(then)")
    }

    @Test("usage and input errors exit 2 with a clear message", arguments: [
        (["verify", "--chain", "genuine.pem", "--host", "api.example.test"], "--policy is required"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem"], "--host is required"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem", "--host", "api.example.test", "--at", "yesterday"], "not an ISO 8601 time"),
        (["verify", "--policy", "policy/af.json", "--chain", "missing.pem", "--host", "api.example.test"], "no such file"),
        (["verify", "--policy", "policy/bad.json", "--chain", "genuine.pem", "--host", "api.example.test"], "key 'SSLPinningMod': unknown key"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem", "--host", "bad host"], "invalid host name"),
        (["verify", "--policy", "policy/af.json", "--chain", "policy/af.json", "--host", "api.example.test"], "neither PEM nor a DER certificate"),
        (["pin", "missing.pem"], "no such file"),
        (["pin"], "name certificate or public key files"),
        (["pin", "--servername", "a.test", "genuine.pem"], "--servername needs --connect"),
        (["pin", "--connect", "nohost"], "not HOST:PORT"),
    ])
    func inputErrors(arguments: [String], message: String) throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/bad.json", #"{"family":"afnetworking","SSLPinningMod":"none"}"#)
        let resolved = arguments.map { argument -> String in
            argument.hasSuffix(".pem") || argument.hasSuffix(".json") ? w.path(argument) : argument
        }
        let result = try pinproxy(resolved)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }

    @Test func reportOnlyExitsZero() throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/tk.json", """
            {"family":"trustkit","TSKPinnedDomains":{"api.example.test":{"TSKEnforcePinning":false,
             "TSKPublicKeyHashes":["\(pki.intermediate.spkiPin.base64)","\([UInt8](repeating: 1, count: 32).base64)"]}}}
            """)
        let result = try verify(w, policy: "policy/tk.json", chain: "forged.pem", extra: ["--user-anchor", w.path("proxy-ca.pem")])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("REPORT-ONLY"))
    }

    @Test func pinPrintsEveryNotation() throws {
        let w = try Workspace(pki)
        try w.dir.write("server.der", bytes: pki.leaf.derEncoded)
        try w.dir.write("key.pem", try PublicKey(of: pki.serverKey).derEncoded.pemPublicKey)
        let result = try pinproxy(["pin", w.path("server.der"), w.path("key.pem"), w.path("genuine.pem")])
        #expect(result.status == 0, "\(result)")
        let pin = pki.leaf.spkiPin
        for text in [pin.okhttp, pin.curl, pin.hpkp, pin.androidXML, "TrustKit:    \(pin.base64)", pki.leaf.sha256FingerprintText, "CN=api.example.test"] {
            #expect(result.stdout.contains(text), "missing \(text)")
        }
        #expect(result.stdout.contains("public key"))
        #expect(result.stdout.contains(pki.intermediate.spkiPin.okhttp))
    }

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
                let result = try pinproxy(["pin", "--connect", "127.0.0.1:\(port)", "--servername", "api.example.test", "--timeout", "5"])
                if result.status == 0 {
                    #expect(result.stdout.contains("presented 2 certificates (not verified)"), "\(result.stdout)")
                    #expect(result.stdout.contains(leaf.certificate.spkiPin.okhttp))
                    #expect(result.stdout.contains(pki.proxyCA.certificate.spkiPin.okhttp))
                    #expect(result.stdout.contains("DNS:api.example.test"))
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
        #expect(result.stderr.contains("cannot connect"))
    }
}
