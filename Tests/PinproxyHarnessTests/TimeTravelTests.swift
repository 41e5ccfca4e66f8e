import Foundation
@testable import PinproxyHarness
import PinproxyCertificates
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `check --at`: the world issues its certificates around another date and the policy's own
/// dates apply there. Pins that expire between two dates unpin the domain: rows flip.
@Suite(.serialized) struct TimeTravelTests {
    static func date(_ text: String) -> Date {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withFullDate]
        return format.date(from: text)!.addingTimeInterval(12 * 3_600)
    }

    /// Checks the policy file `name` (written from `files`) at `instant`.
    static func check(_ files: [String: String], name: String, at instant: String, selected: [String]? = nil) throws -> CheckReport {
        let harness = try Harness.start(at: date(instant))
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        for (file, text) in files { _ = try directory.write(text, to: file) }
        return try harness.check(try harness.loadPolicy(contentsOf: directory.file(name)), named: name, selected: selected)
    }

    static func row(_ report: CheckReport, _ scenario: String, installed: Bool) -> String {
        report.results.first { $0.scenario == scenario && $0.deviceTrustsProxyCA == installed }?.actual ?? "missing"
    }

    static let trustKit = #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["world:leaf", "world:intermediate"], "TSKExpirationDate": "2027-03-01"}}}"#

    /// iOS trusts a user-installed CA once nothing pins the domain: both flip.
    @Test func trustKitPinsExpireAndTheMisissuerGetsThrough() throws {
        let before = try Self.check(["trustkit.json": Self.trustKit], name: "trustkit.json", at: "2027-02-15",
                                    selected: ["direct", "forge", "misissued"])
        let after = try Self.check(["trustkit.json": Self.trustKit], name: "trustkit.json", at: "2027-03-05",
                                   selected: ["direct", "forge", "misissued"])
        #expect(before.errors == 0 && after.errors == 0, "\(Matrix.dump(before))\n\(Matrix.dump(after))")
        for installed in [true, false] {
            #expect(Self.row(before, "misissued", installed: installed) == "REJECT", "\(Matrix.dump(before))")
            #expect(Self.row(after, "misissued", installed: installed) == "ACCEPT", "\(Matrix.dump(after))")
            #expect(Self.row(before, "forge", installed: installed) == "REJECT", "\(Matrix.dump(before))")
            #expect(Self.row(before, "direct", installed: installed) == "ACCEPT" && Self.row(after, "direct", installed: installed) == "ACCEPT")
        }
        #expect(Self.row(after, "forge", installed: true) == "ACCEPT" && Self.row(after, "forge", installed: false) == "REJECT", "\(Matrix.dump(after))")
        let misissued = try #require(after.results.first { $0.scenario == "misissued" })
        let steps = (misissued.verdict?.steps ?? []).map { "\($0.action): \($0.outcome)" }
        #expect(steps.contains { $0.contains("stopped being pinned at TSKExpirationDate 2027-03-01") }, "\(steps)")
    }

    /// `userAnchors`: the domain also trusts user-installed CAs (`<certificates src="user"/>`).
    static func nsc(sdk: Int, userAnchors: Bool = false) -> [String: String] {
        let anchors = userAnchors ? #"<trust-anchors><certificates src="system"/><certificates src="user"/></trust-anchors>"# : ""
        return [
            "nsc.xml": """
                <?xml version="1.0" encoding="utf-8"?>
                <network-security-config><domain-config><domain>api.example.com</domain>\(anchors)\
                <pin-set expiration="2027-03-01"><pin digest="SHA-256">world:leaf</pin><pin digest="SHA-256">world:intermediate</pin></pin-set>\
                </domain-config></network-security-config>
                """,
            "android.json": #"{"family": "android-nsc", "networkSecurityConfig": "nsc.xml", "targetSdkVersion": \#(sdk)}"#,
        ]
    }

    /// Android from API 24 ignores user CAs: only the misissued rows flip; below 24, or where the
    /// config trusts user anchors, the forge row with the proxy CA installed flips too.
    @Test(arguments: [(24, false), (23, false), (24, true)])
    func androidPinSetExpires(sdk: Int, userAnchors: Bool) throws {
        let files = Self.nsc(sdk: sdk, userAnchors: userAnchors)
        let before = try Self.check(files, name: "android.json", at: "2027-02-20", selected: ["direct", "forge", "misissued"])
        let after = try Self.check(files, name: "android.json", at: "2027-03-02", selected: ["direct", "forge", "misissued"])
        #expect(before.errors == 0 && after.errors == 0, "\(Matrix.dump(before))\n\(Matrix.dump(after))")
        for installed in [true, false] {
            #expect(Self.row(before, "misissued", installed: installed) == "REJECT", "\(Matrix.dump(before))")
            #expect(Self.row(after, "misissued", installed: installed) == "ACCEPT", "\(Matrix.dump(after))")
        }
        #expect(Self.row(before, "forge", installed: true) == "REJECT")
        #expect(Self.row(after, "forge", installed: true) == (sdk < 24 || userAnchors ? "ACCEPT" : "REJECT"), "\(Matrix.dump(after))")
        #expect(Self.row(after, "forge", installed: false) == "REJECT")
    }

    /// The timeline names the expiry and the rows that change on it, found by a recheck there.
    @Test func theTimelineNamesTheFirstChange() throws {
        let instant = Self.date("2027-01-10")
        let harness = try Harness.start(at: instant)
        defer { harness.stop() }
        let directory = try TemporaryDirectory()
        let path = try directory.write(Self.trustKit, to: "trustkit.json")
        let policy = try harness.loadPolicy(contentsOf: path)
        let selected = ["misissued"]
        let report = try harness.check(policy, selected: selected)
        let line = try #require(try PolicyTimeline.line(policy: policy, report: report, instant: instant, genuineLeaf: nil) { later in
            let again = try Harness.start(at: later)
            defer { again.stop() }
            return try again.check(try again.loadPolicy(contentsOf: path), selected: selected)
        })
        #expect(line.hasPrefix("TSKExpirationDate of api.example.com: 2027-03-01; first change on 2027-03-01: "), "\(line)")
        #expect(line.contains("misissued, proxy CA installed: REJECT → ACCEPT") && line.contains("misissued, proxy CA not installed: REJECT → ACCEPT"), "\(line)")
        #expect(line.hasSuffix("from then a misissuing CA can read the traffic"), "\(line)")
        // At a later instant the date has passed.
        let late = try PolicyTimeline.line(policy: policy, report: report, instant: Self.date("2027-04-01"), genuineLeaf: nil, recheck: nil)
        #expect(late == "TSKExpirationDate of api.example.com: 2027-03-01 (passed: not pinned at 2027-04-01)")
    }

    /// A user's own chain keeps its dates: checked after its leaf's notAfter, the genuine server
    /// is refused by every family — an OUTAGE that names the expiry, not a security failure.
    @Test func anExpiredGenuineLeafIsAnOutageForEveryone() throws {
        let generated = try HarnessWorld.generate(host: try HostName(validating: Matrix.host))
        defer { generated.removeFiles() }
        let directory = try TemporaryDirectory()
        let chain = try directory.write((generated.originChain + [generated.root]).map(\.pemEncoded).joined(), to: "chain.pem")
        let key = try directory.write(try generated.originKey.pemEncoded(), to: "key.pem")
        let late = generated.leaf.notAfter.addingTimeInterval(30 * 86_400)
        let policies = [
            ("okhttp.json", #"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#),
            ("afnetworking.json", #"{"family": "afnetworking"}"#),
            ("trustkit.json", #"{"family": "trustkit", "TSKPinnedDomains": {"api.example.com": {"TSKPublicKeyHashes": ["world:leaf", "world:root"]}}}"#),
            ("curl.json", #"{"family": "curl", "pinnedpubkey": "world:leaf"}"#),
        ]
        let world = try HarnessWorld.load(chainPath: chain, keyPath: key, host: nil, now: late)
        let harness = try Harness(world: world, proxy: try InProcessProxy(world: world, instant: late), instant: late)
        defer { harness.stop() }
        for (name, text) in policies {
            let path = try directory.write(text, to: name)
            let report = try harness.check(try harness.loadPolicy(contentsOf: path), named: name, selected: ["direct", "passthrough"])
            #expect(report.results.count == 4 && report.results.allSatisfy { $0.status == .outage }, "\(name)\n\(Matrix.dump(report))")
            #expect(report.results.allSatisfy { $0.reason.contains("expired on") && $0.reason.contains("renew it") }, "\(Matrix.dump(report))")
            #expect(report.exitStatus == 0 && report.outages == 4)
            var failing = report
            failing.failsOnOutage = true
            #expect(failing.exitStatus == 1)
        }
        let timeline = try PolicyTimeline.line(policy: try harness.loadPolicy(contentsOf: directory.file("okhttp.json")), report: CheckReport(
            policy: "", family: "", profile: "", host: "", client: "", proxy: "", http2: true, results: [], notes: [], elapsedSeconds: 0),
            instant: late, genuineLeaf: world.leaf, recheck: nil)
        #expect(timeline?.contains("the genuine leaf expires on") == true && timeline?.contains("(passed: every client refuses it)") == true, "\(timeline ?? "nil")")
    }

    /// A certificate is valid through its notAfter second (RFC 5280 §4.1.2.5, and the trust
    /// evaluator): the outage and the timeline call the genuine leaf expired only after it.
    @Test func theGenuineLeafIsValidThroughItsNotAfterSecond() throws {
        let rootKey = try PrivateKey.generate(.ecP256)
        let notAfter = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 30 * 86_400)
        let root = try Certificate.issue(
            .certificateAuthority(subject: DistinguishedName(commonName: "Boundary Root"), notBefore: Date().addingTimeInterval(-86_400),
                                  notAfter: notAfter.addingTimeInterval(365 * 86_400)),
            subjectKey: rootKey, signer: .selfSigned(rootKey))
        let host = try HostName(validating: "api.example.com")
        let leaf = try Certificate.issue(.serverLeaf(names: [host], notBefore: Date().addingTimeInterval(-86_400), notAfter: notAfter),
                                         subjectKey: try PrivateKey.generate(.ecP256), signer: .authority(root, rootKey))
        let policy = OkHttpPolicy(pins: [])
        func decision(at time: Date) -> Verdict.Decision {
            policy.evaluate(ServerTrust(presentedChain: [leaf], host: host, time: time, store: TrustStore(systemAnchors: [root]))).decision
        }
        #expect(decision(at: leaf.notAfter) == .accept && decision(at: leaf.notAfter.addingTimeInterval(1)) == .reject)
        #expect(ScenarioRunner.outage(rotation: nil, genuine: [leaf], at: leaf.notAfter) == nil)
        #expect(ScenarioRunner.outage(rotation: nil, genuine: [leaf], at: leaf.notAfter.addingTimeInterval(1))?.contains("expired on") == true)
        let report = CheckReport(policy: "", family: "", profile: "", host: "", client: "", proxy: "", http2: true, results: [], notes: [], elapsedSeconds: 0)
        let atTheSecond = try PolicyTimeline.line(policy: policy, report: report, instant: leaf.notAfter, genuineLeaf: leaf, recheck: nil)
        #expect(atTheSecond?.contains("(passed") == false, "\(atTheSecond ?? "nil")")
        let after = try PolicyTimeline.line(policy: policy, report: report, instant: leaf.notAfter.addingTimeInterval(1), genuineLeaf: leaf, recheck: nil)
        #expect(after?.contains("(passed: every client refuses it)") == true, "\(after ?? "nil")")
    }
}
