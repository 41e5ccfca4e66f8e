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
