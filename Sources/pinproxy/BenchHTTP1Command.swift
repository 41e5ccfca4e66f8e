import ArgumentParser
import Foundation
import PinproxyBench

struct BenchHTTP1Command: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http1",
        abstract: "Nanoseconds per keep-alive exchange through the HTTP/1 layer, against a scan-and-copy of the same bytes.",
        discussion: "One exchange is wrk's GET /small and nginx's 200 with a 1 KiB body: both parsers, both forwarded heads "
            + "serialized, and the keep-alive/upgrade/continue questions; once through the general entry points (each read "
            + "copied into an array, heads built then serialized), and once through the entry points the proxy uses, which "
            + "avoid copies (slices fed to the parser, forwarded heads written straight to bytes). Build with -c release for meaningful figures."
    )

    @Option(help: "Exchanges per round.")
    var exchanges: Int = 200_000

    @Option(help: "Rounds; the fastest round of each measurement is reported.")
    var rounds: Int = 5

    func validate() throws {
        guard (1...100_000_000).contains(exchanges) else { throw ValidationError("--exchanges must be 1–100000000") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be 1–100") }
    }

    func run() throws {
        #if DEBUG
        printError("note: this is a debug build; figures are far below a release build's (swift build -c release)")
        #endif
        let r = try HTTP1Benchmark.run(exchanges: exchanges, rounds: rounds)
        print("HTTP/1 benchmark (\(r.exchanges) exchanges per round, best of \(rounds) rounds, one thread)")
        print(String(format: "  exchange, general entry points:           %8.0f ns", r.exchangeNanoseconds))
        print(String(format: "  exchange, copy-free entry points (proxy): %8.0f ns", r.newAPIExchangeNanoseconds))
        print(String(format: "  baseline, LF scan + copy:                 %8.0f ns", r.baselineNanoseconds))
        print(String(format: "  ratio general / baseline:                 %8.2f", r.exchangeOverBaseline))
        print(String(format: "  ratio copy-free / baseline:               %8.2f", r.newAPIExchangeOverBaseline))
    }
}
