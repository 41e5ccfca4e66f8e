import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTestSupport
@testable import PinproxyBench
import Testing

/// The benchmark's own load client against the real nginx origin, directly and
/// through pinproxy in forward mode (in process and as `serve`), and
/// `bench proxy --forward` end to end. No timing is asserted: only that every
/// request is counted, and that a wrong answer or a wrong CA refuses the run.
@Suite("bench proxy --forward and its load client", .serialized)
struct ForwardLoadTests {
    private static func target(_ origin: BenchOrigin, port: Int? = nil, tunnel: Bool = false, caPath: String? = nil,
                               path: String = "/small") throws -> LoadClient.Target {
        let authority = "\(ForwardLoads.originName):\(origin.port)"
        return LoadClient.Target(port: port ?? origin.port, connectAuthority: tunnel ? authority : nil,
                                 serverName: try HostName(validating: ForwardLoads.originName), caPath: caPath ?? origin.caPath,
                                 authority: authority, path: path)
    }

    @Test("keep-alive through pinproxy in forward mode: every response counted is a flow the proxy relayed")
    func countsEveryRequestThroughTheProxy() throws {
        let origin = try BenchOrigin(bulkMegabytes: 1, hostNames: [ForwardLoads.originName])
        defer { origin.stop() }
        var base = ProxyConfiguration()
        base.listen = ListenAddress(host: "127.0.0.1", port: 0)
        base.upstreamTrust = .file(origin.caPath)
        let authority = try CertificateAuthority.create()
        let proxy = try ProxyServer(configuration: try ForwardLoads.configuration(from: base), authority: authority)
        let port = try proxy.start().port
        defer { proxy.stop() }
        let ca = origin.directory + "/proxy-ca.pem"
        try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: ca, mode: 0o644)

        let client = LoadClient(target: try Self.target(origin, port: port, tunnel: true, caPath: ca), mode: .keepAlive,
                                connections: 5, threads: 2, seconds: 0.5)
        let figures = try client.run()
        #expect(figures.requests > 5)
        #expect(figures.p50Milliseconds > 0 && figures.p99Milliseconds >= figures.p50Milliseconds)
        #expect(figures.clientCPUSeconds > 0)
        // Read after the client closed: the proxy counts a flow once its response went out.
        var flows = 0
        for _ in 0..<50 where flows < figures.requests {
            flows = proxy.counters.counts.flows
            if flows < figures.requests { usleep(20_000) }
        }
        #expect(flows == figures.requests, "proxy relayed \(flows), client counted \(figures.requests)")

