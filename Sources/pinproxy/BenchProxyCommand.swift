import ArgumentParser
import Foundation
import PinproxyBench
import PinproxyProxy

struct BenchProxyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "The same load through the proxy and directly against a local HTTPS origin (nginx), with ratios.",
        discussion: """
            Uses nginx as the origin, wrk for request loads and curl for bulk; with --http2, h2load (nghttp2-client) \
            over HTTP/2 on both legs; with --forward, pinproxy in forward mode (CONNECT), measured with the benchmark's own \
            load client on every path, wrk on the direct path beside it as a check of that client. Build with -c release \
            for meaningful figures.
            """
    )

    @Option(help: "Seconds per wrk run.")
    var duration: Int = 5

    @Option(help: "Concurrent keep-alive connections.")
    var connections: Int = 32

    @Option(help: "wrk threads.")
    var threads: Int = 2

    @Option(name: .customLong("bulk-mb"), help: "Size of the bulk download in MiB.")
    var bulkMegabytes: Int = 256

    @Option(help: "Alternating direct/proxied runs per load; the best of each is compared.")
    var rounds: Int = 3

    @Option(help: "The proxy's event loops (default: as serve, half the cores, at least one).")
    var loops: Int?

    @Option(name: .customLong("idle-upstream-timeout"), help: ArgumentHelp("pinproxy's serve --idle-upstream-timeout (0: every client connection opens its own upstream connection).", valueName: "seconds"))
    var idleUpstreamTimeout: Double?

    @Flag(help: "Also measure pinproxy writing --har and --events files, and check the files afterwards.")
    var capture = false

    @Option(help: ArgumentHelp("Also measure mitmproxy: this mitmdump executable (make bench PEERS=1 installs one).", valueName: "path"))
    var mitmdump: String?

    @Option(help: ArgumentHelp("Also measure these peers doing the same reverse-proxy work (comma-separated: haproxy, haproxy-h2, nginx): TLS from the client with a leaf from pinproxy's throwaway CA, verified TLS to the origin. haproxy and nginx speak HTTP/1.1 to the origin; haproxy-h2 offers it h2 as well, as pinproxy does; pinproxy-serve adds pinproxy as a serve process of its own, started as the peers are, beside the in-process one. Without --load, runs keep-alive, http2 and bulk, and prints medians with ratios to direct and to the best peer.", valueName: "names"))
    var peers: String?

    @Flag(name: .customLong("h1-upstream"), help: "Also measure pinproxy with serve --upstream-http2 off: HTTP/1.1 to the origin whatever the client speaks, as haproxy and nginx do (pinproxy by default relays the origin's h2).")
    var h1Upstream = false

    @Option(help: ArgumentHelp("Run only these loads (repeatable): \(ProxyBenchmark.Load.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "load"))
    var load: [String] = []

    @Flag(help: "Run the HTTP/2 loads (h2load; the origin offers h2 and the proxy runs with --http2 on): many streams over a few connections, and a bulk download. With --load, in addition to those loads.")
    var http2 = false

    @Flag(help: "Run the forward-mode loads (CONNECT, a leaf forged from pinproxy's CA, verified TLS to the origin) with the benchmark's own load client: keep-alive over 4 and --connections connections, and a new TLS connection per request. With --load, in addition to those loads.")
    var forward = false

    @Option(name: .customLong("http2-connections"), help: "h2load connections for the HTTP/2 request load.")
    var http2Connections: Int = 4

    @Option(help: "Concurrent streams per h2load connection (h2load -m) for the HTTP/2 request load.")
    var streams: Int = 25

    func validate() throws {
        guard (1...600).contains(duration) else { throw ValidationError("--duration must be 1–600") }
        guard (1...10_000).contains(connections) else { throw ValidationError("--connections must be 1–10000") }
        guard (1...64).contains(threads), threads <= connections else { throw ValidationError("--threads must be 1–64 and at most --connections") }
        guard (1...8192).contains(bulkMegabytes) else { throw ValidationError("--bulk-mb must be 1–8192") }
        guard (1...20).contains(rounds) else { throw ValidationError("--rounds must be 1–20") }
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops must be 1–256") }
        guard (1...1000).contains(http2Connections) else { throw ValidationError("--http2-connections must be 1–1000") }
        guard (1...1000).contains(streams) else { throw ValidationError("--streams must be 1–1000") }
        if let idleUpstreamTimeout, !(0...3_600).contains(idleUpstreamTimeout) { throw ValidationError("--idle-upstream-timeout must be 0–3600") }
        for name in peerNames where !ProxyBenchmark.peerNames.contains(name) {
            throw ValidationError("unknown peer '\(name)' in --peers (\(ProxyBenchmark.peerNames.joined(separator: ", ")))")
        }
        for name in load where ProxyBenchmark.Load(rawValue: name) == nil {
            throw ValidationError("unknown --load '\(name)' (\(ProxyBenchmark.Load.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
    }

    /// The names in `--peers`, in order, each once.
    var peerNames: [String] {
        var seen = Set<String>()
        return (peers ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    func run() throws {
        try reportingErrors {
            #if DEBUG
            printError("note: this is a debug build; figures are far below a release build's (swift build -c release)")
            #endif
            var options = ProxyBenchmark.Options()
            options.duration = duration
            options.connections = connections
            options.threads = threads
            options.bulkMegabytes = bulkMegabytes
            options.rounds = rounds
            options.loops = loops
            options.capture = capture
            options.idleUpstreamTimeout = idleUpstreamTimeout
            options.mitmdump = mitmdump
            options.peers = peerNames
            options.h1Upstream = h1Upstream
            options.loads = Set(load.compactMap(ProxyBenchmark.Load.init(rawValue:)))
            if http2 { options.loads.formUnion(ProxyBenchmark.Load.http2Loads) }
            if forward { options.loads.formUnion(ProxyBenchmark.Load.forwardLoads) }
            options.http2Connections = http2Connections
            options.streams = streams
            let rows = try ProxyBenchmark(options: options).run { printError("running: \($0)") }
            let onlyForward = !options.loads.isEmpty && options.loads.allSatisfy(\.isForward)
            print("proxy benchmark: nginx origin over TLS; " + (onlyForward ? "pinproxy in forward mode" : "proxies in reverse mode")
                  + " in front of it (pinproxy in the driver's process)")
            print("pinproxy: \(loops ?? ProxyConfiguration.defaultEventLoops) event loop(s) (--loops); nginx: 1 worker; wrk: \(threads) thread(s)"
                  + (options.loads.contains { $0.isHTTP2 } ? "; h2load: \(min(threads, http2Connections)) thread(s), HTTP/2 on both legs" : ""))
            print("the paths take turns, \(rounds) run(s) each after a warm-up, direct first, the others turned by one place each round;")
            print("the best run of each path is compared with the best direct run")
            print("CPU: mean CPU time per request (µs) of each party over the runs; on a busy machine the throughput ratio tends")
            print("to direct CPU / path CPU, which varies less with other load than throughput does")
            if options.loads.contains(where: \.isForward) {
                print("forward loads: pinproxy in forward mode (CONNECT); every path driven by the benchmark's load client, which")
                print("verifies each leaf (pinproxy's CA through the proxy, the origin's CA direct); 'direct, wrk' is wrk on the direct path,")
                print("its ratio the one of wrk to the load client")
            }
            if !options.peers.isEmpty {
                print("peers: in reverse mode in front of the same origin, verifying it; the medians of the rounds are compared as well")
            }
            for row in rows { print(""); print(ProxyBenchmarkReport.lines(for: row).joined(separator: "\n")) }
        }
    }
}
