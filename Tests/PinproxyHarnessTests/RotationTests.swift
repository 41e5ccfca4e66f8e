import Foundation
@testable import PinproxyHarness
import PinproxyTestSupport
import Testing

/// The lessons of pin rotation, family by family: each policy refuses exactly the
/// legitimate changes its pins cannot follow (OUTAGE), directly and through `passthrough`,
/// and survives the others.
// Serialized: each case runs a harness, blocking a thread of the shared test pool; one at a time leaves the other to the rest of the suite.
@Suite(.serialized) struct RotationTests {
    /// Every rotation, in row order.
    static let all = Rotation.names

    /// Checks `text` with the rotation rows only and returns the report.
    static func rotations(_ text: String, name: String = "policy.json") throws -> CheckReport {
        let report = try Matrix.check(text, name: name, kinds: .rotations)
        #expect(report.results.count == 2 * all.count && report.results.allSatisfy { $0.kind == .rotation }, "\(Matrix.dump(report))")
        #expect(report.errors == 0 && report.failed == 0, "\(Matrix.dump(report))")
        return report
    }

    static func nsc(_ pins: [String]) -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <network-security-config><domain-config><domain>api.example.com</domain><pin-set>\
        \(pins.map { "<pin digest=\"SHA-256\">\($0)</pin>" }.joined())</pin-set></domain-config></network-security-config>
        """
    }

    static func trustKit(_ pins: [String]) -> String {
        #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": [\#(pins.map { "\"\($0)\"" }.joined(separator: ", "))]}}}"#
    }

    /// A pin no certificate of the world has: TrustKit's mandatory second pin.
    static let unrelatedPin = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

    /// The policies of every family that can pin `pins` (public keys), by name.
    static func keyPolicies(_ pins: [String], curl: Bool) -> [(String, String)] {
        let list = pins.map { "\"\($0)\"" }.joined(separator: ", ")
        var policies = [
            ("afnetworking.json", #"{"family": "afnetworking", "SSLPinningMode": "publicKey", "pinnedCertificates": [\#(list)]}"#),
            ("alamofire.json", #"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "PublicKeysTrustEvaluator", "keys": [\#(list)]}}}"#),
            ("okhttp.json", #"{"family": "okhttp", "certificatePinner": {"api.example.com": [\#(list)]}}"#),
            ("trustkit.json", trustKit(pins.count > 1 ? pins : pins + [unrelatedPin])),
            ("nsc.xml", nsc(pins)),
        ]
        if curl { policies.append(("curl.json", #"{"family": "curl", "pinnedpubkey": "\#(pins.joined(separator: ";"))"}"#)) }
        return policies
    }

    @Test(arguments: keyPolicies(["world:leaf"], curl: true))
    func leafKeyPinBreaksOnReKeyOnly(name: String, policy: String) throws {
        let report = try Self.rotations(policy, name: name)
        #expect(Matrix.outages(report) == Matrix.routes(["re-key"]), "\(name)\n\(Matrix.dump(report))")
        let rekey = try #require(report.results.first { $0.scenario == "re-key" })
        #expect(rekey.reason.contains("OUTAGE") && rekey.reason.contains("next leaf key"), "\(rekey.reason)")
    }

    @Test(arguments: keyPolicies(["world:intermediate"], curl: false))
    func intermediatePinBreaksOnANewIntermediate(name: String, policy: String) throws {
        let report = try Self.rotations(policy, name: name)
        #expect(Matrix.outages(report) == Matrix.routes(["new-intermediate", "root-migration", "root-migration-new-store", "ca-switch"]),
                "\(name)\n\(Matrix.dump(report))")
        let row = try #require(report.results.first { $0.scenario == "new-intermediate" })
        #expect(row.reason.contains("world:next-intermediate"), "\(row.reason)")
        #expect(row.reason.contains("; broken: the pinned key of world:intermediate; fix: "), "\(row.reason)")
    }

    @Test(arguments: keyPolicies(["world:intermediate", "world:next-intermediate"], curl: false))
    func aBackupPinForTheNextIntermediateSurvivesIt(name: String, policy: String) throws {
        let report = try Self.rotations(policy, name: name)
        #expect(Matrix.outages(report) == Matrix.routes(["root-migration", "root-migration-new-store", "ca-switch"]),
                "\(name)\n\(Matrix.dump(report))")
    }

    /// A root-key pin survives renewal, re-key, a new intermediate and a re-issued one (and a
    /// migration for a device that still trusts the old root, through the cross-signature);
    /// it breaks when the service changes CA, and on a device that trusts only the new root.
    @Test(arguments: keyPolicies(["world:root"], curl: false))
    func rootKeyPinBreaksOnACASwitch(name: String, policy: String) throws {
        let report = try Self.rotations(policy, name: name)
        #expect(Matrix.outages(report) == Matrix.routes(["root-migration-new-store", "ca-switch"]), "\(name)\n\(Matrix.dump(report))")
        let row = try #require(report.results.first { $0.scenario == "ca-switch" })
        #expect(row.reason.contains("world:second-ca"), "\(row.reason)")
    }

    /// The old root as the app's only anchor: the app's own store does not change with the
    /// device's, so the cross-signature carries it through both migrations; a CA switch breaks it.
    @Test func customAnchorOnTheRootBreaksOnACASwitchOnly() throws {
        let report = try Self.rotations(#"{"family": "custom-anchors", "anchorCertificates": ["world:root"]}"#)
        #expect(Matrix.outages(report) == Matrix.routes(["ca-switch"]), "\(Matrix.dump(report))")
    }

    /// Certificate pinning of the leaf breaks on every renewal (and on a re-key); the key-pinning
    /// families cannot pin a certificate.
    @Test(arguments: [
        ("afnetworking.json", #"{"family": "afnetworking", "SSLPinningMode": "certificate", "pinnedCertificates": ["world:leaf"]}"#),
        ("alamofire.json", #"{"family": "alamofire", "evaluators": {"api.example.com": {"type": "PinnedCertificatesTrustEvaluator", "certificates": ["world:leaf"]}}}"#),
    ])
    func leafCertificatePinBreaksOnRenewal(name: String, policy: String) throws {
        let report = try Self.rotations(policy, name: name)
        #expect(Matrix.outages(report).isSuperset(of: Matrix.routes(["renewal", "re-key"])), "\(name)\n\(Matrix.dump(report))")
        #expect(!Matrix.outages(report).contains("intermediate-reissue/direct"), "the leaf is unchanged there\n\(Matrix.dump(report))")
        // Every new leaf certificate breaks the pin, whatever else changed: the fix is the
        // certificate mode's, never the rotation's advice for key pins.
        for scenario in ["renewal", "new-intermediate", "ca-switch"] {
            let row = try #require(report.results.first { $0.scenario == scenario })
            #expect(row.reason.contains("broken: the pinned certificate world:leaf; fix: certificate mode pins one certificate: every renewal breaks it; pin its public key"),
                    "\(name) \(scenario): \(row.reason)")
            #expect(!row.reason.contains("backup pin (world:"), "\(name) \(scenario): \(row.reason)")
        }
    }

    /// No pinning survives every rotation: the system store trusts both CAs and both roots.
    @Test func noPinningSurvivesEveryRotation() throws {
        let report = try Self.rotations(#"{"family": "okhttp", "certificatePinner": {}}"#)
        #expect(report.outages == 0 && report.passed == report.results.count, "\(Matrix.dump(report))")
    }
}
