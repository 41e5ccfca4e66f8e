import Foundation
import PinproxyTestSupport
import Testing

/// The examples in `--help` are command lines a new user copies: each must name a real
/// command and only options it knows, and fit an 80-column terminal.
@Suite struct HelpExamplesTests {
    /// The `pinproxy …` lines of a help page's `Examples` block, continuation lines joined.
    static func examples(in help: String) -> [String] {
        var found: [String] = [], inBlock = false, pending = ""
        for raw in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if raw.hasPrefix("Examples") { inBlock = true; continue }
            guard inBlock else { continue }
            if line.isEmpty { inBlock = false; continue }
            // The parser wrapped a line that was too wide: its end starts at the margin.
            if !raw.hasPrefix("  ") { found.append("wrapped: " + line); continue }
            pending += line
            if pending.hasSuffix("\\") { pending = String(pending.dropLast()); continue }
            if pending.hasPrefix("pinproxy ") { found.append(pending) }
            pending = ""
        }
        return found
    }

    /// Shell words, with single quotes; a trailing `(comment)` is dropped.
    static func words(_ line: String) -> [String] {
        var words: [String] = [], current = "", quoted = false, started = false
        for character in line {
            if character == "'" { quoted.toggle(); started = true; continue }
            if character == " " && !quoted {
                if started { words.append(current) }
                current = ""; started = false
                continue
            }
            current.append(character); started = true
        }
        if started { words.append(current) }
        if let comment = words.firstIndex(where: { $0.hasPrefix("(") }) { words.removeSubrange(comment...) }
        return words
    }

    @Test func everyExampleNamesKnownCommandsAndOptions() throws {
        let dir = try TemporaryDirectory()
        var seen = 0
        for path in [[]] + (try ErrorReportingTests.commandPaths()) {
            let help = try pinproxy(path + ["--help"])
            for line in help.stdout.split(separator: "\n") where !line.hasPrefix("USAGE: ") {
                #expect(line.count <= 80, "\(path): a help line wider than 80 columns: \(line)")
            }
            // Prose of the overview starts at the margin; a run of spaces inside it is a source
            // line's indentation carried into the text (a literal joined without its `\`).
            let overview = help.stdout.components(separatedBy: "\nUSAGE: ").first ?? ""
            for line in overview.split(separator: "\n") where !line.hasPrefix(" ") {
                #expect(!line.trimmingCharacters(in: .whitespaces).contains("  "), "\(path): a run of spaces in the help's prose: \(line)")
            }
            for example in Self.examples(in: help.stdout) {
                #expect(!example.hasPrefix("wrapped: "), "\(path): an example wider than the help: \(example)")
                guard !example.hasPrefix("wrapped: ") else { continue }
                seen += 1
                let arguments = Array(Self.words(example).dropFirst())
                // The option scan stops at the first unknown option: the marker, when every other one is known.
                let r = try pinproxy(arguments + ["--zz-end"], in: dir.path)
                #expect(r.stderr.contains("unknown option '--zz-end'"), "\(example): \(r.stderr)")
                let command = (["pinproxy"] + arguments.prefix { !$0.hasPrefix("-") && !$0.contains(".") && !$0.contains("/") }).joined(separator: " ")
                #expect(r.stderr.contains("(see '\(command) --help')"), "\(example) is not the command it looks like: \(r.stderr)")
            }
        }
        #expect(seen >= 15, "examples found: \(seen)")
    }
}
