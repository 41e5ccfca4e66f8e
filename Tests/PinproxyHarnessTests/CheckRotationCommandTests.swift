import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PinproxyBase
import PinproxyTestSupport
import Testing

/// `pinproxy check --scenarios`, `--fail-on-outage` and `--at` as a user runs them.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct CheckRotationCommandTests {
    static let intermediate = packageRoot + "/docs/examples/okhttp-intermediate.json"

    @Test func outagesFailOnlyWhenAsked() throws {
        try CheckCommandTests.requireBinary()
        let directory = try TemporaryDirectory()
        let relaxed = try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "rotations"])
        #expect(relaxed.status == 0, "\(relaxed.output)")
        #expect(relaxed.stdout.contains("ROTATION ") && !relaxed.stdout.contains("SCENARIO "), "\(relaxed.stdout)")
        #expect(relaxed.stdout.contains("14 scenarios: 6 passed, 0 failed, 8 outages, 0 errors in "), "\(relaxed.stdout)")
        let strict = try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "rotations", "--fail-on-outage",
                                   "--junit", directory.file("r.xml")])
        #expect(strict.status == 1 && strict.stdout.contains("--fail-on-outage fails the run"), "\(strict.output)")
        try XMLSerialization.exclusively {
            let junit = try XMLDocument(contentsOf: URL(fileURLWithPath: directory.file("r.xml")))
            #expect(try junit.nodes(forXPath: "//failure[@type='PinningOutage']").count == 8)
        }
        // --profiles narrows both kinds; an attack row and one rotation.
        let narrowed = try pinproxy(["check", "--policy", Self.intermediate, "--profiles", "direct,new-intermediate"])
        #expect(narrowed.status == 0 && narrowed.stdout.contains("4 scenarios: 2 passed, 0 failed, 2 outages"), "\(narrowed.output)")
        let attacks = try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "attacks"])
        #expect(attacks.stdout.contains("22 scenarios: 22 passed, 0 failed, 0 errors in ") && !attacks.stdout.contains("ROTATION"), "\(attacks.output)")
    }

    @Test func atADateThePolicysOwnDatesApplyAndTheTimelineSaysWhen() throws {
        try CheckCommandTests.requireBinary()
        let policy = packageRoot + "/docs/examples/trustkit-expiring.json"
        let before = try pinproxy(["check", "--policy", policy, "--at", "2027-02-01", "--profiles", "misissued"])
        #expect(before.status == 0, "\(before.output)")
        #expect(before.stdout.contains("timeline: TSKExpirationDate of api.example.com: 2027-03-01; first change on 2027-03-01: ")
                && before.stdout.contains("misissued, proxy CA not installed: REJECT → ACCEPT"), "\(before.stdout)")
        let after = try pinproxy(["check", "--policy", policy, "--at", "2027-03-02", "--profiles", "misissued"])
        #expect(after.status == 1 && after.stdout.contains("timeline: TSKExpirationDate of api.example.com: 2027-03-01 (passed: not pinned at 2027-03-02)"), "\(after.output)")
        #expect(after.stdout.split(separator: "\n").filter { $0.hasPrefix("misissued ") && $0.contains(" ACCEPT  FAIL ") }.count == 2, "\(after.stdout)")
    }

    @Test func badValuesAreInputErrors() throws {
        try CheckCommandTests.requireBinary()
        CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "rotation"]),
                                           "--scenarios must be attacks, rotations or all, not 'rotation' (did you mean 'rotations'?)")
        CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "attack"]),
                                           "not 'attack' (did you mean 'attacks'?)")
        // Not a day: a short form, a day the calendar lacks (a lenient parser reads March 2), a year
        // past what a ten-year root can reach.
        for day in ["2027-3-1", "2027-02-30", "9990-06-01"] {
            CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--at", day]),
                                               "--at must be a day as YYYY-MM-DD from 1900-01-01 to 9989-12-31, not '\(day)'")
        }
        // --profiles naming rows of the kind --scenarios leaves out would run nothing for them.
        CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "attacks", "--profiles", "direct,re-key"]),
                                           "--profiles names 're-key', a rotation, which --scenarios attacks leaves out")
        CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--scenarios", "rotations", "--profiles", "forge"]),
                                           "--profiles names 'forge', an attack row, which --scenarios rotations leaves out")
        CheckCommandTests.expectInputError(try pinproxy(["check", "--policy", Self.intermediate, "--at", "2027-03-01",
                                                         "--proxy", "http://127.0.0.1:1", "--admin", "http://127.0.0.1:2"]),
                                           "--at needs the in-process proxy")
    }
}
