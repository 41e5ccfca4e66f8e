import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyBase
@testable import PinproxyHarness
import PinproxyTestSupport
import Testing

/// Rows carry their kind in every format: the rotations in a block (table, Markdown) or a
/// test suite (JUnit) of their own, `kind` and `route` in JSON; outages fail only when asked.
@Suite(.serialized) struct RotationReportTests {
    /// Every attack refused, and OUTAGE rows: an intermediate pin meeting a new intermediate.
    static func report() throws -> CheckReport {
        try Matrix.check(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:intermediate"]}}"#, kinds: .all)
    }

    @Test func theTableShowsTheRotationsInABlockOfTheirOwnWithASummaryPerKind() throws {
        let report = try Self.report()
        #expect(report.failed == 0 && report.errors == 0 && report.outages == 8, "\(Matrix.dump(report))")
        #expect(report.exitStatus == 0)
        let lines = TableReport.text(report).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let attackHeader = try #require(lines.firstIndex { $0.hasPrefix("SCENARIO ") })
        let rotationHeader = try #require(lines.firstIndex { $0.hasPrefix("ROTATION ") })
        #expect(attackHeader < rotationHeader && lines[rotationHeader - 1].isEmpty)
        #expect(lines[(attackHeader + 1)..<(rotationHeader - 1)].count == report.results.filter { $0.kind == .attack }.count)
        #expect(lines[rotationHeader].contains("ROUTE"))
        #expect(lines.contains { $0.hasPrefix("attacks: 22 rows, every attack refused and the genuine server accepted") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("rotations: 14 rows, OUTAGE new-intermediate, root-migration, root-migration-new-store, ca-switch") && $0.contains("(--fail-on-outage makes them)") }, "\(lines)")
        #expect(lines.last?.hasPrefix("36 scenarios: 28 passed, 0 failed, 8 outages, 0 errors in ") == true, "\(lines.last ?? "")")
        #expect(TableReport.text(report, colour: true).contains("\u{1B}[35;1mOUTAGE"))
    }

    @Test func junitHasASuitePerKindAndOutagesFailOnlyWhenAsked() throws {
        var report = try Self.report()
        for failsOnOutage in [false, true] {
            report.failsOnOutage = failsOnOutage
            try XMLSerialization.exclusively {
            // The document must outlive its elements (FoundationXML frees the tree with it).
            let document = try XMLDocument(data: JUnitReport.data(report))
            let root = try #require(document.rootElement())
            let suites = root.elements(forName: "testsuite")
            #expect(suites.count == 2)
            let rotations = try #require(suites.last)
            #expect(rotations.attribute(forName: "name")?.stringValue?.hasSuffix(": rotations") == true)
            let cases = rotations.elements(forName: "testcase")
            #expect(cases.count == 14 && cases.allSatisfy { $0.attribute(forName: "classname")?.stringValue == "pinproxy.check.okhttp.rotation" })
            let failures = cases.flatMap { $0.elements(forName: "failure") }
            #expect(failures.count == (failsOnOutage ? 8 : 0))
            #expect(failures.allSatisfy { $0.attribute(forName: "type")?.stringValue == "PinningOutage" })
            #expect(root.attribute(forName: "failures")?.stringValue == (failsOnOutage ? "8" : "0"))
            #expect(rotations.attribute(forName: "failures")?.stringValue == (failsOnOutage ? "8" : "0"))
            // Each suite says what failed in it and what it means.
            func summary(_ suite: XMLElement) -> String? {
                suite.elements(forName: "properties").first?.elements(forName: "property")
                    .first { $0.attribute(forName: "name")?.stringValue == "summary" }?.attribute(forName: "value")?.stringValue
            }
            #expect(summary(rotations)?.hasPrefix("rotations: 14 rows, OUTAGE new-intermediate, root-migration") == true
                    && summary(rotations)?.hasSuffix(failsOnOutage ? "--fail-on-outage fails the run" : "(--fail-on-outage makes them)") == true,
                    "\(summary(rotations) ?? "none")")
            #expect(summary(try #require(suites.first)) == "attacks: 22 rows, every attack refused and the genuine server accepted")
            let outputs = cases.flatMap { $0.elements(forName: "system-out") }.compactMap(\.stringValue)
            #expect(outputs.filter { $0.hasPrefix("OUTAGE (REJECT): ") }.count == (failsOnOutage ? 0 : 8), "\(outputs)")
            withExtendedLifetime(document) {}
            }
            #expect(report.exitStatus == (failsOnOutage ? 1 : 0))
        }
    }

    @Test func jsonAndMarkdownNameTheKind() throws {
        let report = try Self.report()
        let object = try #require(try JSONSerialization.jsonObject(with: JSONReport.data(report)) as? [String: Any])
        let rows = try #require(object["results"] as? [[String: Any]])
        #expect(object["outages"] as? Int == 8 && object["failsOnOutage"] as? Bool == false)
        let summary = try #require(object["summary"] as? [String])
        #expect(summary.count == 2 && summary[0] == "attacks: 22 rows, every attack refused and the genuine server accepted"
                && summary[1].hasPrefix("rotations: 14 rows, OUTAGE new-intermediate"), "\(summary)")
        #expect(rows.filter { $0["kind"] as? String == "rotation" }.count == 14)
        #expect(rows.filter { $0["kind"] as? String == "attack" }.allSatisfy { $0["route"] == nil })
        #expect(rows.contains { $0["scenario"] as? String == "ca-switch" && $0["route"] as? String == "passthrough" && $0["status"] as? String == "OUTAGE" })
        let markdown = MarkdownReport.text(report)
        #expect(markdown.contains("#### Rotations (legitimate certificate changes)\n\n| rotation | route | expected | actual | result | reason |"))
        #expect(markdown.split(separator: "\n").filter { $0.contains("| **OUTAGE** |") }.count == 8)
        #expect(markdown.contains("- rotations: 14 rows, OUTAGE new-intermediate"))
    }
}
