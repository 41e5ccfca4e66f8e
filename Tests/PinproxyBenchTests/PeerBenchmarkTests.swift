import Foundation
import PinproxyCertificates
import PinproxyProxy
@testable import PinproxyBench
import PinproxyTestSupport
import Testing

/// `pinproxy bench proxy --peers haproxy,nginx`: the generated configs are
/// ones the peers accept, the median comparison, and a short run end to end.
/// Figures are printed, never compared with a speed.
@Suite("bench proxy --peers", .serialized)
struct PeerBenchmarkTests {
    /// A throwaway CA's files in a fresh directory, as the benchmark writes them.
    static func files() throws -> (PeerConfigs.Files, String) {
        let directory = NSTemporaryDirectory() + "pinproxy-peers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let authority = try CertificateAuthority.create()
        let originCA = directory + "/origin-ca.pem"
        try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: originCA, mode: 0o644)
        return (try PeerConfigs.Files.write(authority: authority, originCA: originCA, directory: directory), directory)
    }

    @Test("HAProxy and nginx accept the configs generated for them, and refuse one whose origin CA is missing",
          arguments: PeerConfigs.names)
    func peersAcceptConfigs(kind: String) throws {
        let executable = try PeerConfigs.executable(kind)
        var (files, directory) = try Self.files()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let setup = try PeerConfigs.write(kind, port: 18443, originPort: 18444, files: files, directory: directory)
        let accepted = try PeerConfigs.check(executable, setup.check)
        #expect(accepted.status == 0, "\(kind): \(accepted.stderr)")
        let text = try String(contentsOfFile: setup.config, encoding: .utf8)
        #expect(text.contains("127.0.0.1:18443") && text.contains("127.0.0.1:18444") && text.contains(files.originCA))
        files.originCA = directory + "/absent-ca.pem"
        let refusing = try PeerConfigs.write(kind, port: 18443, originPort: 18444, files: files, directory: directory)
        #expect(try PeerConfigs.check(executable, refusing.check).status != 0, "\(kind) accepted a missing ca file")
    }

    @Test("the config verifies the origin: HAProxy with `verify required`, nginx with proxy_ssl_verify")
    func configsVerifyUpstream() throws {
        let (files, directory) = try Self.files()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haproxy = PeerConfigs.haproxy(port: 1, originPort: 2, files: files)
        #expect(haproxy.contains("ssl verify required ca-file \(files.originCA)") && haproxy.contains("http-reuse always")
                && haproxy.contains("nbthread 1") && haproxy.contains("alpn h2,http/1.1"))
        // HTTP/1.1 to the origin by default; the h2 variant offers both, as pinproxy does.
        func backend(_ config: String) -> String { config.components(separatedBy: "backend origin").last ?? "" }
        #expect(!backend(haproxy).contains("alpn"), "\(haproxy)")
        let haproxyH2 = PeerConfigs.haproxy(port: 1, originPort: 2, files: files, http2Upstream: true)
        #expect(backend(haproxyH2).contains("verify required") && backend(haproxyH2).contains(" alpn h2,http/1.1"), "\(haproxyH2)")
        let nginx = PeerConfigs.nginx(port: 1, originPort: 2, files: files, directory: directory)
        #expect(nginx.contains("proxy_ssl_verify on;") && nginx.contains("proxy_ssl_trusted_certificate \(files.originCA);")
                && nginx.contains("keepalive 64;") && nginx.contains("listen 127.0.0.1:1 ssl http2;"))
        #expect(throws: PinproxyError.self) { try PeerConfigs.write("squid", port: 1, originPort: 2, files: files, directory: directory) }
    }

    @Test("haproxy-h2 speaks HTTP/2 to an origin offering it, haproxy and nginx HTTP/1.1, pinproxy what its client speaks (HTTP/1.1 with --upstream-http2 off); all of them TLS 1.3")
    func upstreamProtocols() throws {
        let curl = try #require(BenchTools.find("curl"), "curl is needed")
        let origin = try BenchOrigin(bulkMegabytes: 1, http2: true)
        defer { origin.stop() }
        let authority = try CertificateAuthority.create()
        let files = try PeerConfigs.Files.write(authority: authority, originCA: origin.caPath, directory: origin.directory)
        let clientCA = origin.directory + "/peer-ca.pem"
        try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: clientCA, mode: 0o644)
        // The origin says which protocol each request came in on.
        let direct = try BenchTools.run(curl, ["-s", "--http2", "--cacert", origin.caPath, "https://127.0.0.1:\(origin.port)/protocol"])
        #expect(direct == "HTTP/2.0\n", "the origin answers with its protocol: \(direct)")
        for (kind, expected) in [("haproxy", "HTTP/1.1\n"), ("haproxy-h2", "HTTP/2.0\n"), ("nginx", "HTTP/1.1\n")] {
            let peer = try PeerProxy.server(kind, originPort: origin.port, files: files, clientCA: clientCA,
                                            directory: origin.directory, curl: curl)
            defer { peer.stop() }
            let seen = try BenchTools.run(curl, ["-s", "--http2", "--cacert", clientCA, "https://127.0.0.1:\(peer.port)/protocol"])
            #expect(seen == expected, "\(kind) reached the origin over \(seen)")
            // The same TLS as pinproxy's upstream leg: nginx 1.22 alone would offer TLS 1.2 at most.
            let tls = try BenchTools.run(curl, ["-s", "--cacert", clientCA, "https://127.0.0.1:\(peer.port)/tls"])
            #expect(tls == "TLSv1.3\n", "\(kind) reached the origin over \(tls)")
        }
        // pinproxy, as the benchmark runs it, relays the protocol its client speaks; with
        // --h1-upstream's path (--upstream-http2 off) it speaks HTTP/1.1 to the origin, as the peers.
        for upstreamHTTP2 in [true, false] {
            var configuration = ProxyBenchmark.reverseConfiguration(originPort: origin.port, originCA: origin.caPath, http2: true)
            configuration.upstreamHTTP2 = upstreamHTTP2
            let proxy = try ProxyServer(configuration: configuration, authority: authority)
            let port = try proxy.start().port
            defer { proxy.stop() }
            for (flag, expected) in [("--http2", upstreamHTTP2 ? "HTTP/2.0\n" : "HTTP/1.1\n"), ("--http1.1", "HTTP/1.1\n")] {
                let seen = try BenchTools.run(curl, ["-s", flag, "-w", "%{http_version}", "--cacert", clientCA, "https://127.0.0.1:\(port)/protocol"])
                // The client's own protocol stays what it offered first: h2 for --http2.
                #expect(seen == expected + (flag == "--http2" ? "2" : "1.1"), "pinproxy (upstream h2 \(upstreamHTTP2)) with a \(flag) client: \(seen)")
                let tls = try BenchTools.run(curl, ["-s", flag, "--cacert", clientCA, "https://127.0.0.1:\(port)/tls"])
                #expect(tls == "TLSv1.3\n", "pinproxy reached the origin over \(tls)")
            }
        }
    }

    @Test("peers are compared by median, with the ratio to direct and to the best peer")
    func medianLines() {
        var row = ProxyBenchmark.Row(name: "keep-alive", paths: [
            .init(path: "direct", runs: [.init(requestsPerSecond: 100), .init(requestsPerSecond: 300), .init(requestsPerSecond: 200)]),
            .init(path: "pinproxy", runs: [.init(requestsPerSecond: 50), .init(requestsPerSecond: 90), .init(requestsPerSecond: 60)]),
            .init(path: "haproxy 2.6.12", runs: [.init(requestsPerSecond: 80), .init(requestsPerSecond: 10), .init(requestsPerSecond: 70)]),
            .init(path: "nginx 1.22.1", runs: [.init(requestsPerSecond: 40), .init(requestsPerSecond: 60)]),
        ])
        #expect(row.paths[0].median == 200 && row.paths[3].median == 50)
        #expect(ProxyBenchmarkReport.lines(for: row).allSatisfy { !$0.contains("medians") }, "no peers, no median lines")
        row.peerPaths = ["haproxy 2.6.12", "nginx 1.22.1"]
        let text = ProxyBenchmarkReport.lines(for: row).joined(separator: "\n")
        #expect(text.contains("to best peer (haproxy 2.6.12)"), "\(text)")
        #expect(text.contains("pinproxy               60        0.30           0.86"), "\(text)")
        #expect(text.contains("haproxy 2.6.12         70        0.35           1.00"), "\(text)")
    }

    @Test("a wrk run is read for its figures, and one that saw answers other than 2xx or 3xx is refused")
    func wrkReportRead() throws {
        let report = """
            Running 1s test @ https://127.0.0.1:1/small
              1 threads and 4 connections
              Latency Distribution
                 50%  120.00us
                 99%    1.50ms
              4000 requests in 1.00s, 4.50MB read
            Requests/sec:   3996.00
            Transfer/sec:      4.49MB
            """
        let figures = try BenchTools.wrkFigures(report)
        #expect(figures.requestsPerSecond == 3996 && figures.units == 4000)
        #expect(figures.p50Milliseconds == 0.12 && figures.p99Milliseconds == 1.5)
        let failing = report.replacingOccurrences(of: "Requests/sec", with: "  Non-2xx or 3xx responses: 4000\nRequests/sec")
        #expect(throws: PinproxyError.self) { try BenchTools.wrkFigures(failing) }
    }

    @Test("bench proxy --peers haproxy,nginx prints a median row per peer with its ratios, on every load")
    func shortRun() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--peers", "haproxy,nginx", "--rounds", "1", "--duration", "1", "--bulk-mb", "2",
                              "--connections", "2", "--threads", "1", "--http2-connections", "1", "--streams", "4"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let medians = lines.indices.filter { lines[$0].hasPrefix("  medians") }
        #expect(medians.count == 3, "keep-alive, HTTP/2, bulk: \(r.stdout)")
        for start in medians {
            // Direct, pinproxy, then the two peers: a figure, the ratio to direct and to the best peer.
            let rows = lines[(start + 1)...].prefix(4).map { $0.split(separator: " ").map(String.init) }
            #expect(rows.count == 4 && rows[0].first == "direct" && rows[1].first == "pinproxy", "\(r.stdout)")
            #expect(rows.count == 4 && rows[2].first == "haproxy" && rows[3].first == "nginx", "\(r.stdout)")
            for row in rows.dropFirst() {
                let figures = row.suffix(3).compactMap(Double.init)
                #expect(figures.count == 3 && figures.allSatisfy { $0 > 0 }, "\(row) in \(r.stdout)")
            }
            #expect(rows.dropFirst(2).contains { Double($0.last ?? "") == 1.0 }, "the best peer is 1.00 of itself: \(r.stdout)")
        }
    }

    @Test("bench proxy --peers haproxy,pinproxy-serve: pinproxy's own serve process is a path with its own CPU, never the best peer")
    func serveProcessPath() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--peers", "haproxy,pinproxy-serve", "--load", "keep-alive", "--rounds", "1",
                              "--duration", "1", "--connections", "2", "--threads", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("  medians") }, "\(r.stdout)")
        #expect(lines[start].contains("to best peer (haproxy"), "pinproxy serve is not a peer: \(lines[start])")
        let rows = lines[(start + 1)...].prefix(4).map { $0.split(separator: " ").map(String.init) }
        #expect(rows.map { $0.first } == ["direct", "pinproxy", "haproxy", "pinproxy"], "\(r.stdout)")
        let serveRow = try #require(rows.last)
        #expect(serveRow.prefix(2) == ["pinproxy", "serve"] && serveRow.suffix(3).compactMap(Double.init).allSatisfy { $0 > 0 },
                "\(r.stdout)")
        // Its CPU is its own process's, read like a peer's.
        let cpu = try #require(lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("pinproxy serve") && $0.contains(" proxy ") },
                               "\(r.stdout)")
        let proxyCPU = cpu.split(separator: " ").drop { $0 != "proxy" }.dropFirst().first.flatMap { Double($0) }
        #expect((proxyCPU ?? 0) > 0, "\(cpu)")
    }
}
