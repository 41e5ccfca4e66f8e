import ArgumentParser
import Foundation
import PinproxyCertificates

/// The `pinproxy` command: a TLS-intercepting test proxy and pinning harness.
@main
struct Pinproxy: ParsableCommand {
    /// Exit status for usage and input errors, for every command. ArgumentParser
    /// would use 64 for a bad flag; pinproxy promises 2 (1 is `verify`'s REJECT).
    static let usageErrorStatus: Int32 = 2

    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as CLIError {
            // Library and input errors: one plain line, no "Error:" prefix.
            printError(error.message)
            exit(withError: ExitCode(usageErrorStatus))
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                printError(fullMessage(for: error))
                exit(withError: ExitCode(usageErrorStatus))
            }
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "pinproxy",
        abstract: "TLS-intercepting test proxy and certificate-pinning harness.",
        discussion: """
            pinproxy forges a leaf certificate for every host a client asks for, signed by its own \
            testing CA, and shows whether a client's certificate pinning rejects the forged chain.
            """,
        subcommands: [
            CACommand.self, ForgeCommand.self, ServeCommand.self,
            VerifyCommand.self, PinCommand.self, CheckCommand.self, DemoCommand.self, BenchCommand.self,
        ]
    )
}

/// Options shared by every command that uses the CA directory.
struct CADirectoryOptions: ParsableArguments {
    @Option(name: [.customLong("dir"), .customLong("ca-dir")],
            help: ArgumentHelp("CA directory (default: $\(CADirectory.environmentVariable) or ./certs).", valueName: "dir"))
    var directory: String?

    var caDirectory: CADirectory { CADirectory.resolve(directory) }
}

/// An error reported as one clear line on stderr, with exit status 2.
struct CLIError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

extension ParsableCommand {
    /// Runs `body`, reporting a ``PinproxyError`` as a one-line message (never a stack trace).
    func reportingErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PinproxyError {
            throw CLIError("pinproxy: \(error)")
        }
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
