import Foundation

/// The report as JUnit XML for CI: one `testsuite` per kind of row (the attacks, and the
/// rotations when they ran), one `testcase` per scenario; a FAIL row carries a `failure`,
/// an ERROR row an `error` and a SKIPPED row a `skipped` (counted in the suite's `skipped`),
/// each with the reason. An OUTAGE row carries a `failure` only when the run fails on
/// outages (`--fail-on-outage`); otherwise it passes with its reason in `system-out`, as the
/// exit status does. Every value is escaped (see ``XMLWriterElement``).
public enum JUnitReport {
    public static func data(_ report: CheckReport) -> Data {
        let time = String(format: "%.3f", report.elapsedSeconds)
        let failing = report.results.filter { isFailure($0, report) }.count
        var root = XMLWriterElement("testsuites", [("name", "pinproxy check"), ("tests", "\(report.results.count)"), ("failures", "\(failing)"),
                                                   ("errors", "\(report.errors)"), ("skipped", "\(report.skipped)"), ("time", time)])
        let attacks = report.results.filter { $0.kind == .attack }
        let rotations = report.results.filter { $0.kind == .rotation }
        if !attacks.isEmpty || rotations.isEmpty {
            root.children.append(suite(attacks, of: report, kind: .attack, name: "pinproxy check \(report.policy) (\(report.host))",
                                       classname: "pinproxy.check.\(report.family)"))
        }
        if !rotations.isEmpty {
            root.children.append(suite(rotations, of: report, kind: .rotation, name: "pinproxy check \(report.policy) (\(report.host)): rotations",
                                       classname: "pinproxy.check.\(report.family).rotation"))
        }
        return Data(root.document().utf8)
    }

    /// Whether `result` fails CI: a FAIL, or an OUTAGE when the run fails on outages.
    private static func isFailure(_ result: ScenarioResult, _ report: CheckReport) -> Bool {
        result.status == .fail || (result.status == .outage && report.failsOnOutage)
    }

    /// `kind`: the rows' kind, whose closing line (what failed and what it means) is the suite's `summary` property.
    private static func suite(_ results: [ScenarioResult], of report: CheckReport, kind: ScenarioKind, name: String, classname: String) -> XMLWriterElement {
        let seconds = results.map(\.milliseconds).reduce(0, +) / 1000
        let failures = results.filter { isFailure($0, report) }.count
        let errors = results.filter { $0.status == .error }.count
        let skipped = results.filter { $0.status == .skipped }.count
        var suite = XMLWriterElement("testsuite", [("name", name), ("tests", "\(results.count)"), ("failures", "\(failures)"),
                                                   ("errors", "\(errors)"), ("skipped", "\(skipped)"), ("time", String(format: "%.3f", seconds))])
        var properties = XMLWriterElement("properties")
        for (key, value) in [("policy", report.policy), ("family", report.family), ("profile", report.profile),
                             ("host", report.host), ("proxy", report.proxy), ("client", report.client),
                             ("http2", report.http2 ? "on" : "off")] + (report.realLibrary.map { [("realLibrary", $0)] } ?? [])
                             + (report.kindSummary(kind).map { [("summary", $0)] } ?? []) {
            properties.children.append(XMLWriterElement("property", [("name", key), ("value", value)]))
        }
        suite.children.append(properties)
        for result in results {
            var testcase = XMLWriterElement("testcase", [("classname", classname), ("name", result.title),
                                                         ("time", String(format: "%.3f", result.milliseconds / 1000))])
            let reason = TableReport.reason(result)
            switch result.status {
            case .pass:
                break
            case .fail where result.emulationMatchesReal == false:
                testcase.children.append(XMLWriterElement("failure", [
                    ("message", "\(CrossCheck.mismatchMark): the emulation says \(result.verdictText), the real library \(result.real?.verdictText ?? "-")"),
                    ("type", "EmulationMismatch"),
                ], text: reason))
            case .fail:
                testcase.children.append(XMLWriterElement("failure", [
                    ("message", "expected \(result.expected.rawValue), got \(result.actual)"), ("type", "PinningPolicyFailure"),
                ], text: reason))
            case .outage:
                if report.failsOnOutage {
                    testcase.children.append(XMLWriterElement("failure", [
                        ("message", "OUTAGE: the policy refuses a legitimate certificate change"), ("type", "PinningOutage"),
                    ], text: reason))
                }
            case .error:
                testcase.children.append(XMLWriterElement("error", [
                    ("message", "the harness could not judge this scenario"), ("type", "HarnessError"),
                ], text: reason))
            case .skipped:
                testcase.children.append(XMLWriterElement("skipped", [("message", reason)]))
            }
            if !isFailure(result, report) && result.status != .error && result.status != .skipped {
                let label = result.status == .outage ? "OUTAGE (\(result.actual))" : result.actual
                testcase.children.append(XMLWriterElement("system-out", text: "\(label): \(reason)"))
            }
            suite.children.append(testcase)
        }
        let notes = report.notes + (report.timeline.map { ["timeline: \($0)"] } ?? [])
        if !notes.isEmpty {
            suite.children.append(XMLWriterElement("system-out", text: notes.joined(separator: "\n")))
        }
        return suite
    }
}
