import Foundation
@testable import PinproxyHarness
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// The closing findings and the table's gists, from real matrices: what a reader concludes
/// from them must be what the policy does.
@Suite(.timeLimit(.minutes(10)))
struct ReportFindingsTests {
    static let stuffFlaw = AttackCatalog.standard.strategy(for: .stuff)!.catches

    /// A policy without pins accepts `stuff` because it accepts the forged chain inside it: the
    /// finding says so, and never blames pins checked on the chain as sent.
    @Test func stuffAcceptedWithForgeIsForgesFlaw() throws {
        let report = try Matrix.check(#"{"family":"afnetworking","SSLPinningMode":"none"}"#)
        #expect(Matrix.failures(report).isSuperset(of: ["forge/yes", "stuff/yes"]), "\(Matrix.dump(report))")
        let lines = ReportFindings.lines(report)
        let stuff = try #require(lines.first { $0.hasPrefix("  stuff (") }, "\(lines)")
        #expect(!stuff.contains(Self.stuffFlaw) && stuff.contains("forge's flaw"), "\(stuff)")
        #expect(!lines.joined().contains("CVE-2016-2402"), "\(lines)")
    }

    /// `stuff` carries `forge`'s chain: it is forge's flaw only where forge was accepted too, on
    /// the same device (proxy CA installed or not), else stuff's own.
    @Test func stuffIsForgesFlawOnlyOnTheDeviceWhereForgeWasAccepted() throws {
        var report = try Matrix.check(#"{"family":"afnetworking","SSLPinningMode":"none"}"#)
        func index(_ scenario: String, _ trusts: Bool) throws -> Int {
            try #require(report.results.firstIndex { $0.scenario == scenario && $0.deviceTrustsProxyCA == trusts }, "\(scenario)/\(trusts)")
        }
        // forge accepted with the proxy CA installed, refused without it; stuff accepted without it.
        let forgeNo = try index("forge", false), stuffNo = try index("stuff", false), stuffYes = try index("stuff", true)
        #expect(report.results[try index("forge", true)].status == .fail, "\(Matrix.dump(report))")
        report.results[forgeNo].status = .pass
        report.results[forgeNo].actual = "REJECT"
        report.results[stuffNo].status = .fail
        report.results[stuffNo].actual = "ACCEPT"
        report.results[stuffYes].status = .pass
        report.results[stuffYes].actual = "REJECT"
        let lines = ReportFindings.lines(report)
        let stuff = try #require(lines.first { $0.hasPrefix("  stuff (") }, "\(lines)")
        #expect(stuff.hasPrefix("  stuff (proxy CA not installed): ") && stuff.contains(Self.stuffFlaw) && !stuff.contains("forge's flaw"), "\(stuff)")
    }

    /// TrustKit with TSKEnforcePinning off lets a forged chain through and reports it: the row
    /// says REPORT-ONLY, not ACCEPT, and fails all the same.
    @Test func aReportedButAllowedForgeIsReportOnly() throws {
        let report = try Matrix.check(#"{"family":"trustkit","TSKPinnedDomains":{"api.example.com":{"TSKPublicKeyHashes":["world:leaf","world:intermediate"],"TSKEnforcePinning":false}}}"#)
        let forge = try #require(report.results.first { $0.scenario == "forge" && $0.deviceTrustsProxyCA == true }, "\(Matrix.dump(report))")
        #expect(forge.actual == "REPORT-ONLY" && forge.status == .fail, "\(Matrix.dump(report))")
        let genuine = try #require(report.results.first { $0.scenario == "direct" && $0.deviceTrustsProxyCA == true })
        #expect(genuine.actual == "ACCEPT" && genuine.status == .pass, "\(Matrix.dump(report))")
    }

    /// An interrupted check (fewer rows than planned) never closes with an all-clear line.
    @Test func anInterruptedCheckGetsNoAllClearLine() throws {
        var report = try Matrix.check(#"{"family":"okhttp","certificatePinner":{"api.example.com":["world:leaf","world:intermediate"]}}"#)
        #expect(report.failed == 0 && report.errors == 0, "\(Matrix.dump(report))")
        let allClear = ReportFindings.allClear(report)
        #expect(ReportFindings.lines(report).contains(allClear))
        report.plannedScenarios = report.results.count + 4
        #expect(!ReportFindings.lines(report).contains(allClear), "\(ReportFindings.lines(report))")
        report.results = report.results.filter { $0.expected == .accept }
        #expect(!ReportFindings.lines(report).contains { $0.hasPrefix("The genuine server was accepted") }, "\(ReportFindings.lines(report))")
    }

    /// OkHttp before the fix refuses `forge` and accepts `stuff`: that is CVE-2016-2402.
    @Test func stuffAcceptedAloneIsPinsCheckedOnThePresentedChain() throws {
        let policy = try String(contentsOfFile: packageRoot + "/docs/examples/okhttp-before-cve-2016-2402.json", encoding: .utf8)
        let report = try Matrix.check(policy)
        #expect(!Matrix.failures(report).contains("forge/yes") && Matrix.failures(report).contains("stuff/yes"), "\(Matrix.dump(report))")
        let lines = ReportFindings.lines(report)
        #expect(lines.contains("  stuff (proxy CA installed): \(Self.stuffFlaw)"), "\(lines)")
    }

    /// Android's pin-set names bare base64 pins: the gist cuts them as it cuts `sha256/` ones, so
    /// the genuine server's rows say which certificate matched.
    @Test func bareBase64PinsAreCutInTheGist() throws {
        let policy = try String(contentsOfFile: packageRoot + "/docs/examples/network_security_config.xml", encoding: .utf8)
        let report = try Matrix.check(policy, name: "network_security_config.xml")
        let table = TableReport.text(report).split(separator: "\n").map(String.init)
        let genuine = table.filter { $0.hasPrefix("direct ") || $0.hasPrefix("passthrough ") }
        #expect(genuine.count == 4, "\(table)")
        for row in genuine {
            #expect(row.contains("… matched #") && row.count <= TableReport.width, "\(row)")
            #expect(row.range(of: #"[A-Za-z0-9+/]{40}"#, options: .regularExpression) == nil, "\(row)")
        }
    }
}
