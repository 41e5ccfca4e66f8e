import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// Every attack profile through a real proxy to a real origin with a root →
/// intermediate → leaf chain: what `openssl s_client` receives, and why
/// `openssl verify` refuses it when the proxy CA is trusted.
@Suite("Attack profiles end to end", .timeLimit(.minutes(10)))
struct AttackEndToEndTests {
    @Test("each profile: the chain a client receives through the daemon, and the one reason it fails",
          arguments: AttackCatalog.standard.profiles.map(\.name))
    func profileThroughTheDaemon(name: String) throws {
        let world = try AttackWorld()
        let origin = try Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: AttackProfile(name))
        let chain = try receivedChain(proxyPort: proxy.port, originPort: origin.port)
        let proxyCA = world.proxyCA.certificate
        func errors(trusting trusted: [Certificate], host: String? = "localhost", _ extra: [String] = []) throws -> [Int] {
            try opensslErrors(chain, trusting: trusted, host: host, in: world, extra: extra)
        }
        // The genuine chain itself passes, against its own root.
        #expect(try opensslErrors(world.presented, trusting: [world.root.certificate], host: "localhost", in: world) == [])

        switch AttackProfile(name) {
        case .passthrough:
            #expect(chain == world.presented)
            #expect(try errors(trusting: [proxyCA]) != [])
        case .forge:
            #expect(chain.count == 2 && chain[1] == proxyCA)
            #expect(try errors(trusting: [proxyCA]) == [])
            #expect(try errors(trusting: [world.root.certificate]) != [])
        case .stuff:
            #expect(Array(chain.dropFirst()) == [proxyCA] + world.genuine)
            #expect(chain[0].isIssued(by: proxyCA))
            // Valid for whoever trusts the proxy CA, with the genuine leaf's key in the chain.
            #expect(try errors(trusting: [proxyCA]) == [])
            #expect(naivePinCheck(chain, pin: world.genuineLeaf.spkiPin))
        case .selfSigned:
            #expect(chain.count == 1 && chain[0].isSelfSigned)
            #expect(try errors(trusting: [proxyCA]) == [18])            // self-signed certificate, alone
            #expect(try errors(trusting: [chain[0]]) == [])             // nothing else is wrong with it
        case .wrongHost:
            #expect(chain.count == 2 && chain[1] == proxyCA)
            #expect(chain[0].subjectAlternativeNames == [.dns("pinproxy-wrong-host.localhost")])
            #expect(try errors(trusting: [proxyCA]) == [62])            // hostname mismatch
            #expect(try errors(trusting: [proxyCA], host: nil) == [])   // and only that
        case .expired:
            #expect(chain.count == 2 && chain[1] == proxyCA)
            #expect(chain[0].notBefore >= proxyCA.notBefore)
            #expect(try errors(trusting: [proxyCA]) == [10])            // certificate has expired, alone
            #expect(try errors(trusting: [proxyCA], ["-no_check_time"]) == [])
        case .notYetValid:
            #expect(chain.count == 2 && chain[1] == proxyCA)
            #expect(chain[0].notAfter <= proxyCA.notAfter)
            #expect(try errors(trusting: [proxyCA]) == [9])             // certificate is not yet valid
            #expect(try errors(trusting: [proxyCA], ["-no_check_time"]) == [])
        case .untrustedCA:
            let ca = try #require(proxy.server.attacks.untrustedAuthority).certificate
            #expect(chain == [chain[0], ca])
            #expect(ca != proxyCA && ca != world.root.certificate)
            #expect(try errors(trusting: [proxyCA]) == [19])            // self-signed certificate in chain: an unknown root
            #expect(try errors(trusting: [ca]) == [])
        case .misissued:
            #expect(chain.count == 2 && chain[1] == world.misissuing.certificate)
            #expect(try errors(trusting: [world.misissuing.certificate]) == [])   // valid where that CA is trusted
            #expect(try errors(trusting: [proxyCA]) == [19])
        case .fakeParent:
            #expect(chain.count == 4)
            #expect(chain.dropFirst().map(\.spkiPin) == world.genuine.map(\.spkiPin))
            // Trusting the proxy CA and the genuine root: the path is built, its signatures fail.
            #expect(try errors(trusting: [proxyCA, world.root.certificate]).first == 7)
            for pinned in world.genuine { #expect(naivePinCheck(chain, pin: pinned.spkiPin)) }
        default:
            Issue.record("no expectations for profile \(name)")
        }
        // The event names the profile; s_client's handshake-then-leave is a suspected refusal.
        if name != "passthrough" {
            let event = try #require(proxy.waitForEvent(.closedAfterHandshakeWithoutRequest))
            #expect(event.profile == name)
            #expect(event.refusal == .suspected)
            #expect(event.message.hasSuffix("(profile \(name))"), "\(event.message)")
            #expect(proxy.server.counters.profiles[name]?.suspected == 1)
            #expect(proxy.server.counters.counts.rejected == 0)
        } else {
            #expect(proxy.waitForEvent(.passthrough)?.profile == "passthrough")
        }
    }

