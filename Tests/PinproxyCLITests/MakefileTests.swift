import Foundation
import Testing
import PinproxyTestSupport

/// The Makefile's targets, read with `make -n` (printed, not run: a release build is too slow for the suite).
@Suite struct MakefileTests {
    /// The commands `make -n` prints for `target` with `variables`, from the package root.
    static func plannedCommands(_ target: String, _ variables: [String]) throws -> [String] {
        let result = try run(["make", "--no-print-directory", "-n", "-C", packageRoot, target] + variables)
        #expect(result.status == 0, "\(result.output)")
        return result.stdout.split(separator: "\n").map(String.init)
    }

    @Test func runPassesExtraArgumentsToServe() throws {
        let commands = try MakefileTests.plannedCommands("run", ["CA_DIR=/tmp/ca", #"ARGS=--upstream-ca "my ca.pem" --log-level debug"#])
        let serve = try #require(commands.first { $0.contains("pinproxy serve") }, "\(commands)")
        #expect(serve == #".build/release/pinproxy serve --ca-dir /tmp/ca --admin 127.0.0.1:8081 --upstream-ca "my ca.pem" --log-level debug"#)
    }

    @Test func runWithoutArgumentsServesWithTheDefaults() throws {
        let commands = try MakefileTests.plannedCommands("run", ["CA_DIR=/tmp/ca"])
        let serve = try #require(commands.first { $0.contains("pinproxy serve") }, "\(commands)")
        #expect(serve.trimmingCharacters(in: .whitespaces) == ".build/release/pinproxy serve --ca-dir /tmp/ca --admin 127.0.0.1:8081")
    }
}
