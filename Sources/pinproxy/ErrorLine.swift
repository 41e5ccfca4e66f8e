import ArgumentParser
import Foundation

/// How every pinproxy command reports a failure: one line on standard error,
/// `pinproxy: error: <message>`, then exit status 2.
///
/// Usage errors that the argument parser finds (an unknown flag, a missing or
/// malformed value, a value `validate()` refuses) get the same one line, with
/// the command's `--help` named at its end instead of the parser's usage block.
enum ErrorLine {
    static let prefix = "pinproxy: error: "

    /// The line for `message`. Control characters are shown as `\xNN`, as
    /// host-name errors show them: a file or host name taken from the command
    /// line must neither split the line nor drive the terminal.
    static func render(_ message: String) -> String {
        var line = prefix
        for scalar in message.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                let hex = String(scalar.value, radix: 16)
                line += "\\x" + String(repeating: "0", count: max(0, 2 - hex.count)) + hex
            } else {
                line.unicodeScalars.append(scalar)
            }
        }
        return line
    }

    /// The line for an error the argument parser threw while parsing `arguments`.
    static func usage(_ error: any Error, arguments: [String]) -> String {
        // A mistyped command first: the options after it belong to the command meant.
        if let unknown = UnknownOption.subcommandMessage(in: arguments) {
            return render(unknown + " (see '\(commandPath(arguments).joined(separator: " ")) --help')")
        }
        // An unknown option first: the parser would name a missing required one instead.
        if let unknown = UnknownOption.message(in: arguments) {
            return render(unknown + " (see '\(commandPath(arguments).joined(separator: " ")) --help')")
        }
        if let negative = UnknownOption.negativeValueMessage(in: arguments) {
            return render(negative + " (see '\(commandPath(arguments).joined(separator: " ")) --help')")
        }
        // The parser's message may go on with "Help:" lines describing the
        // option; the --help pointer replaces them.
        let message = Pinproxy.message(for: error)
            .split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("Help:") }
            .joined(separator: " ")
        return render(message + " (see '\(commandPath(arguments).joined(separator: " ")) --help')")
    }

    /// The names of the command `arguments` select, as far as they name one
    /// (`["pinproxy", "ca", "init"]`).
    static func commandPath(_ arguments: [String]) -> [String] {
        selectedCommand(arguments).path
    }

    /// The names of the command `arguments` select and its type.
    static func selectedCommand(_ arguments: [String]) -> (path: [String], command: any ParsableCommand.Type) {
        var path = [Pinproxy._commandName]
        var command: any ParsableCommand.Type = Pinproxy.self
        for argument in arguments {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { break }
            path.append(argument)
            command = next
        }
        return (path, command)
    }
}
