import ArgumentParser

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pin", abstract: "Print SPKI pins of certificates, keys or a live server.")

    func run() throws {
        throw CLIError("pinproxy pin: not available in this build yet")
    }
}