        let once = LoadClient(target: try Self.target(origin, port: port, tunnel: true, caPath: ca), mode: .newConnection,
                              connections: 2, threads: 2, seconds: 0.3)
        let perConnection = try once.run()
        #expect(perConnection.requests >= 2)
        #expect(proxy.counters.counts.connections >= 5 + perConnection.requests, "one client connection per request")
    }

    @Test("a 404, or a CONNECT answered with anything but 200, refuses the run")
    func refusesAnythingButSuccess() throws {
        let origin = try BenchOrigin(bulkMegabytes: 1, hostNames: [ForwardLoads.originName])
        defer { origin.stop() }
        for mode in [LoadClient.Mode.keepAlive, .newConnection] {
            let client = LoadClient(target: try Self.target(origin, path: "/missing"), mode: mode, connections: 2, threads: 1, seconds: 0.3)
            #expect { _ = try client.run() } throws: { "\($0)".contains("status 404, not 2xx") }
        }
        // CONNECT to something that is not a proxy: nginx answers 4xx, not 200.
        let notAProxy = LoadClient(target: try Self.target(origin, tunnel: true), mode: .keepAlive, connections: 1, threads: 1, seconds: 0.3)
        #expect { _ = try notAProxy.run() } throws: { "\($0)".contains("CONNECT \(ForwardLoads.originName)") }
    }

    @Test("a leaf that does not verify against the expected CA fails the handshake")
    func failsOnTheWrongCA() throws {
        let origin = try BenchOrigin(bulkMegabytes: 1, hostNames: [ForwardLoads.originName])
        defer { origin.stop() }
        let other = try CertificateAuthority.create()
        let otherCA = origin.directory + "/other-ca.pem"
        try FileIO.write(Array(other.certificate.pemEncoded.utf8), to: otherCA, mode: 0o644)
        let client = LoadClient(target: try Self.target(origin, caPath: otherCA), mode: .keepAlive, connections: 1, threads: 1, seconds: 0.3)
        #expect { _ = try client.run() } throws: { "\($0)".contains("TLS handshake with \(ForwardLoads.originName)") }
        // The right CA but a name the leaf does not carry.
        var wrongName = try Self.target(origin)
        wrongName.serverName = try HostName(validating: "elsewhere.bench.test")
        let misnamed = LoadClient(target: wrongName, mode: .newConnection, connections: 1, threads: 1, seconds: 0.3)
        #expect { _ = try misnamed.run() } throws: { "\($0)".contains("TLS handshake with elsewhere.bench.test") }
    }

    @Test("through a real `pinproxy serve` in forward mode, with --resolve and --upstream-ca")
    func throughServe() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let origin = try BenchOrigin(bulkMegabytes: 1, hostNames: [ForwardLoads.originName])
        defer { origin.stop() }
        let authority = try CertificateAuthority.create()
        let directory = origin.directory + "/serve-ca"
        _ = try CADirectory(path: directory).store(authority, overwrite: false)
        let ca = origin.directory + "/serve-proxy-ca.pem"
        try FileIO.write(Array(authority.certificate.pemEncoded.utf8), to: ca, mode: 0o644)
        let port = try BenchTools.freePort()
        let serve = Process()
        serve.executableURL = URL(fileURLWithPath: pinproxyBinary)
        serve.arguments = ["serve", "--dir", directory, "--listen", "127.0.0.1:\(port)", "--upstream-ca", origin.caPath,
                           "--resolve", "\(ForwardLoads.originName):127.0.0.1"]
        serve.standardOutput = FileHandle.nullDevice
        serve.standardError = FileHandle.nullDevice
        try serve.run()
        defer { kill(serve.processIdentifier, SIGKILL); serve.waitUntilExit() }
        try BenchTools.waitForPort(port)
        for mode in [LoadClient.Mode.keepAlive, .newConnection] {
            let client = LoadClient(target: try Self.target(origin, port: port, tunnel: true, caPath: ca), mode: mode,
                                    connections: 3, threads: 2, seconds: 0.4)
            #expect(try client.run().requests >= 3)
        }
        // The origin's CA does not sign what the proxy presents.
        let direct = LoadClient(target: try Self.target(origin, port: port, tunnel: true), mode: .keepAlive, connections: 1, threads: 1, seconds: 0.3)
        #expect(throws: (any Error).self) { _ = try direct.run() }
    }

    @Test("bench proxy --forward prints every forward load with its paths, the wrk check and the capture check")
    func benchProxyForward() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let r = try pinproxy(["bench", "proxy", "--forward", "--capture", "--duration", "1", "--rounds", "1", "--connections", "8"],
                             wrapper: ["timeout", "-s", "KILL", "300"])
        #expect(r.status == 0, "\(r.stderr)")
        for title in ["forward keep-alive requests (4 connections)", "forward keep-alive requests (8 connections)",
                      "forward: new TLS connection per request (CONNECT + handshake, 2 connections)"] {
            #expect(r.stdout.contains(title + "\n"), "\(title): \(r.stdout)")
        }
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("  pinproxy forward --har --events ") }.count == 3, "\(r.stdout)")
        #expect(lines.filter { $0.hasPrefix("  direct, wrk (client check) ") }.count == 2, "\(r.stdout)")
        #expect(lines.filter { $0.contains("capture files:") && $0.hasSuffix("; complete") }.count == 3, "\(r.stdout)")
        #expect(!r.stdout.contains("keep-alive requests (32 connections)"), "--forward alone runs only the forward loads")
        #expect(r.stdout.contains("pinproxy in forward mode in front of it") && !r.stdout.contains("reverse mode"),
                "the heading names the mode that ran: \(r.stdout.prefix(300))")
    }

    @Test("bench proxy --help names --forward and the forward loads")
    func help() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let text = try pinproxy(["bench", "proxy", "--help"]).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("--forward Run the forward-mode loads (CONNECT"), "\(text)")
        #expect(text.contains("forward-keep-alive, forward-new-connection"), "\(text)")
    }

    @Test("the bulk load downloads again and again for its duration, and refuses a body of the wrong size")
    func bulkRepeatsForItsDuration() throws {
        let origin = try BenchOrigin(bulkMegabytes: 1)
        defer { origin.stop() }
        let curl = try #require(BenchTools.find("curl", in: ["/usr/bin", "/usr/local/bin"]), "curl is needed")
        let url = "https://127.0.0.1:\(origin.port)/bulk"
        let once = try BenchTools.bulk(curl, url, megabytes: 1, seconds: 0)
        #expect(once.units == 1 && (once.megabytesPerSecond ?? 0) > 0)
        let repeated = try BenchTools.bulk(curl, url, megabytes: 1, seconds: 0.5)
        #expect(repeated.units > 1, "\(repeated.units) downloads in 0.5 s")
        #expect(throws: PinproxyError.self) { try BenchTools.bulk(curl, url, megabytes: 2, seconds: 0) }
        #expect(throws: PinproxyError.self) { try BenchTools.bulk(curl, "https://127.0.0.1:\(origin.port)/missing", megabytes: 1, seconds: 0) }
    }
}
