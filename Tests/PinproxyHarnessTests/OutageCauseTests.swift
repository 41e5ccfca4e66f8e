import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// The pins a refused rotation broke are named after the world's certificates, whatever
/// notation the family's verdict writes them in.
@Suite struct OutageCauseTests {
    /// A CA whose key's base64 pin starts with '/': OkHttp writes it `sha256//…`, which
    /// reads like curl's notation (one key in 64).
    static func certificateWithSlashPin() throws -> Certificate {
        for _ in 0..<4_000 {
            let ca = try CertificateAuthority.create()
            if ca.certificate.spkiPin.base64.hasPrefix("/") { return ca.certificate }
        }
        throw PinproxyError(.invalidArgument, "no key with a pin starting with '/' in 4,000 tries")
    }

    @Test func aPinStartingWithASlashIsNamedInEveryFamily() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        defer { world.removeFiles() }
        let backup = try Self.certificateWithSlashPin()
        var policyWorld = world.policyWorld
        policyWorld.certificates["next-intermediate"] = backup
        let directory = try TemporaryDirectory()
        let policies = [
            ("afnetworking.json", #"{"family": "afnetworking", "SSLPinningMode": "publicKey", "pinnedCertificates": ["world:next-intermediate"]}"#),
            ("alamofire.json", #"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "PublicKeysTrustEvaluator", "keys": ["world:next-intermediate"]}}}"#),
            ("okhttp.json", #"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:next-intermediate"]}}"#),
            ("trustkit.json", #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["world:next-intermediate", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}}"#),
            ("nsc.xml", #"<network-security-config><domain-config><domain>api.example.com</domain><pin-set><pin digest="SHA-256">world:next-intermediate</pin></pin-set></domain-config></network-security-config>"#),
            ("curl.json", #"{"family": "curl", "pinnedpubkey": "world:next-intermediate"}"#),
        ]
        let trust = ServerTrust(presentedChain: world.originChain, host: world.host, time: Date(), store: world.deviceStore(userAnchors: []))
        for (name, text) in policies {
            let policy = try PolicyFile.load(contentsOf: try directory.write(text, to: name), world: policyWorld)
            let verdict = policy.evaluate(trust)
            #expect(verdict.decision == .reject, "\(name): \(verdict.steps)")
            #expect(!verdict.missingPins.isEmpty, "\(name): \(verdict.steps)")
            #expect(OutageCause.brokenPins(verdict, world: policyWorld) == [.init(name: "next-intermediate", wholeCertificate: false)],
                    "\(name): \(verdict.missingPins) against \(backup.spkiPin.base64)")
        }
    }

    /// A pinned certificate (AFNetworking's certificate mode) is named as a certificate.
    @Test func aPinnedCertificateIsNamedAsOne() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        defer { world.removeFiles() }
        let directory = try TemporaryDirectory()
        let text = #"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["world:misissuer"]}"#
        let policy = try PolicyFile.load(contentsOf: try directory.write(text, to: "afnetworking.json"), world: world.policyWorld)
        let trust = ServerTrust(presentedChain: world.originChain, host: world.host, time: Date(), store: world.deviceStore(userAnchors: []))
        let verdict = policy.evaluate(trust)
        #expect(OutageCause.brokenPins(verdict, world: world.policyWorld) == [.init(name: "misissuer", wholeCertificate: true)], "\(verdict.missingPins)")
    }
}

/// A policy with its own list of trusted CAs refuses a CA switch before any pin is compared:
/// the fix is that list, not a backup pin.
@Suite struct OwnTrustOutageTests {
    @Test func aCurlCABundleWithoutTheSecondCANamesTheBundleNotABackupPin() throws {
        let world = try HarnessWorld.generate(host: try HostName(validating: "api.example.com"))
        defer { world.removeFiles() }
        let directory = try TemporaryDirectory()
        let text = #"{"family": "curl", "pinnedpubkey": "world:leaf", "cacert": "world:root"}"#
        let policy = try PolicyFile.load(contentsOf: try directory.write(text, to: "curl.json"), world: world.policyWorld)
        let rotation = try #require(world.rotations.first { $0.name == "ca-switch" })
        let trust = ServerTrust(presentedChain: rotation.chain, host: world.host, time: Date(), store: world.deviceStore(userAnchors: []))
        let verdict = policy.evaluate(trust)
        #expect(verdict.decision == .reject, "\(verdict.steps)")
        let text2 = OutageCause.text(rotation: rotation, verdict: verdict, world: world.policyWorld, genuineLeaf: world.originChain[0])
        #expect(text2.contains("cacert") && text2.contains("world:second-ca") && !text2.contains("backup"), "\(text2)")
        // A bundle with the second CA in it takes the switched chain with the same pin.
        let both = #"{"family": "curl", "pinnedpubkey": "world:leaf", "cacert": "world:second-ca"}"#
        let surviving = try PolicyFile.load(contentsOf: try directory.write(both, to: "curl2.json"), world: world.policyWorld)
        #expect(surviving.evaluate(trust).decision == .accept, "\(surviving.evaluate(trust).steps)")
    }

    /// The table lists every refused row's reason in full, the fix included.
    @Test func theTableListsTheOutageWithItsFix() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write(#"{"family": "curl", "pinnedpubkey": "world:leaf", "cacert": "world:root"}"#, to: "curl.json")
        let r = try pinproxy(["check", "--policy", policy, "--scenarios", "rotations"])
        let line = r.stdout.split(separator: "\n").first { $0.hasPrefix("ca-switch ") && $0.contains(" direct ") } ?? ""
        #expect(line.contains("OUTAGE") && line.contains("unknown issuer") && line.hasSuffix("]"), "\(line)")
        let full = r.stdout.split(separator: "\n").first { $0.contains("] ca-switch, direct:") } ?? ""
        #expect(full.contains("cacert") && full.contains("world:second-ca"), "\(r.stdout)")
    }
}