    @Test("fake-parent and stuff against real policy families: the genuine chain passes, the attack is refused")
    func policiesRefuseChainAttacks() throws {
        let world = try AttackWorld()
        let origin = try Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: .fakeParent, admin: true)
        let fake = try receivedChain(proxyPort: proxy.port, originPort: origin.port)
        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        _ = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"stuff"}"#, "\(admin)/rules"])
        let stuffed = try receivedChain(proxyPort: proxy.port, originPort: origin.port)
        #expect(stuffed.count == 5)

        let store = try world.write([world.root.certificate], "store.pem")
        let userCA = try world.write([world.proxyCA.certificate], "user-ca.pem")
        let genuinePath = try world.write(world.presented, "genuine.pem")
        let fakePath = try world.write(fake, "fake-parent.pem")
        let stuffedPath = try world.write(stuffed, "stuffed.pem")
        func verdict(_ policy: String, _ chainPath: String) throws -> Int32 {
            let path = world.directory.file("policy-\(UUID().uuidString).json")
            try FileIO.write(Array(policy.utf8), to: path, mode: 0o644)
            let r = try pinproxy(["verify", "--policy", path, "--chain", chainPath, "--host", "localhost",
                                  "--trust-store", store, "--user-anchor", userCA])
            #expect(r.status == 0 || r.status == 1, "\(r.output)")
            return r.status
        }
        for (level, pinned) in zip(["leaf", "intermediate", "root"], world.genuine) {
            let certificatePath = try world.write([pinned], "pinned-\(level).pem")
            let afnetworking = #"{"family":"afnetworking","SSLPinningMode":"certificate","pinnedCertificates":["\#(certificatePath)"]}"#
            let okhttp = #"{"family":"okhttp","certificatePinner":{"localhost":["\#(pinned.spkiPin.okhttp)"]}}"#
            let okhttpPresented = #"{"family":"okhttp","profile":"presented-chain","certificatePinner":{"localhost":["\#(pinned.spkiPin.okhttp)"]}}"#
            for policy in [afnetworking, okhttp] {
                #expect(try verdict(policy, genuinePath) == 0, "genuine chain, \(level) pin: \(policy)")
                #expect(try verdict(policy, fakePath) == 1, "fake-parent, \(level) pin: \(policy)")
                #expect(try verdict(policy, stuffedPath) == 1, "stuff, \(level) pin: \(policy)")
            }
            // The naive checks each attack is built to defeat.
            #expect(naivePinCheck(fake, pin: pinned.spkiPin), "\(level)")
            let unvalidated = #"{"family":"afnetworking","SSLPinningMode":"publicKey","allowInvalidCertificates":true,"pinnedCertificates":["\#(certificatePath)"]}"#
            #expect(try verdict(unvalidated, fakePath) == 0, "publicKey mode on an unvalidated path, \(level) pin")
            #expect(try verdict(okhttpPresented, stuffedPath) == 0, "CVE-2016-2402 with a \(level) pin")
        }
    }

    @Test("PUT /rules switches profiles without a restart; an open connection keeps its own")
    func rulesSwitchAtRunTime() throws {
        let world = try AttackWorld()
        let origin = try Origin(chain: world.genuineChainPath, key: world.genuineKeyPath)
        let proxy = try world.proxy(default: .forge, admin: true)
        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        let client = try KeptAliveClient(proxyPort: proxy.port, originPort: origin.port)
        #expect(try client.get() == "hello from origin\n")

        let put = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"forge","rules":[{"pattern":"localhost","profile":"expired"}]}"#,
                            "-w", "\n%{http_code}", "\(admin)/rules"])
        #expect(put.stdout.hasSuffix("\n200"), "\(put.stdout)")
        let rules = try curl(["\(admin)/rules"])
        #expect(rules.stdout.contains(#""profile" : "expired""#), "\(rules.stdout)")
        // A new connection: the expired leaf, at once.
        let fresh = try receivedChain(proxyPort: proxy.port, originPort: origin.port)
        #expect(fresh[0].notAfter < Date())
        // The open one still speaks through its forge leaf.
        #expect(try client.get() == "hello from origin\n")
        client.close()

        let deadline = Date().addingTimeInterval(10)
        var flows: [Flow] = []
        while flows.count < 2 && Date() < deadline {
            flows = proxy.server.recorder.recent.flows.filter { $0.request.url.hasSuffix("/hello") }
            if flows.count < 2 { usleep(50_000) }
        }
        #expect(flows.count == 2)
        #expect(flows.allSatisfy { $0.clientTLS?.profile == "forge" }, "\(flows.map { $0.clientTLS?.profile ?? "-" })")
        #expect(Set(flows.compactMap { $0.clientTLS?.forgedLeafSerial }).count == 1)
        let events = proxy.server.recorder.recent.events
        #expect(events.contains { $0.kind == .intercepted && $0.profile == "forge" })
        #expect(events.contains { $0.kind == .closedAfterHandshakeWithoutRequest && $0.profile == "expired" })
    }

    @Test("misissued without a misissuing CA is refused: 400 from the API, and at start")
    func misissuedNeedsItsCA() throws {
        let world = try AttackWorld()
        let proxy = try RunningProxy(world.base, admin: true)
        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        for body in [#"{"defaultProfile":"misissued"}"#, #"{"rules":[{"pattern":"**.test","profile":"misissued"}]}"#] {
            let r = try curl(["-X", "PUT", "--data", body, "-w", "\n%{http_code}", "\(admin)/rules"])
            #expect(r.stdout.hasSuffix("\n400"), "\(r.stdout)")
            #expect(r.stdout.contains("--misissuing-ca"), "\(r.stdout)")
        }
        #expect(proxy.server.rules.defaultProfile == .forge)
        let unknown = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"forged"}"#, "-w", "\n%{http_code}", "\(admin)/rules"])
        #expect(unknown.stdout.hasSuffix("\n400"), "\(unknown.stdout)")
        #expect(unknown.stdout.contains("unknown attack profile 'forged' (did you mean 'forge'?); known: passthrough, forge, stuff"), "\(unknown.stdout)")

        var configuration = ProxyConfiguration()
        configuration.rules.defaultProfile = .misissued
        #expect(throws: PinproxyError.self) { try ProxyServer(configuration: configuration, authority: world.proxyCA) }
        let profiles = try curl(["\(admin)/profiles"])
        #expect(profiles.stdout.contains(#""name" : "fake-parent""#), "\(profiles.stdout)")
        #expect(profiles.stdout.contains(#""unavailable" : "the misissued profile needs a second CA"#), "\(profiles.stdout)")
    }
}

