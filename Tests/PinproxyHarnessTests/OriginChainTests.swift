import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `--origin-chain` / `--origin-key`: the origin serves the user's own chain, and `world:` names it.
@Suite struct OriginChainTests {
    /// A user's PKI on disk: root → leaf for `host`, the chain file holding leaf and root.
    struct UserChain {
        let directory: TemporaryDirectory
        let root: CertificateAuthority
        let leaf: Certificate
        let chainPath: String
        let keyPath: String

        init(host: String = "shop.example.org", includeRoot: Bool = true) throws {
            directory = try TemporaryDirectory()
            var options = CertificateAuthority.Options()
            options.commonName = "User Root"
            root = try CertificateAuthority.create(options)
            let key = try PrivateKey.generate(.ecP256)
            let now = Date()
            leaf = try Certificate.issue(.serverLeaf(names: [try HostName(validating: host)], notBefore: now.addingTimeInterval(-3600),
                                                     notAfter: now.addingTimeInterval(86_400)),
                                         subjectKey: key, signer: .authority(root.certificate, root.privateKey))
            chainPath = try directory.write(leaf.pemEncoded + (includeRoot ? root.certificate.pemEncoded : ""), to: "chain.pem")
            keyPath = try directory.write(try key.pemEncoded(), to: "key.pem")
        }
    }

    @Test func theUsersChainIsServedAndNamedByWorldReferences() throws {
        let user = try UserChain()
        let world = try HarnessWorld.load(chainPath: user.chainPath, keyPath: user.keyPath, host: nil)
        #expect(world.host.description == "shop.example.org")  // the leaf's first name
        #expect(world.leaf == user.leaf && world.root == user.root.certificate && world.intermediate == nil)
        let harness = try Harness(world: world, proxy: try InProcessProxy(world: world))
        defer { harness.stop() }
        let policy = try user.directory.write(#"{"family": "okhttp", "certificatePinner": {"shop.example.org": ["world:leaf"]}}"#, to: "p.json")
        let report = try harness.check(try harness.loadPolicy(contentsOf: policy))
        #expect(report.passed == report.results.count, "\(TableReport.text(report))")
        // The direct row received the user's own leaf.
        let direct = try #require(report.results.first { $0.scenario == "direct" })
        #expect(direct.verdict?.presentedChain.first?.spkiPin == user.leaf.spkiPin.okhttp)
        // The chain has no intermediate: a policy that names one says so.
        let missing = try user.directory.write(#"{"family": "okhttp", "certificatePinner": {"shop.example.org": ["world:intermediate"]}}"#, to: "m.json")
        #expect(throws: PinproxyError.self) { try harness.loadPolicy(contentsOf: missing) }
    }

    @Test func aKeyThatIsNotTheLeafsOrAChainWithoutItsRootIsRefused() throws {
        let user = try UserChain()
        let other = try UserChain()
        #expect(throws: PinproxyError.self) { try HarnessWorld.load(chainPath: user.chainPath, keyPath: other.keyPath, host: nil) }
        let rootless = try UserChain(includeRoot: false)
        do {
            _ = try HarnessWorld.load(chainPath: rootless.chainPath, keyPath: rootless.keyPath, host: nil)
            Issue.record("a chain whose root is nowhere was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("append the root CA to the file"), "\(error.reason)")
        }
    }

    @Test func theCommandTakesTheChainAndRunsARealClient() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let user = try UserChain()
        let policy = try user.directory.write(#"{"family": "curl", "pinnedpubkey": "world:leaf"}"#, to: "curl.json")
        let builtIn = try pinproxy(["check", "--policy", policy, "--origin-chain", user.chainPath, "--origin-key", user.keyPath])
        #expect(builtIn.status == 0, "\(builtIn.output)")
        #expect(builtIn.stdout.contains("for shop.example.org"))
        let real = try pinproxy(["check", "--origin-chain", user.chainPath, "--origin-key", user.keyPath,
                                 "--client", "curl -sS -o /dev/null --cacert {ca} --pinnedpubkey {pin} {url}", "--profiles", "passthrough,forge,stuff"])
        #expect(real.status == 0, "\(real.output)")
        #expect(real.stdout.contains("3 scenarios: 3 passed"), "\(real.stdout)")
        #expect(try pinproxy(["check", "--policy", policy, "--client", "true"]).status == 2)
    }
}
