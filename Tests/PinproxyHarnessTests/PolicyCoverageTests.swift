import Foundation
import PinproxyCertificates
import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `check --host` for a host the policy does not pin: one note, before the rows, verdicts unchanged.
@Suite(.timeLimit(.minutes(10)))
struct PolicyCoverageTests {
    /// The note for `text` (a policy file named `name`) and `host`.
    static func note(_ text: String, name: String = "policy.json", host: String) throws -> String? {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        defer { world.removeFiles() }
        let directory = try TemporaryDirectory()
        let policy = try PolicyFile.load(contentsOf: try directory.write(text, to: name), world: world.policyWorld)
        return PolicyCoverage.note(policy, host: try HostName(validating: host))
    }

    @Test func okHttpPatternsCoverTheHostsTheyMatch() throws {
        let policy = #"{"family": "okhttp", "certificatePinner": {"*.example.com": ["world:leaf"], "**.example.org": ["world:leaf"]}}"#
        #expect(try Self.note(policy, host: "api.example.com") == nil)
        #expect(try Self.note(policy, host: "a.b.example.org") == nil)
        let note = try #require(try Self.note(policy, host: "a.b.example.com"))
        #expect(note.hasPrefix("the policy pins nothing for a.b.example.com: no CertificatePinner pattern (") && note.contains("*.example.com")
                && note.hasSuffix(") matches it, so OkHttp checks the platform's trust alone; the rows below are those of an unpinned host"), "\(note)")
    }

    @Test func trustKitDomainsCoverThemselvesAndWithIncludeSubdomainsTheirSubdomains() throws {
        let policy = #"{"family": "trustkit", "TSKPinnedDomains": {"example.com": {"TSKPublicKeyHashes": ["world:leaf", "world:intermediate"], "TSKIncludeSubdomains": true}, "example.org": {"TSKPublicKeyHashes": ["world:leaf", "world:intermediate"]}}}"#
        #expect(try Self.note(policy, host: "api.example.com") == nil)
        #expect(try Self.note(policy, host: "example.org") == nil)
        let note = try #require(try Self.note(policy, host: "api.other.org"))
        #expect(note.contains("no TrustKit domain (example.com with includeSubdomains, example.org) covers it, so TrustKit leaves it to the system's default handling")
                || note.contains("no TrustKit domain (example.org, example.com with includeSubdomains) covers it, so TrustKit"), "\(note)")
    }

    @Test func androidDomainConfigsCoverWithTheirOwnOrAnEnclosingPinSet() throws {
        let config = """
            <?xml version="1.0" encoding="utf-8"?>
            <network-security-config>
                <domain-config>
                    <domain includeSubdomains="true">example.com</domain>
                    <pin-set><pin digest="SHA-256">world:leaf</pin><pin digest="SHA-256">world:intermediate</pin></pin-set>
                    <domain-config><domain>inner.example.com</domain></domain-config>
                </domain-config>
                <domain-config><domain>example.org</domain></domain-config>
            </network-security-config>
            """
        #expect(try Self.note(config, name: "network_security_config.xml", host: "api.example.com") == nil)
        #expect(try Self.note(config, name: "network_security_config.xml", host: "inner.example.com") == nil, "the enclosing pin-set applies")
        #expect(try Self.note(config, name: "network_security_config.xml", host: "example.org")?
                    .contains("its domain-config (line 8) has no pin-set, nor does any enclosing one") == true)
        #expect(try Self.note(config, name: "network_security_config.xml", host: "api.example.org")?
                    .contains("no domain-config names it (example.com, inner.example.com, example.org), so base-config applies, without a pin-set") == true)
    }

    @Test func alamofireEvaluatorKeysCoverExactlyTheirHost() throws {
        func policy(_ all: Bool) -> String {
            #"{"family": "alamofire", "allHostsMustBeEvaluated": \#(all), "evaluators": {"api.example.com": {"type": "PublicKeysTrustEvaluator", "keys": ["world:leaf"]}}}"#
        }
        #expect(try Self.note(policy(true), host: "api.example.com") == nil)
        #expect(try Self.note(policy(true), host: "www.api.example.com")?
                    .contains("no Alamofire evaluator has it as its key (api.example.com), so allHostsMustBeEvaluated refuses every connection to it, the genuine server's too") == true)
        #expect(try Self.note(policy(false), host: "other.example.com")?.contains("so URLSession's default handling applies") == true)
    }

    @Test func afNetworkingAndCurlApplyToEveryHost() throws {
        for example in ["afnetworking-publickey.json", "curl.json"] {
            let text = try String(contentsOfFile: packageRoot + "/docs/examples/" + example, encoding: .utf8)
            #expect(try Self.note(text, host: "other.example.com") == nil, "\(example)")
        }
    }

    /// The CLI says it once, before the rows, and the rows are what they were without the note.
    @Test func checkForAnUncoveredHostSaysSoBeforeTheRows() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let r = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/okhttp.json", "--host", "other.example.com",
                              "--profiles", "direct,forge", "--json", directory.file("r.json")])
        let note = "note: the policy pins nothing for other.example.com: no CertificatePinner pattern (api.example.com) matches it, so OkHttp checks the platform's trust alone; the rows below are those of an unpinned host"
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == note, "\(r.stdout)")
        #expect(lines.filter { $0 == note }.count == 1, "\(r.stdout)")
        // An unpinned host: the forged chain is accepted where the device trusts the proxy CA.
        #expect(r.status == 1, "\(r.output)")
        #expect(lines.contains { $0.hasPrefix("forge ") && $0.contains(" yes ") && $0.contains(" FAIL ") }, "\(r.stdout)")
        #expect(r.stdout.contains("4 scenarios: 3 passed, 1 failed, 0 errors"), "\(r.stdout)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.file("r.json")))) as? [String: Any]
        #expect((json?["notes"] as? [String])?.first == String(note.dropFirst("note: ".count)))
        // A covered host gets no note.
        let covered = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/okhttp.json", "--profiles", "direct"])
        #expect(covered.status == 0 && !covered.stdout.contains("pins nothing"), "\(covered.output)")
    }

    /// The foreign-pins note for `text` (a policy file named `name`, which may name the file
    /// `other.pem`: the leaf of a second world) checked in a generated world.
    static func foreignPinsNote(_ text: String, name: String = "policy.json") throws -> String? {
        let world = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        let other = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        defer { world.removeFiles(); other.removeFiles() }
        let directory = try TemporaryDirectory()
        _ = try directory.write(other.leaf.pemEncoded, to: "other.pem")
        let policy = try PolicyFile.load(contentsOf: try directory.write(text, to: name), world: world.policyWorld)
        return PolicyCoverage.foreignPinsNote(policy, world: world.policyWorld)
    }

    /// A real server's pins in a check: every family says so when none of the policy's pins,
    /// pinned certificates or anchors is a certificate of the world; not when one is, and not
    /// for a policy that names none.
    @Test func pinsOfNoCertificateOfTheWorldGetANote() throws {
        let foreign = "sha256/" + String(repeating: "A", count: 43) + "="
        let pairs: [(foreign: String, world: String, name: String)] = [
            (#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["\#(foreign)"]}}"#,
             #"{"family": "okhttp", "certificatePinner": {"api.example.com": ["\#(foreign)", "world:root"]}}"#, "policy.json"),
            (#"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["\#(foreign.dropFirst(7))", "\#(String(repeating: "B", count: 43))="]}}}"#,
             #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["\#(foreign.dropFirst(7))", "world:intermediate"]}}}"#, "policy.json"),
            (#"{"family": "curl", "pinnedpubkey": "sha256//\#(foreign.dropFirst(7))"}"#,
             #"{"family": "curl", "pinnedpubkey": "world:leaf"}"#, "policy.json"),
            (#"{"family": "curl", "pinnedpubkey": "sha256//\#(foreign.dropFirst(7))", "cacert": "other.pem"}"#,
             #"{"family": "curl", "pinnedpubkey": "sha256//\#(foreign.dropFirst(7))", "cacert": "world:root"}"#, "policy.json"),
            (#"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["other.pem"]}"#,
             #"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["other.pem", "world:leaf"]}"#, "policy.json"),
            (#"{"family": "custom-anchors", "anchorCertificates": ["other.pem"]}"#,
             #"{"family": "custom-anchors", "anchorCertificates": ["world:root"]}"#, "policy.json"),
            (#"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "CompositeTrustEvaluator", "evaluators": [{"type": "DefaultTrustEvaluator"}, {"type": "PinnedCertificatesTrustEvaluator", "certificates": ["other.pem"]}]}}}"#,
             #"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "CompositeTrustEvaluator", "evaluators": [{"type": "DefaultTrustEvaluator"}, {"type": "PublicKeysTrustEvaluator", "keys": ["world:leaf"]}]}}}"#, "policy.json"),
            (Self.androidConfig(pin: String(foreign.dropFirst(7))), Self.androidConfig(pin: "world:intermediate"), "network_security_config.xml"),
        ]
        for pair in pairs {
            let note = try #require(try Self.foreignPinsNote(pair.foreign, name: pair.name), "\(pair.foreign)")
            #expect(note.hasPrefix("none of the policy's pins and certificates is a certificate of the generated world (made afresh on every run)")
                    && note.contains("pinproxy verify --policy FILE --host HOST --chain CHAIN.pem"), "\(note)")
            #expect(try Self.foreignPinsNote(pair.world, name: pair.name) == nil, "\(pair.world)")
        }
        // Nothing named, nothing to say: validation alone, and AFNetworking's mode none (which ignores its certificates).
        #expect(try Self.foreignPinsNote(#"{"family": "afnetworking", "SSLPinningMode": "none", "pinnedCertificates": ["other.pem"]}"#) == nil)
        #expect(try Self.foreignPinsNote(#"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "DefaultTrustEvaluator"}}}"#) == nil)
        #expect(try Self.foreignPinsNote(#"{"family": "okhttp", "certificatePinner": {}}"#) == nil)
    }

    static func androidConfig(pin: String) -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config>
            <domain-config>
                <domain>api.example.com</domain>
                <pin-set><pin digest="SHA-256">\(pin)</pin></pin-set>
            </domain-config>
        </network-security-config>
        """
    }

    /// The CLI: the note first, before the rows; the genuine rows refused as before.
    @Test func checkOfARealServersPinsSaysWhyTheGenuineRowsFail() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let policy = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["sha256/\#(String(repeating: "A", count: 43))=", "sha256/\#(String(repeating: "B", count: 43))="]}}"#, to: "real.json")
        let r = try pinproxy(["check", "--policy", policy, "--profiles", "direct,re-key", "--verbose"])
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("note: none of the policy's pins and certificates is a certificate of the generated world") == true, "\(r.stdout)")
        #expect(r.status == 1 && lines.contains { $0.hasPrefix("direct ") && $0.contains(" FAIL ") }, "\(r.output)")
        // The rotation rows' outages: the change broke nothing, so the change's fix (a backup key) is not offered.
        let foreignFix = "fix: none of this row's: the policy's pins name no certificate of this world"
        let rekey = lines.filter { $0.hasPrefix("[") && $0.contains("] re-key, ") }
        #expect(lines.filter { $0.hasPrefix("re-key ") && $0.contains(" OUTAGE ") }.count == 2, "\(r.stdout)")
        #expect(rekey.count == 2 && rekey.allSatisfy { $0.contains(foreignFix) && !$0.contains("backup") }, "\(r.stdout)")
        // Said again among the closing lines, where a reader ends up.
        #expect(lines.contains { $0.hasPrefix("None of the policy's pins and certificates is a certificate of this world (the note at the top)") }, "\(r.stdout)")
        let covered = try pinproxy(["check", "--policy", packageRoot + "/docs/examples/okhttp.json", "--profiles", "direct,re-key", "--verbose"])
        #expect(!covered.stdout.lowercased().contains("none of the policy's pins") && !covered.stdout.contains(foreignFix), "\(covered.output)")
        #expect(covered.stdout.split(separator: "\n").contains { $0.hasPrefix("direct ") && $0.contains(" PASS ") }, "\(covered.output)")
    }
}
