import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyBase
@testable import PinproxyHarness
import PinproxyProxy
import PinproxyTestSupport
import Testing

/// The four report formats say the same thing as the table.
@Suite struct ReportTests {
    @Test("a reason cut to fit ends in one ellipsis, even where the text had its own", arguments: [
        ("the pin sha256/AAAA… of the leaf matched none of the policy's pins", 21, "the pin sha256/AAAA…"),
        ("refused in the handshake... then the connection closed", 28, "refused in the handshake…"),
        ("a reason short enough", 40, "a reason short enough"),
        ("the chain was accepted by the pinner although stuffed [CVE-2016-2402]", 40, "the chain was accepted… [CVE-2016-2402]"),
    ])
    func shortenedReasons(text: String, limit: Int, expected: String) {
        let cut = TableReport.shortened(text, to: limit)
        #expect(cut == expected)
        #expect(cut.count <= limit)
        #expect(!cut.contains("……") && !cut.contains("...…"))
    }

    /// A report with failures in it: no pinning, where the forged chain is trusted.
    static func report() throws -> CheckReport {
        try Matrix.check(#"{"family": "afnetworking"}"#)
    }

    /// The gist keeps the evaluation's failure kinds, not the words of an OUTAGE after them.
    @Test func theGistOfAnOutageStopsAtTheEvaluationsList() {
        let full = "refused in the handshake (alert sent) — result: reject: curl: (60) SSL certificate problem (failed — unknown issuer: no trusted "
            + "certificate issued certificate #1 (CN=X), whose issuer is 'CN=Y') — OUTAGE: the leaf from a second CA; fix: the service changed CA: add it"
        #expect(TableReport.shortReason(full) == "in handshake: curl: (60) SSL certificate problem unknown issuer"
                || TableReport.shortReason(full).hasSuffix("unknown issuer"), "\(TableReport.shortReason(full))")
        #expect(!TableReport.shortReason(full).contains("fix"))
    }

