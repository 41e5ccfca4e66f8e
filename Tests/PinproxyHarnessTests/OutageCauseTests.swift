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
