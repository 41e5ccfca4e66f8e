import ArgumentParser

struct BenchProxyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "proxy", abstract: "Benchmark the proxy against direct connections.")

    func run() throws {
        throw CLIError("pinproxy bench proxy: not available in this build yet")
    }
}
