import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import PinproxyHarness
import PinproxyTestSupport
import Testing

/// The four report formats say the same thing as the table.
@Suite struct ReportTests {
    /// A report with failures in it: no pinning, where the forged chain is trusted.
    static func report() throws -> CheckReport {
        try Matrix.check(#"{"family": "afnetworking"}"#)
    }

    @Test func junitParsesAsXMLAndItsCountsMatchTheTable() throws {
        let report = try Self.report()
        #expect(report.failed > 0 && report.passed > 0)
        let document = try XMLDocument(data: JUnitReport.data(report))
        let root = try #require(document.rootElement())
        #expect(root.name == "testsuites")
        #expect(root.attribute(forName: "tests")?.stringValue == "\(report.results.count)")
        #expect(root.attribute(forName: "failures")?.stringValue == "\(report.failed)")
        #expect(root.attribute(forName: "errors")?.stringValue == "\(report.errors)")
        let suite = try #require(root.elements(forName: "testsuite").first)
        let cases = suite.elements(forName: "testcase")
        #expect(cases.count == report.results.count)
        #expect(Set(cases.compactMap { $0.attribute(forName: "name")?.stringValue }).count == cases.count, "test case names must be unique")
        let failures = cases.flatMap { $0.elements(forName: "failure") }
        #expect(failures.count == report.failed)
        #expect(cases.flatMap { $0.elements(forName: "error") }.count == report.errors)
        // Each failure carries its row's reason.
        for result in report.results where result.status == .fail {
            let element = try #require(cases.first { $0.attribute(forName: "name")?.stringValue == result.title })
            let failure = try #require(element.elements(forName: "failure").first)
            #expect(failure.stringValue == TableReport.reason(result))
            #expect(failure.attribute(forName: "message")?.stringValue == "expected REJECT, got ACCEPT")
        }
        // The table's own rows and counts agree.
        let table = TableReport.text(report)
        #expect(table.split(separator: "\n").filter { $0.contains("  FAIL  ") }.count == report.failed)
        #expect(table.contains(report.summary))
    }

    @Test func jsonCarriesEveryRowAndItsVerdict() throws {
        let report = try Self.report()
        let object = try #require(try JSONSerialization.jsonObject(with: JSONReport.data(report)) as? [String: Any])
        let rows = try #require(object["results"] as? [[String: Any]])
        #expect(rows.count == report.results.count)
        #expect(object["failed"] as? Int == report.failed)
        #expect(object["exitStatus"] as? Int == 1)
        #expect(rows.allSatisfy { $0["verdict"] is [String: Any] })
        #expect(rows.filter { $0["status"] as? String == "FAIL" }.count == report.failed)
    }

    @Test func markdownHasOneRowPerScenario() throws {
        let report = try Self.report()
        let text = MarkdownReport.text(report)
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| scenario") }
        #expect(rows.count == report.results.count)
        #expect(rows.filter { $0.contains("**FAIL**") }.count == report.failed)
        #expect(MarkdownReport.cell("a|b\nc") == "a\\|b c")
    }

    @Test func colourOnlyWhenAsked() throws {
        let report = try Self.report()
        #expect(!TableReport.text(report).contains("\u{1B}["))
        #expect(TableReport.text(report, colour: true).contains("\u{1B}[31;1mFAIL"))
    }
}
