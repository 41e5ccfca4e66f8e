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
        OpenSSLLibrary.keepUntilExit()
        let arguments = Array(CommandLine.arguments.dropFirst())
        var command: any ParsableCommand
        // `pinproxy help chek`: the parser would print the top-level help and exit 0 for a word
        // that names no command; it is the same mistake as `pinproxy chek`.
        if arguments.first == "help", let unknown = UnknownOption.subcommandMessage(in: Array(arguments.dropFirst())) {
            fail(ErrorLine.render(unknown + " (see 'pinproxy --help')"))
        }
        do {
            command = try parseAsRoot(arguments)
        } catch {
            // --help and --version arrive as errors that exit 0.
            if exitCode(for: error) == .success { exit(withError: error) }
            fail(ErrorLine.usage(error, arguments: arguments))
        }
        do {
            try command.run()
        } catch let code as ExitCode {
            // A status the command chose, such as verify's REJECT.
            exit(withError: code)
        } catch let error as CLIError {
            fail(ErrorLine.render(error.message + (error.isUsage ? helpPointer(arguments) : "")))
        } catch let error as PinproxyError {
            fail(ErrorLine.render(error.description + (error.code == .invalidArgument ? helpPointer(arguments) : "")))
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            fail(ErrorLine.render(message(for: error)))
        }
    }

    /// ` (see 'pinproxy serve --help')`: a value the command refused is a usage error too.
    private static func helpPointer(_ arguments: [String]) -> String {
        " (see '\(ErrorLine.commandPath(arguments).joined(separator: " ")) --help')"
    }

    /// Prints `line` on standard error and exits with ``usageErrorStatus``.
    private static func fail(_ line: String) -> Never {
        printError(line)
        exit(withError: ExitCode(usageErrorStatus))
    }

    static let configuration = CommandConfiguration(
        commandName: "pinproxy",
        abstract: "TLS-intercepting test proxy and certificate-pinning harness.",
        discussion: """
            pinproxy forges a leaf certificate for every host a client asks for, signed by its own \
            testing CA, and shows whether a client's certificate pinning rejects the forged chain.

            Examples:
              pinproxy demo                          (what pinning protects against)
              pinproxy serve --admin 127.0.0.1:8081  (proxy on :8080, CA in ./certs)
              curl -x http://127.0.0.1:8080 --cacert certs/pinproxy-ca.pem \\
                  https://example.com/
              pinproxy check --policy docs/examples/okhttp.json
              pinproxy pin --connect example.com:443

            README.md and docs/ describe every command in full.
            """,
        version: PinproxyVersion.current,
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

    /// Whether the directory is the one used without `--dir` (`$PINPROXY_CA_DIR`, else
    /// `./certs`), the only place `serve` may create a CA on its own: elsewhere a missing CA
    /// is more likely a mistyped path than a wish for a new CA.
    var isDefaultLocation: Bool {
        guard let directory, !directory.isEmpty else { return true }
        func absolute(_ path: String) -> String {
            let full = path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
            return (full as NSString).standardizingPath
        }
        return absolute(directory) == absolute(CADirectory.resolve(nil).path)
    }
}

/// An error reported as one clear line on stderr, with exit status 2 (see ``ErrorLine``).
struct CLIError: Error, CustomStringConvertible {
    let message: String
    /// Whether the message is about a value on the command line (the line then names `--help`).
    let isUsage: Bool
    init(_ message: String) { self.message = message; isUsage = false }
    init(_ error: PinproxyError) { self.message = error.description; isUsage = error.code == .invalidArgument }
    var description: String { message }
}

extension ParsableCommand {
    /// Runs `body`, reporting a ``PinproxyError`` as a one-line message (never a stack trace).
    func reportingErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PinproxyError {
            throw CLIError(error)
        }
    }
}

/// Writes to standard error, after what was printed to standard output so far: read through
/// one pipe (`2>&1 | less`), an error that speaks of "the chain above" comes after that chain.
func printError(_ text: String) {
    fflush(nil)  // every output stream: standard output is the one with anything buffered
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