    @Test func junitParsesAsXMLAndItsCountsMatchTheTable() throws {
        let report = try Self.report()
        #expect(report.failed > 0 && report.passed > 0)
        try XMLSerialization.exclusively {
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

    /// A report of two rows: a FAIL with a long reason that quotes XML, and a SKIPPED row.
    static func mixedReport() throws -> CheckReport {
        var report = try Self.report()
        var failing = try #require(report.results.first { $0.status == .fail })
        failing.reason = "step 3: accept: <certificates src=\"user\" overridePins=\"true\"> trusts the proxy CA & overrides the pins | "
            + String(repeating: "and then some more words of the reason ", count: 6) + "[invalid chain accepted]"
        let scenario = Scenario(profile: .misissued, deviceTrustsProxyCA: true)
        report.results = [failing, ScenarioResult.skipped(scenario, because: "the misissued profile needs a second CA (--misissuing-ca)")]
        return report
    }

    @Test func theTableFitsAHundredColumnsAndNamesEachAcceptedAttack() throws {
        let report = try Self.mixedReport()
        let failing = report.results[0]
        for verbose in [false, true] {
            let lines = TableReport.text(report, verbose: verbose).split(separator: "\n", omittingEmptySubsequences: false)
            let header = try #require(lines.firstIndex { $0.hasPrefix("SCENARIO") })
            for row in lines[header...header + 2] { #expect(row.count <= TableReport.width, "\(row.count): \(row)") }
            // The long reason is in full below the table, numbered from its row.
            #expect(lines[header + 1].hasSuffix("[1]") && lines[header + 1].contains("[invalid chain accepted]"), "\(lines[header + 1])")
            #expect(lines.contains { $0 == "[1] \(failing.title): \(TableReport.reason(failing))" }, "\(lines)")
            #expect(lines[header + 2].contains("SKIPPED") && lines[header + 2].contains("needs a second CA"), "\(lines[header + 2])")
            // The closing findings name the attack and the flaw it implies, as /profiles says it.
            let catches = try #require(AttackCatalog.standard.strategy(for: AttackProfile(failing.scenario))?.catches)
            #expect(lines.contains { $0.hasPrefix("  \(failing.scenario) (") && $0.hasSuffix("): \(catches)") }, "\(lines)")
            #expect(lines.last?.hasSuffix(" s") == true && lines.last?.contains("1 failed, 0 errors, 1 skipped") == true, "\(lines.last ?? "")")
        }
    }

    /// "every attack refused" says how many rows it leaves out, and which: a skipped row refused nothing.
    @Test func theAttackSummaryNamesItsSkippedRows() throws {
        var report = try Self.report()
        let passing = report.results.filter { $0.status == .pass }
        let skipped = [true, false].map { ScenarioResult.skipped(Scenario(profile: .misissued, deviceTrustsProxyCA: $0), because: "needs --misissuing-ca") }
        report.results = passing + skipped
        #expect(report.kindSummary(.attack) == "attacks: \(passing.count + 2) rows, every attack refused and the genuine server accepted (2 skipped: misissued)",
                "\(report.kindSummary(.attack) ?? "none")")
        report.results = passing
        #expect(report.kindSummary(.attack) == "attacks: \(passing.count) rows, every attack refused and the genuine server accepted")
        // Attacks alone: the all-clear line names them too.
        report.results = passing.filter { $0.kind == .attack } + skipped
        #expect(ReportFindings.lines(report).last?.hasSuffix("was accepted (2 skipped: misissued).") == true, "\(ReportFindings.lines(report))")
        var failing = try Self.report()
        failing.results.append(skipped[0])
        #expect(failing.kindSummary(.attack)?.hasSuffix(" (1 skipped: misissued)") == true && failing.kindSummary(.attack)?.contains("FAILED ") == true,
                "\(failing.kindSummary(.attack) ?? "none")")
    }

    @Test func markdownShowsHTMLAsText() throws {
        let text = MarkdownReport.text(try Self.mixedReport())
        #expect(text.contains("&lt;certificates src=\"user\" overridePins=\"true\"&gt; trusts the proxy CA &amp; overrides the pins \\|"), "\(text)")
        #expect(!text.contains("<certificates"), "\(text)")
    }

    /// What CI reads: the exit status (1 a policy failed, 3 only the harness could not judge),
    /// JSON's `skipped`, JUnit's root `skipped` and each case's time in seconds.
    @Test func exitStatusJSONAndJUnitCountsAreWhatCIReads() throws {
        var report = try Self.mixedReport()
        var failing = report.results[0]
        failing.milliseconds = 1_500
        report.results[0] = failing
        #expect(report.exitStatus == 1)
        var judged = failing
        judged.status = .error
        var onlyErrors = report
        onlyErrors.results = [judged, report.results[1]]
        #expect(onlyErrors.exitStatus == 3)
        var both = report
        both.results = [failing, judged]
        #expect(both.exitStatus == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONReport.data(report)) as? [String: Any])
        #expect(json["skipped"] as? Int == 1, "\(json.keys.sorted())")
        #expect(json["exitStatus"] as? Int == 1)
        try XMLSerialization.exclusively {
            let document = try XMLDocument(data: JUnitReport.data(report))
            let root = try #require(document.rootElement())
            #expect(root.attribute(forName: "skipped")?.stringValue == "1")
            let cases = root.elements(forName: "testsuite").first?.elements(forName: "testcase") ?? []
            #expect(cases.first?.attribute(forName: "time")?.stringValue == "1.500", "\(cases.first?.xmlString ?? "")")
        }
    }

    /// A report with a row of every status: pass, fail, error, skipped, and an OUTAGE row of
    /// a rotation; the rows' times in milliseconds.
    static func everyStatus() throws -> CheckReport {
        var report = try Self.report()
        var pass = try #require(report.results.first { $0.status == .pass })
        pass.milliseconds = 250
        var fail = try #require(report.results.first { $0.status == .fail })
        fail.milliseconds = 500
        var error = pass
        error.scenario = "error-row"
        error.status = .error
        error.milliseconds = 1_000
        var outage = pass
        outage.scenario = "rotate-rekey"
        outage.kind = .rotation
        outage.status = .outage
        outage.milliseconds = 125
        let skipped = ScenarioResult.skipped(Scenario(profile: .misissued, deviceTrustsProxyCA: true), because: "needs a second CA")
        report.results = [pass, fail, error, skipped, outage]
        return report
    }

    /// `name`'s attributes `tests`, `failures`, `errors`, `skipped` of `element`, in that order.
    private static func counts(_ element: XMLElement) -> [String] {
        ["tests", "failures", "errors", "skipped"].map { element.attribute(forName: $0)?.stringValue ?? "-" }
    }

    @Test func junitCountsEveryStatusAtEachLevelAndOutagesFailOnlyWhenAskedTo() throws {
        for failsOnOutage in [false, true] {
            var report = try Self.everyStatus()
            report.failsOnOutage = failsOnOutage
            try XMLSerialization.exclusively {
                let root = try #require(try XMLDocument(data: JUnitReport.data(report)).rootElement())
                #expect(Self.counts(root) == ["5", failsOnOutage ? "2" : "1", "1", "1"], "\(root.xmlString)")
                let suites = root.elements(forName: "testsuite")
                #expect(suites.count == 2, "attacks, then rotations")
                let attacks = try #require(suites.first), rotations = try #require(suites.last)
                #expect(Self.counts(attacks) == ["4", "1", "1", "1"])
                #expect(Self.counts(rotations) == ["1", failsOnOutage ? "1" : "0", "0", "0"])
                #expect(attacks.attribute(forName: "time")?.stringValue == "1.750", "the rows' times in seconds")
                let cases = attacks.elements(forName: "testcase")
                func children(_ index: Int) -> [String] { (cases[index].children ?? []).compactMap(\.name) }
                #expect(children(0) == ["system-out"] && children(1) == ["failure"] && children(2) == ["error"] && children(3) == ["skipped"],
                        "\(cases.map(\.xmlString))")
                let outage = try #require(rotations.elements(forName: "testcase").first)
                if failsOnOutage {
                    #expect(outage.elements(forName: "failure").first?.attribute(forName: "type")?.stringValue == "PinningOutage")
                    #expect(outage.elements(forName: "system-out").isEmpty)
                } else {
                    #expect(outage.elements(forName: "failure").isEmpty)
                    #expect(outage.elements(forName: "system-out").first?.stringValue?.hasPrefix("OUTAGE (") == true, "\(outage.xmlString)")
                }
            }
        }
    }

