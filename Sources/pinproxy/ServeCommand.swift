import ArgumentParser

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the intercepting proxy daemon.")

    func run() throws {
        throw CLIError("pinproxy serve: not available in this build yet")
    }
}
