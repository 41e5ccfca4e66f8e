import ArgumentParser
import Foundation
import PinproxyCertificates
import PinproxyHarness

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show what pinning protects against, and what it can break: five live connections, a few seconds, nothing to set up.",
        discussion: """
            Builds a world on loopback and sends a request carrying a fake secret through the proxy, with \
            the proxy CA installed on the device: without pinning (the proxy reads the secret), with \
            AFNetworking publicKey pinning, with OkHttp's CertificatePinner against a stuffed chain, and with \
            the OkHttp behaviour before CVE-2016-2402 against the same chain; then, with no attacker, OkHttp \
            pinning only the intermediate while the genuine server moves to a new intermediate (an OUTAGE: \
            the app refuses its own server). Exit status 0 when the story came out as told, 1 otherwise.
            """
    )

    func run() throws {
        let started = Date()
        let harness: Harness
        let parts: [Demo.Part]
        do {
            harness = try Harness.start()
        } catch let error as PinproxyError {
            throw CLIError("pinproxy demo: \(error)")
        }
        defer { harness.stop() }
        do {
            parts = try Demo.run(in: harness)
        } catch let error as PinproxyError {
            throw CLIError("pinproxy demo: \(error)")
        }
        // The next steps name pinproxy as the reader ran it, so that they run as pasted.
        let invoked = CommandLine.arguments.first.map { $0.contains("/") ? $0 : "pinproxy" } ?? "pinproxy"
        print(Demo.text(parts, harness: harness, elapsed: Date().timeIntervalSince(started), colour: isatty(STDOUT_FILENO) == 1,
                        command: invoked))
        if parts.contains(where: { !$0.asExpected }) {
            printError("pinproxy demo: the story did not come out as told (see UNEXPECTED above)")
            throw ExitCode(1)
        }
    }
}
