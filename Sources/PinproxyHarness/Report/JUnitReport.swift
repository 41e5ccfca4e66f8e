import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The report as JUnit XML for CI: one `testcase` per scenario; a FAIL row
/// carries a `failure`, an ERROR row an `error` and a SKIPPED row a `skipped`
/// (counted in the suite's `skipped`), each with the reason.
/// Built with Foundation's XMLDocument, which escapes every value.
public enum JUnitReport {
    public static func data(_ report: CheckReport) -> Data {
        let suite = XMLElement(name: "testsuite")
        let name = "pinproxy check \(report.policy) (\(report.host))"
        let time = String(format: "%.3f", report.elapsedSeconds)
        for (key, value) in [("name", name), ("tests", "\(report.results.count)"), ("failures", "\(report.failed)"),
                             ("errors", "\(report.errors)"), ("skipped", "\(report.skipped)"), ("time", time)] {
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
        for result in report.results {
            let testcase = XMLElement(name: "testcase")
            testcase.addAttribute(attribute("classname", "pinproxy.check.\(report.family)"))
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
            if result.status == .pass {
                testcase.addChild(XMLElement(name: "system-out", stringValue: "\(result.actual): \(reason)"))
            }
            suite.addChild(testcase)
        }
        if !report.notes.isEmpty {
            suite.addChild(XMLElement(name: "system-out", stringValue: report.notes.joined(separator: "\n")))
        }
        let root = XMLElement(name: "testsuites")
        for (key, value) in [("name", "pinproxy check"), ("tests", "\(report.results.count)"), ("failures", "\(report.failed)"),
                             ("errors", "\(report.errors)"), ("time", time)] {
            root.addAttribute(attribute(key, value))
        }
        root.addChild(suite)
        let document = XMLDocument(rootElement: root)
        document.version = "1.0"
        document.characterEncoding = "UTF-8"
        return document.xmlData(options: [.nodePrettyPrint])
    }

    private static func attribute(_ name: String, _ value: String) -> XMLNode {
        XMLNode.attribute(withName: name, stringValue: value) as! XMLNode
    }
}
