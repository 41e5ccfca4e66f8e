import ArgumentParser
import Foundation
import PinproxyBench
import PinproxyCertificates

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure pinproxy against a baseline taken in the same run (use a release build).",
        subcommands: [Forge.self, BenchProxyCommand.self, BenchSoakCommand.self, BenchIdleCommand.self, BenchHTTP1Command.self]
    )

    struct Forge: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Leaves forged per second (reused key, fresh key) against raw P-256 signatures per second."
        )

        @Option(help: "Leaves to forge with the reused key (a quarter as many with fresh keys).")
        var count: Int = 20_000

        func validate() throws {
            guard (1...10_000_000).contains(count) else { throw ValidationError("--count must be 1–10000000") }
        }

        func run() throws {
            try reportingErrors {
                #if DEBUG
                printError("note: this is a debug build; figures are far below a release build's (make bench)")
                #endif
                let r = try ForgeBenchmark.run(count: count)
                func f(_ v: Double) -> String { String(format: "%10.0f", v) }
                print("forge benchmark (\(r.count) leaves, P-256 CA, one process)")
                print("  leaves/s, reused leaf key (cache miss): \(f(r.reusedKeyPerSecond))")
                print("  leaves/s, fresh key per leaf:           \(f(r.freshKeyPerSecond))")
                print("  raw ECDSA P-256 signatures/s:           \(f(r.rawSignPerSecond))")
                print(String(format: "  ratio reused-key forging / raw sign:    %10.2f", r.reusedOverRawSign))
                print(String(format: "  ratio fresh-key forging / raw sign:     %10.2f", r.freshOverRawSign))
                print(String(format: "  cache hit:                              %10.0f ns", r.cacheHitNanoseconds))
                print("all \(r.threads) cores, one shared forger:")
                print("  leaves/s, reused leaf key (cache miss): \(f(r.parallelReusedKeyPerSecond))")
                print("  raw ECDSA P-256 signatures/s:           \(f(r.parallelRawSignPerSecond))")
                print(String(format: "  ratio reused-key forging / raw sign:    %10.2f", r.parallelOverRawSign))
            }
        }
    }
}
