import Foundation
import PinproxyHarness
import PinproxyTestSupport
import Testing

/// Whole matrices through live TLS: correct policies pass every scenario, known-broken
/// ones fail exactly the scenarios their defect lets through, and nothing is left unjudged.
@Suite struct PolicyMatrixTests {
    static let safePolicies: [(String, String)] = [
        ("afnetworking-publickey.json", #"{"family": "afnetworking", "SSLPinningMode": "publicKey", "pinnedCertificates": ["world:leaf"]}"#),
        ("afnetworking-certificate.json", #"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["world:intermediate"]}"#),
        ("custom-anchors.json", #"{"family": "custom-anchors", "anchorCertificates": ["world:intermediate"]}"#),
        ("alamofire.json", #"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "PublicKeysTrustEvaluator", "keys": ["world:leaf"]}}}"#),
        ("okhttp.json", #"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf", "world:intermediate"]}}"#),
        ("trustkit.json", #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["world:leaf", "world:intermediate"]}}}"#),
        ("curl.json", #"{"family": "curl", "pinnedpubkey": "world:leaf"}"#),
        ("network_security_config.xml", """
            <network-security-config><domain-config><domain>api.example.com</domain>
            <pin-set><pin digest="SHA-256">world:leaf</pin><pin digest="SHA-256">world:intermediate</pin></pin-set>
            </domain-config></network-security-config>
            """),
    ]

    @Test(arguments: safePolicies)
    func correctPolicyPassesEveryScenario(_ name: String, _ text: String) throws {
        let report = try Matrix.check(text, name: name)
        #expect(report.results.count == 2 * (2 + Matrix.attacks.count), "\(Matrix.dump(report))")
        #expect(report.passed == report.results.count, "\(Matrix.dump(report))")
        #expect(report.exitStatus == 0)
        for attack in Matrix.attacks {
            #expect(report.results.contains { $0.scenario == attack && $0.actual == "REJECT" }, "\(attack) not refused")
        }
    }

    static let afnetworkingNoneFailures = Set(["forge/yes", "stuff/yes"]).union(Matrix.both("misissued"))

    @Test func noPinningFailsOnlyWhereTheForgedChainIsTrusted() throws {
        let report = try Matrix.check(#"{"family": "afnetworking"}"#)
        #expect(Matrix.failures(report) == Self.afnetworkingNoneFailures, "\(Matrix.dump(report))")
        #expect(report.errors == 0)
        #expect(report.exitStatus == 1)
    }

    @Test func afnetworking251AcceptsEveryAttack() throws {
        let report = try Matrix.check(#"{"family": "afnetworking", "profile": "2.5.1"}"#)
        #expect(Matrix.failures(report) == Set(Matrix.attacks.flatMap { ["\($0)/yes", "\($0)/no"] }), "\(Matrix.dump(report))")
        let forge = try #require(report.results.first { $0.scenario == "forge" && $0.deviceTrustsProxyCA == false })
        #expect(forge.weaknesses == ["AFNetworking 2.5.1"])
    }

    @Test func afnetworking252AcceptsAnotherHostsValidCertificate() throws {
        let report = try Matrix.check(#"{"family": "afnetworking", "profile": "2.5.2"}"#)
        #expect(Matrix.failures(report) == Self.afnetworkingNoneFailures.union(["wrong-host/yes"]), "\(Matrix.dump(report))")
        let wrongHost = try #require(report.results.first { $0.scenario == "wrong-host" && $0.deviceTrustsProxyCA == true })
        #expect(wrongHost.weaknesses.contains("CVE-2015-3996"))
    }

    @Test func okhttpPresentedChainFallsToStuffing() throws {
        let report = try Matrix.check(#"{"family": "okhttp", "profile": "presented-chain", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#)
        #expect(Matrix.failures(report) == ["stuff/yes"], "\(Matrix.dump(report))")
        let stuff = try #require(report.results.first { $0.scenario == "stuff" && $0.deviceTrustsProxyCA == true })
        #expect(stuff.weaknesses == ["CVE-2016-2402"])
        // The same pins on the cleaned chain: refused after the handshake, as OkHttp does.
        let cleaned = try Matrix.check(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#)
        let refused = try #require(cleaned.results.first { $0.scenario == "stuff" && $0.deviceTrustsProxyCA == true })
        #expect(refused.status == .pass && refused.refusedAt == .afterHandshake)
        #expect(refused.proxyObserved == "closed-after-handshake-without-request")
    }

    @Test func pinningTheMisissuingRootDoesNotStopItsMisissuance() throws {
        // Two public roots pinned, as an app that allows either of its CAs: one of them misissues.
        let report = try Matrix.check(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:root", "world:misissuer"]}}"#)
        #expect(Matrix.failures(report) == Matrix.both("misissued"), "\(Matrix.dump(report))")
    }

    @Test func publicKeyModeWithInvalidCertificatesAllowedFallsToFakeParents() throws {
        let report = try Matrix.check(#"{"family": "afnetworking", "SSLPinningMode": "publicKey", "allowInvalidCertificates": true, "pinnedCertificates": ["world:leaf"]}"#)
        #expect(Matrix.failures(report) == Matrix.both("fake-parent"), "\(Matrix.dump(report))")
        for row in report.results where row.scenario == "fake-parent" {
            #expect(row.modelDependent, "\(row.reason)")
            #expect(row.weaknesses.contains("publicKey mode without re-validation"))
        }
        #expect(!report.results.contains { $0.scenario == "direct" && $0.modelDependent })
        #expect(TableReport.text(report).contains("(model-dependent)"))
    }

    @Test func refusalTimingFollowsTheLibrary() throws {
        let report = try Matrix.check(#"{"family": "curl", "pinnedpubkey": "world:leaf"}"#, deviceTrust: .yes)
        let forge = try #require(report.results.first { $0.scenario == "forge" })
        // curl verifies the peer in the handshake (the proxy CA is trusted here) and compares its pin right after.
        #expect(forge.refusedAt == .afterHandshake && forge.proxyObserved == "closed-after-handshake-without-request")
        let selfSigned = try #require(report.results.first { $0.scenario == "self-signed" })
        #expect(selfSigned.refusedAt == .handshake && selfSigned.proxyObserved?.hasPrefix("client-alert") == true)
        let passthrough = try #require(report.results.first { $0.scenario == "passthrough" })
        #expect(passthrough.actual == "ACCEPT" && passthrough.originReceivedRequest && passthrough.proxyObserved == "passthrough")
    }
}
