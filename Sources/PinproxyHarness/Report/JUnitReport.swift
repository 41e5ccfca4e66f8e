import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The report as JUnit XML for CI: one `testsuite` per kind of row (the attacks, and the
/// rotations when they ran), one `testcase` per scenario; a FAIL row carries a `failure`,
/// an ERROR row an `error` and a SKIPPED row a `skipped` (counted in the suite's `skipped`),
/// each with the reason. An OUTAGE row carries a `failure` only when the run fails on
/// outages (`--fail-on-outage`); otherwise it passes with its reason in `system-out`, as the
/// exit status does. Built with Foundation's XMLDocument, which escapes every value.
public enum JUnitReport {
    public static func data(_ report: CheckReport) -> Data {
        let time = String(format: "%.3f", report.elapsedSeconds)
        let root = XMLElement(name: "testsuites")
        let failing = report.results.filter { isFailure($0, report) }.count
        for (key, value) in [("name", "pinproxy check"), ("tests", "\(report.results.count)"), ("failures", "\(failing)"),
                             ("errors", "\(report.errors)"), ("skipped", "\(report.skipped)"), ("time", time)] {
            root.addAttribute(attribute(key, value))
        }
        let attacks = report.results.filter { $0.kind == .attack }
        let rotations = report.results.filter { $0.kind == .rotation }
        if !attacks.isEmpty || rotations.isEmpty {
            root.addChild(suite(attacks, of: report, name: "pinproxy check \(report.policy) (\(report.host))", classname: "pinproxy.check.\(report.family)"))
        }
        if !rotations.isEmpty {
            root.addChild(suite(rotations, of: report, name: "pinproxy check \(report.policy) (\(report.host)): rotations",
                                classname: "pinproxy.check.\(report.family).rotation"))
        }
        let document = XMLDocument(rootElement: root)
        document.version = "1.0"
        document.characterEncoding = "UTF-8"
        return document.xmlData(options: [.nodePrettyPrint])
    }

    /// Whether `result` fails CI: a FAIL, or an OUTAGE when the run fails on outages.
    private static func isFailure(_ result: ScenarioResult, _ report: CheckReport) -> Bool {
        result.status == .fail || (result.status == .outage && report.failsOnOutage)
    }

    private static func suite(_ results: [ScenarioResult], of report: CheckReport, name: String, classname: String) -> XMLElement {
        let suite = XMLElement(name: "testsuite")
        let seconds = results.map(\.milliseconds).reduce(0, +) / 1000
        let failures = results.filter { isFailure($0, report) }.count
        let errors = results.filter { $0.status == .error }.count
        let skipped = results.filter { $0.status == .skipped }.count
        for (key, value) in [("name", name), ("tests", "\(results.count)"), ("failures", "\(failures)"),
                             ("errors", "\(errors)"), ("skipped", "\(skipped)"), ("time", String(format: "%.3f", seconds))] {
            suite.addAttribute(attribute(key, value))
        }
        let properties = XMLElement(name: "properties")
        for (key, value) in [("policy", report.policy), ("family", report.family), ("profile", report.profile),
                             ("host", report.host), ("proxy", report.proxy), ("client", report.client),
                             ("http2", report.http2 ? "on" : "off")] + (report.realLibrary.map { [("realLibrary", $0)] } ?? []) {
            let property = XMLElement(name: "property")
            property.addAttribute(attribute("name", key))
            property.addAttribute(attribute("value", value))
            properties.addChild(property)
        }
        suite.addChild(properties)
        for result in results {
            let testcase = XMLElement(name: "testcase")
            testcase.addAttribute(attribute("classname", classname))
            testcase.addAttribute(attribute("name", result.title))
            testcase.addAttribute(attribute("time", String(format: "%.3f", result.milliseconds / 1000)))
            let reason = TableReport.reason(result)
            switch result.status {
            case .pass:
                break
            case .fail where result.emulationMatchesReal == false:
                let failure = XMLElement(name: "failure", stringValue: reason)
                failure.addAttribute(attribute("message", "\(CrossCheck.mismatchMark): the emulation says \(result.verdictText), the real library \(result.real?.verdictText ?? "-")"))
                failure.addAttribute(attribute("type", "EmulationMismatch"))
                testcase.addChild(failure)
            case .fail:
                let failure = XMLElement(name: "failure", stringValue: reason)
                failure.addAttribute(attribute("message", "expected \(result.expected.rawValue), got \(result.actual)"))
                failure.addAttribute(attribute("type", "PinningPolicyFailure"))
                testcase.addChild(failure)
            case .outage:
                if report.failsOnOutage {
                    let failure = XMLElement(name: "failure", stringValue: reason)
                    failure.addAttribute(attribute("message", "OUTAGE: the policy refuses a legitimate certificate change"))
                    failure.addAttribute(attribute("type", "PinningOutage"))
                    testcase.addChild(failure)
                }
            case .error:
                let error = XMLElement(name: "error", stringValue: reason)
                error.addAttribute(attribute("message", "the harness could not judge this scenario"))
                error.addAttribute(attribute("type", "HarnessError"))
                testcase.addChild(error)
            case .skipped:
                let skipped = XMLElement(name: "skipped")
                skipped.addAttribute(attribute("message", reason))
                testcase.addChild(skipped)
            }
            if !isFailure(result, report) && result.status != .error && result.status != .skipped {
                let label = result.status == .outage ? "OUTAGE (\(result.actual))" : result.actual
                testcase.addChild(XMLElement(name: "system-out", stringValue: "\(label): \(reason)"))
            }
            suite.addChild(testcase)
        }
        let notes = report.notes + (report.timeline.map { ["timeline: \($0)"] } ?? [])
        if !notes.isEmpty {
            suite.addChild(XMLElement(name: "system-out", stringValue: notes.joined(separator: "\n")))
        }
        return suite
    }

    private static func attribute(_ name: String, _ value: String) -> XMLNode {
        XMLNode.attribute(withName: name, stringValue: value) as! XMLNode
    }
}
