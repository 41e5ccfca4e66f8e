import ArgumentParser

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "verify", abstract: "Evaluate a pinning policy against a certificate chain.")

    func run() throws {
        throw CLIError("pinproxy verify: not available in this build yet")
    }
}
