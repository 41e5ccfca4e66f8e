import ArgumentParser
import Foundation
import PinproxyBench

struct BenchIdleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idle",
        abstract: "Keep-alive requests served while many idle intercepted connections are held, and memory per idle connection.",
        discussion: "pinproxy in reverse mode in front of nginx; python3 holds the idle connections, wrk measures. Raises the descriptor limit as needed (root may raise the hard limit)."
    )

    @Option(help: "Idle intercepted connections to hold.")
    var connections: Int = 10_000

    @Option(name: .customLong("active"), help: "wrk keep-alive connections for the load served meanwhile.")
    var activeConnections: Int = 4

    @Option(help: "Seconds per wrk run.")
    var duration: Int = 5

    @Option(help: "The proxy's event loops (default: as serve).")
    var loops: Int?

    @Flag(help: "Also hold as many idle HTTP/2 connections (ALPN h2, preface, SETTINGS and one request each) after the HTTP/1.1 ones, and compare the memory each kind costs.")
    var http2 = false

    @Flag(name: .customLong("http2-first"), help: "With --http2, hold the HTTP/2 connections before the HTTP/1.1 ones.")
    var http2First = false

    @Option(name: .customLong("upstream-hold"), help: ArgumentHelp("The proxy's --upstream-hold (default: as serve); one longer than the run keeps each idle client's upstream connection.", valueName: "seconds"))
    var upstreamHold: Double?

    func validate() throws {
        guard (1...200_000).contains(connections) else { throw ValidationError("--connections must be 1–200000") }
        guard (1...10_000).contains(activeConnections) else { throw ValidationError("--active must be 1–10000") }
        guard (1...600).contains(duration) else { throw ValidationError("--duration must be 1–600") }
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops must be 1–256") }
        if http2First && !http2 { throw ValidationError("--http2-first needs --http2") }
        if let upstreamHold, !(0...86_400).contains(upstreamHold) { throw ValidationError("--upstream-hold must be 0–86400") }
    }

    func run() throws {
        try reportingErrors {
            #if DEBUG
            printError("note: this is a debug build; figures are far below a release build's (swift build -c release)")
            #endif
            var options = IdleBenchmark.Options()
            options.connections = connections
            options.activeConnections = activeConnections
            options.duration = duration
            options.loops = loops
            options.http2 = http2
            options.http2First = http2First
            options.upstreamHold = upstreamHold
            let r = try IdleBenchmark(options: options).run { printError("running: \($0)") }
            print("idle connections: pinproxy in reverse mode in front of nginx; \(activeConnections) wrk keep-alive connection(s) serve meanwhile")
            print("  idle intercepted connections held: \(r.idleOpened) (\(r.idleFailed) failed to open); proxy open connections \(r.openConnectionsWhileIdle), descriptors \(r.descriptorsWhileIdle)")
            print(String(format: "  keep-alive requests/s: %.0f with nothing idle, %.0f while they are held (ratio %.2f)",
                         r.requestsPerSecondBefore, r.requestsPerSecondWhileIdle,
                         r.requestsPerSecondBefore > 0 ? r.requestsPerSecondWhileIdle / r.requestsPerSecondBefore : 0))
            print(String(format: "  proxy resident set: %.1f MB before, %.1f MB while held: %.1f KiB per idle connection",
                         r.residentMegabytesBefore, r.residentMegabytesWhileIdle, r.kilobytesPerIdleConnection))
            print(String(format: "  settled (%.0f s after they fell idle): %.1f MB: %.1f KiB per idle connection",
                         IdleBenchmark.settleSeconds(hold: upstreamHold), r.residentMegabytesSettled, r.kilobytesPerSettledConnection))
            if let h2 = r.http2 {
                print("  idle HTTP/2 connections held (\(http2First ? "before the HTTP/1.1 ones" : "after the HTTP/1.1 ones closed")): \(h2.opened) (\(h2.failed) failed to open); proxy open connections \(h2.openConnectionsWhileIdle), descriptors \(h2.descriptorsWhileIdle)")
                print(String(format: "  keep-alive requests/s while they are held: %.0f (ratio %.2f to nothing idle)", h2.requestsPerSecondWhileIdle,
                             r.requestsPerSecondBefore > 0 ? h2.requestsPerSecondWhileIdle / r.requestsPerSecondBefore : 0))
                print(String(format: "  proxy resident set: %.1f MB before, %.1f MB while held: %.1f KiB per idle HTTP/2 connection",
                             h2.residentMegabytesBefore, h2.residentMegabytesWhileIdle, h2.kilobytesPerIdleConnection))
                print(String(format: "  settled (%.0f s after they fell idle): %.1f MB: %.1f KiB per idle HTTP/2 connection",
                             IdleBenchmark.settleSeconds(hold: upstreamHold), h2.residentMegabytesSettled, h2.kilobytesPerSettledConnection))
                print(String(format: "  memory per idle connection, HTTP/2 over HTTP/1.1: %.2f×",
                             r.kilobytesPerIdleConnection > 0 ? h2.kilobytesPerIdleConnection / r.kilobytesPerIdleConnection : 0))
                // The kind measured second reuses memory the first one freed, which makes it look cheaper.
                print("  (the kind measured second reuses memory the first freed and looks cheaper; for the ratio, compare each kind"
                      + " measured first: this run \(http2First ? "without" : "with") --http2-first)")
            }
        }
    }
}
