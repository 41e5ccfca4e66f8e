import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// The forward-mode loads of `pinproxy bench proxy` (`--forward`): pinproxy as
/// clients use it, `CONNECT host:443` then TLS with a leaf forged from its CA,
/// relayed over verified TLS to the origin.
///
/// wrk and h2load cannot send CONNECT, so these loads use ``LoadClient`` on
/// every path: direct (to the origin, verifying its CA) and through pinproxy
/// in forward mode (verifying pinproxy's CA), plus pinproxy writing `--har`
/// and `--events` with `capture`. The origin is reached by a name no resolver
/// knows, ``originName``, which the proxy maps to 127.0.0.1 as
/// `serve --resolve` does: no DNS on any path, and the client sends the same
/// SNI and verifies the same name directly and through the proxy. On the
/// keep-alive loads, wrk on the direct path runs as one more path when it is
/// installed: its ratio to the load client's direct run says how close the
/// load client comes to wrk (a slow client would flatter every ratio).
struct ForwardLoads {
    /// The origin's name on these loads; its leaf carries it.
    static let originName = "origin.bench.test"

    let options: ProxyBenchmark.Options
    let origin: BenchOrigin
    let authority: CertificateAuthority
    let configuration: ProxyConfiguration
    let logger: Logger
    let wrk: String?

    /// The forward-mode configuration `base` (the reverse paths') implies.
    static func configuration(from base: ProxyConfiguration) throws -> ProxyConfiguration {
        var configuration = base
        configuration.mode = .forward
        try configuration.upstreamAddresses.set(originName, to: "127.0.0.1")
        return configuration
    }

    /// One row per forward load asked, in order: keep-alive over 4 connections and over
    /// `options.connections`, then a new connection per request.
    func rows(_ loads: Set<ProxyBenchmark.Load>, progress: (String) -> Void) throws -> [ProxyBenchmark.Row] {
        // As the reverse paths' pinproxy: `serve` without `--admin`, no request log.
        let proxy = try ProxyServer(configuration: configuration, authority: authority,
                                    recorder: CaptureRecorder(keepsRecentFlows: false), logger: logger)
        let proxyPort = try proxy.start().port
        defer { proxy.stop() }
        var rows: [ProxyBenchmark.Row] = []
        let o = options
        if loads.contains(.forwardKeepAlive) {
            for connections in Array(Set([4, o.connections])).sorted() {
                progress("forward keep-alive: \(connections) connections, \(o.duration) s per run, \(max(1, o.rounds)) round(s)")
                rows.append(try measure("forward keep-alive requests (\(connections) connections)", proxyPort: proxyPort,
                                        mode: .keepAlive, connections: connections))
            }
        }
        if loads.contains(.forwardNewConnection) {
            let connections = max(2, o.connections / 4)
            progress("forward: new TLS connection per request, \(connections) connections")
            rows.append(try measure("forward: new TLS connection per request (CONNECT + handshake, \(connections) connections)",
                                    proxyPort: proxyPort, mode: .newConnection, connections: connections))
        }
        return rows
    }

    /// Every path's turn in each round after a one-second warm-up of each, as the reverse loads do.
    private func measure(_ name: String, proxyPort: Int, mode: LoadClient.Mode, connections: Int) throws -> ProxyBenchmark.Row {
        let o = options
        let captured = o.capture ? try CapturedProxy(configuration: configuration, authority: authority,
                                                     directory: origin.directory, logger: logger) : nil
        defer { captured?.stop() }
        let proxyCA = origin.directory + "/forward-proxy-ca.pem"
        try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: proxyCA, mode: 0o644)
        let authorityText = "\(Self.originName):\(origin.port)"
        let serverName = try HostName(validating: Self.originName)
        func client(_ port: Int, tunnel: Bool, seconds: Double) -> LoadClient {
            let target = LoadClient.Target(port: port, connectAuthority: tunnel ? authorityText : nil, serverName: serverName,
                                           caPath: tunnel ? proxyCA : origin.caPath, authority: authorityText)
            return LoadClient(target: target, mode: mode, connections: connections, threads: min(o.threads, connections), seconds: seconds)
        }
        typealias Path = (name: String, run: (Double) throws -> ProxyBenchmark.Figures)
        var paths: [Path] = [
            ("direct", { try self.metered(client(origin.port, tunnel: false, seconds: $0), proxied: false) }),
            ("pinproxy forward", { try self.metered(client(proxyPort, tunnel: true, seconds: $0), proxied: true) }),
        ]
        if let captured {
            paths.append(("pinproxy forward --har --events", { try self.metered(client(captured.port, tunnel: true, seconds: $0), proxied: true) }))
        }
        if mode == .keepAlive, let wrk {
            let arguments = ["-t", String(min(o.threads, connections)), "-c", String(connections), "--latency",
                             "-H", "Host: \(authorityText)"]
            paths.append(("direct, wrk (client check)", { seconds in
                try self.meteredWrk(wrk, arguments + ["-d", "\(Int(seconds))s", "https://127.0.0.1:\(self.origin.port)/small"])
            }))
        }
        for path in paths { _ = try path.run(1) }
        var row = ProxyBenchmark.Row(name: name, paths: paths.map { ProxyBenchmark.PathRuns(path: $0.name) })
        for round in 0..<max(1, o.rounds) {
            for index in ProxyBenchmark.turnOrder(round: round, paths: paths.count) {
                row.paths[index].runs.append(try paths[index].run(Double(o.duration)))
            }
        }
        row.captureCheck = try captured?.check()
        return row
    }

    /// One load client run with the CPU of each party: the client's threads, the
    /// rest of this process (the proxy, when `proxied`) and the origin.
    private func metered(_ client: LoadClient, proxied: Bool) throws -> ProxyBenchmark.Figures {
        let before = CPUClock.sample(originPID: origin.pid)
        let figures = try client.run()
        let after = CPUClock.sample(originPID: origin.pid)
        var result = ProxyBenchmark.Figures(requestsPerSecond: figures.requestsPerSecond, p50Milliseconds: figures.p50Milliseconds,
                                            p99Milliseconds: figures.p99Milliseconds, units: Double(figures.requests))
        if figures.requests > 0, let before, let after {
            let perRequest = 1e6 / Double(figures.requests)
            let proxy = proxied ? max(0, after.process - before.process - figures.clientCPUSeconds) : 0
            result.cpu = ProxyBenchmark.CPUShare(proxy: proxy * perRequest, origin: (after.origin - before.origin) * perRequest,
                                                 client: figures.clientCPUSeconds * perRequest)
        }
        return result
    }

    /// wrk on the direct path, with the CPU of the origin and of wrk.
    private func meteredWrk(_ wrk: String, _ arguments: [String]) throws -> ProxyBenchmark.Figures {
        let before = CPUClock.sample(originPID: origin.pid)
        var figures = try BenchTools.wrk(wrk, arguments)
        let after = CPUClock.sample(originPID: origin.pid)
        if figures.units > 0, let before, let after {
            let perRequest = 1e6 / figures.units
            figures.cpu = ProxyBenchmark.CPUShare(proxy: 0, origin: (after.origin - before.origin) * perRequest,
                                                  client: (after.children - before.children) * perRequest)
        }
        return figures
    }
}
