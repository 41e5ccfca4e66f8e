import Foundation
@testable import PinproxyCertificates
@testable import PinproxyPinning
import Testing

/// Host names with underscores, as real curl 7.88.1 and real OkHttp 3.13.1 judged them on one leaf
/// (docs/policies.md, "Host names with underscores"): neither host check looks at a label's characters.
@Suite("Host names with underscores in verdicts")
struct UnderscoreNameVerdictTests {
    let pki = PKI.shared

    static let cases: [(host: String, accepted: Bool)] = [
        ("my_api", true), ("MY_API", true), ("web_1.svc_net.test", true), ("api.svc_net.test", true),
        ("my-api", false), ("a.b.svc_net.test", false), ("svc_net.test", false), ("my_api2", false),
    ]

    func leaf() throws -> Certificate {
        let names: [HostName] = [try HostName(validating: "my_api"), try HostName(validating: "*.svc_net.test")]
        let spec = CertificateSpec.serverLeaf(names: names, notBefore: pki.now.addingTimeInterval(-3600), notAfter: pki.now.addingTimeInterval(86_400))
        return try Certificate.issue(spec, subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(pki.intermediate, pki.intermediateKey))
    }

    @Test("curl: an underscore matches itself, exactly and under a wildcard", arguments: cases)
    func curl(host: String, accepted: Bool) throws {
        let leaf = try leaf()
        let verdict = CurlPolicy(pinnedPublicKeys: [leaf.spkiPin]).evaluate(pki.trust([leaf, pki.intermediate], host: try HostName(validating: host)))
        #expect((verdict.decision == .accept) == accepted, "\(host): \(verdict.steps)")
    }

    @Test("Apple: SecDNSMatch compares labels as strings, an underscore like any other character", arguments: cases)
    func apple(host: String, accepted: Bool) throws {
        #expect(AppleHostMatch.verify(try HostName(validating: host), leaf: try leaf()) == accepted, "\(host)")
    }

    @Test("OkHttp: the host check and the pin pattern take underscores as written", arguments: cases)
    func okhttp(host: String, accepted: Bool) throws {
        let leaf = try leaf()
        let pins = [try OkHttpPolicy.Pin(pattern: "my_api", pin: leaf.spkiPin.okhttp),
                    try OkHttpPolicy.Pin(pattern: "*.svc_net.test", pin: leaf.spkiPin.okhttp)]
        let verdict = OkHttpPolicy(pins: pins).evaluate(pki.trust([leaf, pki.intermediate], host: try HostName(validating: host)))
        #expect((verdict.decision == .accept) == accepted, "\(host): \(verdict.steps)")
    }
}
