import Foundation
import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Pins are whole digests: one differing byte anywhere is a different pin.
@Suite("Pin comparison")
struct PinComparisonTests {
    let pki = PKI.shared

    /// The SPKI SHA-256 of `certificate` with one byte changed.
    static func nearMiss(_ certificate: Certificate, byte index: Int) -> [UInt8] {
        var digest = certificate.spkiPin.sha256
        digest[index] ^= 0x01
        return digest
    }

    /// Every family that pins SPKI digests, pinning the near-misses of every certificate
    /// of the genuine chain (AFNetworking and custom anchors pin whole certificates).
    static func policies(byte index: Int) throws -> [(PolicyFamily, any PinningPolicy)] {
        let pki = PKI.shared
        let chain = [pki.leaf, pki.intermediate, pki.root]
        let pins = try chain.map { try SPKIPin(sha256: nearMiss($0, byte: index)) }
        let sha1 = chain.map { certificate -> String in
            var digest = OpenSSL.sha1(certificate.publicKeyDER)
            digest[index % digest.count] ^= 0x01
            return "sha1/" + digest.base64
        }
        let androidPins = pins.map { "<pin digest=\"SHA-256\">\($0.base64)</pin>" }.joined()
        let androidXML = """
            <network-security-config><domain-config><domain>api.example.com</domain>
            <pin-set>\(androidPins)</pin-set></domain-config></network-security-config>
            """
        return [
            (.okhttp, OkHttpPolicy(pins: try (pins.map(\.okhttp) + sha1).map { try OkHttpPolicy.Pin(pattern: "api.example.com", pin: $0) })),
            (.trustkit, try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: pins)])),
            (.androidNSC, AndroidPolicy(config: try NetworkSecurityConfig.parse(Data(androidXML.utf8), file: "nsc.xml") { _, _ in ("", []) })),
            (.curl, CurlPolicy(pinnedPublicKeys: CurlPolicy.readPins(pins.map(\.curl).joined(separator: ";")).pins)),
            (.alamofire, AlamofirePolicy(evaluators: ["api.example.com": .publicKeys(keys: pins, performDefaultValidation: true, validateHost: true)])),
        ]
    }

    @Test("near-miss pins reject the genuine chain", arguments: [0, 15, 31])
    func nearMissPinsReject(byte index: Int) throws {
        let policies = try Self.policies(byte: index)
        #expect(Set(policies.map(\.0)) == Set(PolicyFamily.allCases).subtracting([.afnetworking, .customAnchors]))
        for (family, policy) in policies {
            let verdict = policy.evaluate(Scenario.genuine.trust(pki))
            #expect(verdict.decision == .reject, "\(family) accepted a pin differing in byte \(index): \(verdict.steps)")
            #expect(verdict.matchedPins.isEmpty, "\(family)")
        }
    }

    @Test func exactPinsStillAccept() throws {
        // The same policies with the real digests accept: the near-miss is what makes them fail.
        let pins = [pki.leaf, pki.intermediate, pki.root].map(\.spkiPin)
        #expect(OkHttpPolicy(pins: try pins.map { try OkHttpPolicy.Pin(pattern: "api.example.com", pin: $0.okhttp) })
            .evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(try TrustKitPolicy(domains: [.init(domain: "api.example.com", publicKeyHashes: pins)]).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        #expect(CurlPolicy(pinnedPublicKeys: pins).evaluate(Scenario.genuine.trust(pki)).decision == .accept)
    }

    /// An `okhttp` policy file without `profile` checks the cleaned chain: the genuine
    /// certificate appended to a forged chain does not satisfy its pin.
    @Test func okhttpFileWithoutProfileChecksTheCleanedChain() throws {
        let dir = try TemporaryDirectory()
        let pinned = #""certificatePinner":{"api.example.com":["\#(pki.leaf.spkiPin.okhttp)"]}"#
        let plain = try PolicyFile.load(contentsOf: try dir.write("okhttp.json", #"{"family":"okhttp",\#(pinned)}"#))
        #expect(plain.profile == "cleaned-chain, android")
        let verdict = plain.evaluate(Scenario.stuffed.trust(pki))
        #expect(verdict.decision == .reject)
        #expect(verdict.weaknesses.isEmpty)
        #expect(plain.evaluate(Scenario.genuine.trust(pki)).decision == .accept)
        // The same file naming the old behaviour accepts the stuffed chain: the test can tell them apart.
        let old = try PolicyFile.load(contentsOf: try dir.write("old.json", #"{"family":"okhttp","profile":"presented-chain",\#(pinned)}"#))
        #expect(old.evaluate(Scenario.stuffed.trust(pki)).decision == .accept)
    }
}
