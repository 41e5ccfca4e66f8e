import Foundation
import PinproxyTestSupport
import Testing

// The README's library example, compiled and run as it is printed there;
// readmeShowsThisExample keeps the two texts identical.
// README example begin
import PinproxyHarness
import Testing

@Test func ourPinningHoldsAgainstEveryAttack() throws {
    let harness = try Harness.start(host: "api.example.com")
    defer { harness.stop() }
    let policy = try harness.loadPolicy(contentsOf: "docs/examples/okhttp.json")
    let report = try harness.check(policy)
    #expect(report.failed == 0 && report.errors == 0, "\(TableReport.text(report))")
}
// README example end

@Test func readmeShowsThisExample() throws {
    let readme = try String(contentsOfFile: packageRoot + "/README.md", encoding: .utf8)
    let source = try String(contentsOfFile: #filePath, encoding: .utf8)
    let begin = "// README example begin\n", end = "// README example end"
    let example = try #require(source.components(separatedBy: begin).last?.components(separatedBy: end).first)
    #expect(example.split(separator: "\n", omittingEmptySubsequences: false).dropLast().count == 10, "ten lines")
    #expect(readme.contains("```swift\n" + example + "```"), "README.md must show exactly the example compiled here")
}