/// One TLS connection through the proxy kept open between requests (python3's ssl, no verification).
final class KeptAliveClient {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    static let script = """
        import socket, ssl, sys
        proxy, port = int(sys.argv[1]), int(sys.argv[2])
        raw = socket.create_connection(("127.0.0.1", proxy))
        raw.sendall(b"CONNECT localhost:%d HTTP/1.1\\r\\nHost: localhost:%d\\r\\n\\r\\n" % (port, port))
        head = b""
        while b"\\r\\n\\r\\n" not in head:
            head += raw.recv(1)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        tls = context.wrap_socket(raw, server_hostname="localhost")
        reader = tls.makefile("rb")
        for line in sys.stdin:
            tls.sendall(b"GET /hello HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
            length = 0
            while True:
                header = reader.readline()
                if header in (b"\\r\\n", b""):
                    break
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            sys.stdout.write(reader.read(length).decode())
            sys.stdout.flush()
        """

    init(proxyPort: Int, originPort: Int) throws {
        guard let python = findExecutable("/usr/bin/python3", "python3") else { throw HarnessError("python3 not found") }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", Self.script, String(proxyPort), String(originPort)]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Sends one request on the open connection and returns the body.
    func get() throws -> String {
        input.fileHandleForWriting.write(Data("go\n".utf8))
        var body = Data()
        let expected = "hello from origin\n".utf8.count
        let deadline = Date().addingTimeInterval(20)
        while body.count < expected && Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            body += chunk
        }
        return String(decoding: body, as: UTF8.self)
    }

    func close() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit { stop(process) }
}