    @Test func junitOfAReportWithoutRowsStillHasItsSuite() throws {
        var report = try Self.report()
        report.results = []
        try XMLSerialization.exclusively {
            let root = try #require(try XMLDocument(data: JUnitReport.data(report)).rootElement())
            #expect(Self.counts(root) == ["0", "0", "0", "0"])
            let suites = root.elements(forName: "testsuite")
            #expect(suites.count == 1 && suites.first.map(Self.counts) == ["0", "0", "0", "0"], "\(root.xmlString)")
        }
    }

    @Test func junitCountsSkippedRowsAsSkipped() throws {
        let report = try Self.mixedReport()
        try XMLSerialization.exclusively {
        let document = try XMLDocument(data: JUnitReport.data(report))
        let suite = try #require(document.rootElement()?.elements(forName: "testsuite").first)
        #expect(suite.attribute(forName: "skipped")?.stringValue == "1")
        let skipped = suite.elements(forName: "testcase").filter { !$0.elements(forName: "skipped").isEmpty }
        #expect(skipped.count == 1)
        #expect(skipped.first?.elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue?.contains("needs a second CA") == true)
        #expect(skipped.first?.elements(forName: "failure").isEmpty == true && skipped.first?.elements(forName: "error").isEmpty == true)
        }
    }
}
