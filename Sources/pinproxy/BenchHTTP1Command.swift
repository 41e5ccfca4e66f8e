import ArgumentParser
import Foundation
import PinproxyProxy

struct BenchHTTP1Command: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http1",
        abstract: "Nanoseconds per keep-alive exchange through the HTTP/1 layer, against a scan-and-copy of the same bytes.",
        discussion: "One exchange is wrk's GET /small and nginx's 200 with a 1 KiB body: both parsers, both forwarded heads "
            + "serialized, and the keep-alive/upgrade/continue questions; once as the session calls them today (each read "
            + "copied into an array), and once through the entry points that avoid copies (slices fed into a reused events "
            + "array, forwarded heads written straight to bytes). Build with -c release for meaningful figures."
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
        print(String(format: "  exchange, as the session calls it:        %8.0f ns", r.exchangeNanoseconds))
        print(String(format: "  exchange, through the new entry points:   %8.0f ns", r.newAPIExchangeNanoseconds))
        print(String(format: "  baseline, LF scan + copy:                 %8.0f ns", r.baselineNanoseconds))
        print(String(format: "  ratio session exchange / baseline:        %8.2f", r.exchangeOverBaseline))
        print(String(format: "  ratio new-entry-point exchange / baseline:%8.2f", r.newAPIExchangeOverBaseline))
    }
}
