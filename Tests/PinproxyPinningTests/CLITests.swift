import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import PinproxyTestSupport
import Testing

/// The built `pinproxy` executable: the newest of the package's build folders.
let pinproxyExecutable: String? = {
    let path = PinproxyTestSupport.pinproxyBinary
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
}()

/// A TCP listener on 127.0.0.1 or ::1 with an ephemeral port. `behaviour` runs on one
/// accepted connection (if any arrives within 10 s); without one, connections wait in
/// the backlog and never get an answer.
final class TestListener: @unchecked Sendable {
    let fd: Int32
    let port: UInt16
    private let done = DispatchSemaphore(value: 0)
    private let serving: Bool

    init(ipv6: Bool = false, behaviour: (@Sendable (Int32) -> Void)? = nil) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw PinproxyError(.io, "socket: \(String(cString: strerror(errno)))") }
        var bound: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw PinproxyError(.io, "bind/listen: \(why)")
        }
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        // sin_port and sin6_port sit at the same offset.
        self.fd = fd
        port = UInt16(bigEndian: storage.sin6_port)
        serving = behaviour != nil
        if let behaviour {
            var limit = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            let listening = fd
            let done = self.done
            Thread.detachNewThread {
                let client = accept(listening, nil, nil)
                if client >= 0 {
                    var t = timeval(tv_sec: 5, tv_usec: 0)
                    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &t, socklen_t(MemoryLayout<timeval>.size))
                    behaviour(client)
                    close(client)
                }
                done.signal()
            }
        }
    }

    /// Waits for the serving thread, then closes the listener.
    func stop() {
        if serving { shutdown(fd, Int32(SHUT_RDWR)); _ = done.wait(timeout: .now() + 15) }
        close(fd)
    }
}

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
        try pinproxy(["verify", "--policy", w.path(policy), "--chain", w.path(chain), "--host", "api.example.com",
                      "--trust-store", w.path("store.pem")] + extra)
    }

    /// Policy files and reports named by one character, relative to the working directory
    /// (Foundation's `deletingLastPathComponent` traps on such a path; pinproxy must not).
    @Test func oneCharacterRelativePathsWork() throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/p", #"{"family":"afnetworking","SSLPinningMode":"publicKey","pinnedCertificates":["server.cer"]}"#)
        try w.dir.write("policy/raw/s.der", bytes: pki.leaf.derEncoded)
        try w.dir.write("policy/a", #"<network-security-config><domain-config><domain>api.example.com</domain><trust-anchors><certificates src="@raw/s"/></trust-anchors></domain-config></network-security-config>"#)
        for policy in ["p", "a"] {
            let r = try PinproxyTestSupport.pinproxy(["verify", "--policy", policy, "--chain", w.path("genuine.pem"), "--host", "api.example.com",
                                                      "--trust-store", w.path("store.pem")], in: w.path("policy"))
            #expect(r.status == 0, "policy \(policy): \(r.output)")
            #expect(r.stdout.hasPrefix("ACCEPT"), "policy \(policy): \(r.stdout)")
        }
        // XML under a name without .xml or .plist that is neither format is named as such.
        try w.dir.write("policy/o", "\u{FEFF}  <html><body>not a policy</body></html>")
        let other = try PinproxyTestSupport.pinproxy(["verify", "--policy", "o", "--chain", w.path("genuine.pem"), "--host", "api.example.com"],
                                                     in: w.path("policy"))
        #expect(other.status == 2)
        #expect(other.stderr.contains("o holds XML but neither a <network-security-config> nor a <plist>"), "\(other.stderr)")
    }

    @Test func acceptExitsZeroRejectExitsOne() throws {
        let w = try Workspace(pki)
        let accept = try verify(w, policy: "policy/af.json", chain: "genuine.pem")
        #expect(accept.status == 0, "\(accept)")
        #expect(accept.stdout.hasPrefix("ACCEPT — afnetworking (4.x) for api.example.com"))
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
        (["verify", "--chain", "genuine.pem", "--host", "api.example.com"], "Missing expected argument '--policy <file>'"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem"], "missing --host (or --no-domain for AFNetworking's forDomain:nil)"),
        (["verify", "--policy", "policy/af.json", "--host", "api.example.com"], "Missing expected argument '--chain <file>'"),
        (["verify", "--policy", "policy/broken.json", "--chain", "genuine.pem", "--host", "api.example.com"],
         "policy/broken.json:3:21: not valid JSON: expected a value, found 'x'"),
        (["verify", "--policy", "policy/missing-cert.json", "--chain", "genuine.pem", "--host", "api.example.com"],
         "key 'pinnedCertificates[0]': cannot read POLICYDIR/../../pki/root.pem (relative to the policy file): no such file"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem", "--host", "api.example.com", "--at", "yesterday"], "not an ISO 8601 time"),
        (["verify", "--policy", "policy/af.json", "--chain", "missing.pem", "--host", "api.example.com"], "no such file"),
        (["verify", "--policy", "policy/bad.json", "--chain", "genuine.pem", "--host", "api.example.com"], "key 'SSLPinningMod': unknown key"),
        (["verify", "--policy", "policy/af.json", "--chain", "genuine.pem", "--host", "bad host"], "invalid host name"),
        (["verify", "--policy", "policy/af.json", "--chain", "policy/af.json", "--host", "api.example.com"], "neither PEM nor a DER certificate"),
        (["pin", "missing.pem"], "no such file"),
        (["pin"], "name certificate or key files"),
        (["pin", "--servername", "a.test", "genuine.pem"], "--servername needs --connect"),
        (["pin", "--connect", "nohost"], "not HOST:PORT"),
        (["pin", "--out", "chain.pem", "genuine.pem"], "--out needs --connect"),
    ])
    func inputErrors(arguments: [String], message: String) throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/bad.json", #"{"family":"afnetworking","SSLPinningMod":"none"}"#)
        try w.dir.write("policy/broken.json", "{\n  \"family\": \"afnetworking\",\n  \"SSLPinningMode\": x\n}\n")
        try w.dir.write("policy/missing-cert.json", #"{"family":"afnetworking","SSLPinningMode":"certificate","pinnedCertificates":["../../pki/root.pem"]}"#)
        let resolved = arguments.map { argument -> String in
            argument.hasSuffix(".pem") || argument.hasSuffix(".json") ? w.path(argument) : argument
        }
        let result = try pinproxy(resolved)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains(message.replacingOccurrences(of: "POLICYDIR", with: w.path("policy"))), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }

    /// A PEM block whose header says it is encrypted: without a password callback
    /// OpenSSL asks for the pass phrase on the terminal, and waits. `script` gives the
    /// command a terminal of its own, where such a prompt would show; `timeout` only
    /// keeps a prompt that waits from stalling the run.
    @Test("pin and verify --chain never ask for a pass phrase on the terminal", arguments: ["CERTIFICATE", "PUBLIC KEY"])
    func noPassPhrasePrompt(_ label: String) throws {
        let w = try Workspace(pki)
        try w.dir.write("encrypted.pem", """
            -----BEGIN \(label)-----
            Proc-Type: 4,ENCRYPTED
            DEK-Info: AES-128-CBC,00000000000000000000000000000000

            AAAAAAAAAAAAAAAAAAAAAA==
            -----END \(label)-----

            """)
        let executable = try #require(pinproxyExecutable, "build the pinproxy executable first (make test builds it)")
        let commands = [
            ["pin", w.path("encrypted.pem")],
            ["verify", "--policy", w.path("policy/none.json"), "--chain", w.path("encrypted.pem"), "--host", "api.example.com"],
        ]
        for arguments in commands {
            let command = ([executable] + arguments).map { "'\($0)'" }.joined(separator: " ")
            let result = try PinproxyTestSupport.run(["timeout", "60", "script", "-qec", command, "/dev/null"])
            #expect(!result.output.contains("pass phrase"), "\(arguments[0]): \(result.output)")
            #expect(result.status == 2, "\(arguments[0]) should fail as bad input: \(result.status) \(result.output)")
        }
    }

    @Test func relativePolicyPathsAreShownResolved() throws {
        // The policy named relative to the working directory: the message still shows where the file was looked for.
        let w = try Workspace(pki)
        try w.dir.write("policy/missing-cert.json", #"{"family":"afnetworking","SSLPinningMode":"certificate","pinnedCertificates":["../../pki/root.pem"]}"#)
        let executable = try #require(pinproxyExecutable)
        let result = try PinproxyTestSupport.run([executable, "verify", "--policy", "policy/missing-cert.json", "--chain", "genuine.pem",
                                                  "--host", "api.example.com"], in: w.dir.path)
        #expect(result.status == 2)
        #expect(result.stderr.contains("policy/missing-cert.json: key 'pinnedCertificates[0]': cannot read \(w.path("policy"))/../../pki/root.pem (relative to the policy file): no such file"), "\(result.stderr)")
    }

    @Test func helpShowsRequiredOptionsAsRequired() throws {
        let result = try pinproxy(["verify", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--policy <file> --chain <file> [--host <host>] [--no-domain]"), "\(result.stdout)")
        #expect(!result.stdout.contains("[--policy"))
        #expect(result.stdout.contains("--no-domain instead of --host"), "\(result.stdout)")
    }

    @Test func reportOnlyExitsZero() throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/tk.json", """
            {"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKEnforcePinning":false,
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
        for text in [pin.okhttp, pin.curl, pin.hpkp, pin.androidXML, "TrustKit:    \(pin.base64)", pki.leaf.sha256FingerprintText, "CN=api.example.com"] {
            #expect(result.stdout.contains(text), "missing \(text)")
        }
        #expect(result.stdout.contains("public key"))
        #expect(result.stdout.contains(pki.intermediate.spkiPin.okhttp))
    }

    @Test func pinAcceptsAPrivateKeyAndNeverPrintsIt() throws {
        let w = try Workspace(pki)
        let pem = try pki.serverKey.pemEncoded()
        try w.dir.write("server.key", pem)
        let encrypted = try PinproxyTestSupport.run(["openssl", "pkey", "-in", w.path("server.key"), "-aes128", "-passout", "pass:secret"])
        try #require(encrypted.status == 0, "\(encrypted.stderr)")
        try w.dir.write("encrypted.key", encrypted.stdout)
        let traditional = try PinproxyTestSupport.run(["openssl", "pkey", "-in", w.path("server.key"), "-traditional"])
        try w.dir.write("traditional.key", traditional.stdout)

        for name in ["server.key", "traditional.key"] {
            let result = try pinproxy(["pin", w.path(name)])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.contains("\(w.path(name)): private key (the pin of its public half; the key itself is not shown)"))
            #expect(result.stdout.contains(pki.leaf.spkiPin.okhttp), "\(result.stdout)")
            #expect(!result.stdout.contains("PRIVATE KEY"))
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            for line in body { #expect(!result.stdout.contains(line)) }
        }
        let refused = try pinproxy(["pin", w.path("encrypted.key")])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("encrypted private key; pinproxy does not ask for passphrases"), "\(refused.stderr)")
        #expect(refused.stderr.contains("openssl pkey -in encrypted.key -pubout"))
    }

    @Test func aPrivateKeyInAChainFileIsRefusedWithoutEchoingIt() throws {
        let w = try Workspace(pki)
        let keyPEM = try pki.serverKey.pemEncoded()
        let traditional = try PinproxyTestSupport.run(["openssl", "pkey", "-in", try w.dir.write("k.pem", keyPEM), "-traditional"]).stdout
        let body = (keyPEM + traditional).split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for (name, key) in [("pkcs8", keyPEM), ("traditional", traditional)] {
            for text in [pki.leaf.pemEncoded + key + pki.intermediate.pemEncoded, key + pki.leaf.pemEncoded] {
                try w.dir.write("with-key-\(name).pem", text)
                for extra in [[], ["--json"]] {
                    let result = try verify(w, policy: "policy/af.json", chain: "with-key-\(name).pem", extra: extra)
                    #expect(result.status == 2, "\(result)")
                    #expect(result.stderr.contains("with-key-\(name).pem holds a private key (a PRIVATE KEY PEM block); a chain file holds certificates only"), "\(result.stderr)")
                    #expect(result.stdout.isEmpty)
                    for line in body { #expect(!result.stderr.contains(line)) }
                }
            }
        }
        // A DER certificate before the key block: the file is not UTF-8 text, and the key is still found.
        let mixed = pki.leaf.derEncoded + Array(keyPEM.utf8)
        try Data(mixed).write(to: URL(fileURLWithPath: w.path("der-with-key.pem")))
        let result = try verify(w, policy: "policy/af.json", chain: "der-with-key.pem")
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains("der-with-key.pem holds a private key (a PRIVATE KEY PEM block)"), "\(result.stderr)")
        for line in body { #expect(!result.stderr.contains(line)) }
    }

    @Test func pinNamesThePublicKeyOfAPrivateKey() throws {
        let w = try Workspace(pki)
        try w.dir.write("server.key", try pki.serverKey.pemEncoded())
        try w.dir.write("key.pem", try PublicKey(of: pki.serverKey).derEncoded.pemPublicKey)
        let fromPrivate = try pinproxy(["pin", w.path("server.key")])
        #expect(fromPrivate.status == 0)
        #expect(fromPrivate.stdout.contains("subject:     (none: the public key of a private key)"), "\(fromPrivate.stdout)")
        #expect(!fromPrivate.stdout.contains("bare public key"))
        let bare = try pinproxy(["pin", w.path("key.pem")])
        #expect(bare.stdout.contains("subject:     (none: a bare public key)"), "\(bare.stdout)")
    }

    /// OkHttp's CertificatePinner and Alamofire's evaluator keys see the host as written: a
    /// trailing dot skips the pins set for the name without it. TrustKit's lookup too.
    /// Android strips the dot before its lookup, curl before its comparisons.
    @Test func aTrailingDotSkipsPinsKeyedByTheHostAsWritten() throws {
        let w = try Workspace(pki)
        let backup = [UInt8](repeating: 9, count: 32).base64
        try w.dir.write("policy/okhttp.json", #"{"family":"okhttp","certificatePinner":{"api.example.com":["\#(pki.leaf.spkiPin.okhttp)"]}}"#)
        try w.dir.write("policy/alamofire.json", #"{"family":"alamofire","allHostsMustBeEvaluated":false,"evaluators":{"api.example.com":{"type":"PinnedCertificatesTrustEvaluator","certificates":["server.cer"]}}}"#)
        try w.dir.write("policy/alamofire-all.json", #"{"family":"alamofire","evaluators":{"api.example.com":{"type":"PinnedCertificatesTrustEvaluator","certificates":["server.cer"]}}}"#)
        try w.dir.write("policy/trustkit.json", #"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["\#(pki.leaf.spkiPin.base64)","\#(backup)"]}}}"#)
        try w.dir.write("policy/android.xml", #"<network-security-config><base-config><trust-anchors><certificates src="system"/><certificates src="user"/></trust-anchors></base-config><domain-config><domain>api.example.com</domain><pin-set><pin digest="SHA-256">\#(pki.leaf.spkiPin.base64)</pin></pin-set></domain-config></network-security-config>"#)
        try w.dir.write("policy/curl.json", #"{"family":"curl","pinnedpubkey":"\#(pki.leaf.spkiPin.curl)"}"#)
        let installed = ["--user-anchor", w.path("proxy-ca.pem")]
        func run(_ policy: String, host: String) throws -> (status: Int32, stdout: String, stderr: String) {
            try pinproxy(["verify", "--policy", w.path(policy), "--chain", w.path("forged.pem"), "--host", host,
                          "--trust-store", w.path("store.pem")] + installed)
        }
        for policy in ["policy/okhttp.json", "policy/alamofire.json", "policy/alamofire-all.json", "policy/trustkit.json", "policy/android.xml", "policy/curl.json"] {
            #expect(try run(policy, host: "api.example.com").status == 1, "\(policy) without the dot")
        }
        let okhttp = try run("policy/okhttp.json", host: "api.example.com.")
        #expect(okhttp.status == 0, "\(okhttp)")
        #expect(okhttp.stdout.hasPrefix("ACCEPT — okhttp (cleaned-chain, android) for api.example.com."), "\(okhttp.stdout)")
        #expect(okhttp.stdout.contains("none match api.example.com. as written (a pattern for api.example.com does not match the name with its trailing dot)"), "\(okhttp.stdout)")
        #expect(okhttp.stdout.contains("weakness reproduced: trailing-dot host"), "\(okhttp.stdout)")
        let alamofire = try run("policy/alamofire.json", host: "api.example.com.")
        #expect(alamofire.status == 0, "\(alamofire)")
        #expect(alamofire.stdout.contains("no evaluator for api.example.com. (the keys are exact host strings; api.example.com has one)"), "\(alamofire.stdout)")
        // With allHostsMustBeEvaluated, the missing evaluator fails closed.
        #expect(try run("policy/alamofire-all.json", host: "api.example.com.").status == 1)
        let trustkit = try run("policy/trustkit.json", host: "api.example.com.")
        #expect(trustkit.status == 0, "\(trustkit)")
        #expect(trustkit.stdout.contains("weakness reproduced: trailing-dot host"), "\(trustkit.stdout)")
        // Android and curl normalise the name first: the pins still apply.
        #expect(try run("policy/android.xml", host: "api.example.com.").status == 1)
        #expect(try run("policy/curl.json", host: "api.example.com.").status == 1)
    }

    /// Alamofire's `ServerTrustManager` looks evaluators up with `evaluators[host]`: a key written
    /// in other letter case than the URL's host finds nothing, so the pins are skipped (or, with
    /// allHostsMustBeEvaluated, the genuine server is refused too). OkHttp lower-cases its patterns.
    @Test func alamofireHostKeysAreCaseSensitive() throws {
        let w = try Workspace(pki)
        try w.dir.write("policy/alamofire.json", #"{"family":"alamofire","allHostsMustBeEvaluated":false,"evaluators":{"API.example.com":{"type":"PinnedCertificatesTrustEvaluator","certificates":["server.cer"]}}}"#)
        try w.dir.write("policy/alamofire-all.json", #"{"family":"alamofire","evaluators":{"API.example.com":{"type":"PinnedCertificatesTrustEvaluator","certificates":["server.cer"]}}}"#)
        try w.dir.write("policy/alamofire-exact.json", #"{"family":"alamofire","allHostsMustBeEvaluated":false,"evaluators":{"api.example.com":{"type":"PinnedCertificatesTrustEvaluator","certificates":["server.cer"]}}}"#)
        func run(_ policy: String) throws -> (status: Int32, stdout: String, stderr: String) {
            try pinproxy(["verify", "--policy", w.path(policy), "--chain", w.path("forged.pem"), "--host", "api.example.com",
                          "--trust-store", w.path("store.pem"), "--user-anchor", w.path("proxy-ca.pem")])
        }
        #expect(try run("policy/alamofire-exact.json").status == 1)
        let skipped = try run("policy/alamofire.json")
        #expect(skipped.status == 0, "\(skipped)")
        #expect(skipped.stdout.contains("no evaluator for api.example.com (the keys are exact, case-sensitive host strings; API.example.com differs in case)"), "\(skipped.stdout)")
        #expect(skipped.stdout.contains("weakness reproduced: host key case"), "\(skipped.stdout)")
        #expect(try run("policy/alamofire-all.json").status == 1)
    }
}
