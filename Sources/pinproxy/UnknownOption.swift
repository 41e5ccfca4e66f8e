import ArgumentParser
import Foundation
import PinproxyCertificates

/// Finds an option the selected command does not know, so that a mistyped flag is reported
/// as such: the argument parser names a missing required option first, which hides the typo
/// (`check --polcy x` would say the policy is missing).
enum UnknownOption {
    /// The message for the first option in `arguments` that the command they select does not
    /// know, with the nearest known name: `unknown option '--polcy' (did you mean '--policy'?)`.
    /// Nil when every option is known.
    static func message(in arguments: [String]) -> String? {
        let (path, command) = ErrorLine.selectedCommand(arguments)
        guard let known = KnownOptions(command) else { return nil }
        var index = path.count - 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { break }
            guard let name = optionName(argument) else { continue }
            guard let takesValue = known.names[name] else {
                return "unknown option '\(name)'" + (suggestion(for: name, among: Array(known.names.keys)).map { " (did you mean '\($0)'?)" } ?? "")
            }
            // The next argument is this option's value, whatever it looks like.
            if takesValue && !argument.contains("=") { index += 1 }
        }
        return nil
    }

    /// The message for a word where a subcommand belongs that names none:
    /// `unknown command 'chek' (did you mean 'check'?)`. Nil when there is no such word.
    static func subcommandMessage(in arguments: [String]) -> String? {
        let (path, command) = ErrorLine.selectedCommand(arguments)
        let subcommands = command.configuration.subcommands.map { $0._commandName }
        guard !subcommands.isEmpty, path.count - 1 < arguments.count else { return nil }
        let word = arguments[path.count - 1]
        guard !word.hasPrefix("-"), word != "help" else { return nil }
        let nearest = subcommands.map { (name: $0, edits: distance(word, $0)) }
            .sorted { $0.edits != $1.edits ? $0.edits < $1.edits : $0.name < $1.name }.first
        let hint = nearest.flatMap { $0.edits <= max(1, min(3, word.count / 3)) ? " (did you mean '\($0.name)'?)" : nil }
        return "unknown command '\(word)'" + (hint ?? "; the commands here are \(subcommands.joined(separator: ", "))")
    }

    /// The message for an option followed by a negative number (`--days -5`) or another word
    /// that starts with a dash and names no option (`--host -a.example.com`), which the parser
    /// reads as an option and reports as a missing value.
    static func negativeValueMessage(in arguments: [String]) -> String? {
        let (path, command) = ErrorLine.selectedCommand(arguments)
        guard let known = KnownOptions(command) else { return nil }
        var index = path.count - 1
        while index + 1 < arguments.count {
            let name = arguments[index], value = arguments[index + 1]
            index += 1
            // A negative number, or a dash-led word no command knows as an option (`--host -a.test`).
            guard known.names[name] == true, value.hasPrefix("-"), value.count > 1, value != "--",
                  optionName(value).map({ known.names[$0] == nil && !value.hasPrefix("--") }) ?? true else { continue }
            return "\(name) \(value): a value that starts with '-' is read as an option; write \(name)=\(value)"
        }
        return nil
    }

    /// `--policy=x` → `--policy`; `-h` → `-h`; a value or a negative number → nil.
    static func optionName(_ argument: String) -> String? {
        guard argument.hasPrefix("-"), argument.count > 1 else { return nil }
        let second = argument[argument.index(after: argument.startIndex)]
        if second.isNumber || second == "." { return nil }
        return argument.split(separator: "=", maxSplits: 1).first.map(String.init)
    }

    /// The known name nearest to `name` when it is close enough to be a typo.
    static func suggestion(for name: String, among names: [String]) -> String? {
        let candidates = names.filter { $0.hasPrefix("--") && $0 != "--experimental-dump-help" }
        let scored: [(name: String, edits: Int)] = candidates.map { ($0, distance(name, $0)) }
        let ordered = scored.sorted { left, right in left.edits != right.edits ? left.edits < right.edits : left.name < right.name }
        guard let best = ordered.first else { return nil }
        let allowed = min(3, max(1, (name.count - 2) / 3))
        if best.edits <= allowed { return best.name }
        // A prefix or an abbreviation: `--origin` for `--origin-chain`.
        let prefixed = candidates.filter { $0.hasPrefix(name) && name.count >= 4 }
        return prefixed.count == 1 ? prefixed[0] : nil
    }

    /// Edit distance over characters (``NearestName/distance(_:_:)``).
    static func distance(_ a: String, _ b: String) -> Int { NearestName.distance(a, b) }
}

/// The option names a command accepts (`--policy`, `-h`), and whether each takes a value,
/// read from the argument parser's description of the command.
struct KnownOptions {
    var names: [String: Bool] = ["--help": false, "-h": false]

    init?(_ command: any ParsableCommand.Type) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(command._dumpHelp().utf8)) as? [String: Any],
              let info = object["command"] as? [String: Any] else { return nil }
        for argument in info["arguments"] as? [[String: Any]] ?? [] {
            let takesValue = (argument["kind"] as? String) == "option"
            for entry in argument["names"] as? [[String: Any]] ?? [] {
                guard let kind = entry["kind"] as? String, let name = entry["name"] as? String else { continue }
                names[(kind == "long" ? "--" : "-") + name] = takesValue
            }
        }
        names["--experimental-dump-help"] = false
    }
}
