import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `openssl s_server -www` serving one chain on an ephemeral loopback port, until it goes away.
final class ChainServer: @unchecked Sendable {
    private let process = Process()
    private let directory: PinproxyTestSupport.TemporaryDirectory
    let port: Int

    /// Serves `chain` (leaf first) with the leaf's `key`. Security level 0, so that SHA-1 and
    /// other weak certificates can be served at all: the client judges them, not the server.
    init(chain: [Certificate], key: PrivateKey) throws {
        directory = try PinproxyTestSupport.TemporaryDirectory()
        let certificate = try directory.write(chain[0].pemEncoded, to: "leaf.pem")
        let keyFile = try directory.write(try key.pemEncoded(), to: "leaf.key")
        var arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", certificate, "-key", keyFile, "-www", "-cipher", "DEFAULT:@SECLEVEL=0"]
        if chain.count > 1 {
            arguments += ["-cert_chain", try directory.write(chain.dropFirst().map(\.pemEncoded).joined(), to: "chain.pem")]
        }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = Pipe()
        try process.run()
        // "ACCEPT 127.0.0.1:PORT" names the port.
        var text = ""
        var found: Int?
        while found == nil {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            found = text.split(separator: "\n").first { $0.hasPrefix("ACCEPT ") }
                .flatMap { $0.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
        }
        guard let found else {
            ChainServer.stop(process)
            throw PinproxyError(.io, "openssl s_server did not start: \(text)")
        }
        port = found
        // Keep draining, so a chatty server never blocks on a full pipe.
        DispatchQueue.global().async { while !out.fileHandleForReading.availableData.isEmpty {} }
    }

    deinit { ChainServer.stop(process) }

    /// SIGKILL: a child spawned from a dispatch thread may have SIGTERM blocked.
    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// The real clients: OkHttp 3.13.1 on the JDK (Debian's libokhttp-java, through the
/// cross-check's own client) and curl.
enum RealClient {
    /// The cross-check's OkHttp client, compiled once per test process into a cache of its own.
    static let okHttpClasspath: Result<String, PinproxyError> = {
        let jars = OkHttpJVMRunner.jarNames.map { "\(RealLibraries.debianJavaLibraries)/\($0)" }
        for jar in jars where !FileManager.default.fileExists(atPath: jar) {
            return .failure(PinproxyError(.io, "\(jar) is missing: install libokhttp-java (make deps)"))
        }
        guard let java = RealLibraries.executable("java"), let javac = RealLibraries.executable("javac") else {
            return .failure(PinproxyError(.io, "no java and javac on PATH: install openjdk-17-jdk-headless (make deps)"))
        }
        let cache = NSTemporaryDirectory() + "pinproxy-okhttp-client-\(getpid())"
        do {
            let client = try OkHttpJVMRunner.compile(jars: jars, java: java, javac: javac, cacheDirectory: cache)
            return .success(([client.classes] + jars).joined(separator: ":"))
        } catch let error as PinproxyError {
            return .failure(error)
        } catch {
            return .failure(PinproxyError(.io, "cannot compile the OkHttp client: \(error)"))
        }
    }()

    /// Real OkHttp's verdict: a GET to `https://host:port/` (looked up as 127.0.0.1) with a
    /// `HandshakeCertificates` trust store of `anchors` and a `CertificatePinner` for `host`
    /// with `pins`. ACCEPT when the request got its 200, else REJECT with the output.
    static func okHttp(host: String, port: Int, pins: [String], anchors: [Certificate]) throws -> (accepted: Bool, output: String) {
        let classpath = try okHttpClasspath.get()
        let directory = try PinproxyTestSupport.TemporaryDirectory()
        let anchorFile = try directory.write(anchors.map(\.pemEncoded).joined(), to: "anchors.pem")
        let pinArguments = pins.flatMap { [host, $0] }
        let result = try run(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath, OkHttpJVMClient.className,
                              "https://\(host):\(port)/", "", host, "127.0.0.1", anchorFile] + pinArguments)
        return (result.status == 0, result.output)
    }

    /// Real curl's exit status with `--cacert` of `anchors` and `--pinnedpubkey`.
    static func curl(host: String, port: Int, pins: [String], anchors: [Certificate]) throws -> (status: Int32, output: String) {
        let directory = try PinproxyTestSupport.TemporaryDirectory()
        let anchorFile = try directory.write(anchors.map(\.pemEncoded).joined(), to: "anchors.pem")
        let result = try run(["curl", "-sS", "-o", "/dev/null", "--max-time", "20", "--resolve", "\(host):\(port):127.0.0.1",
                              "--cacert", anchorFile, "--pinnedpubkey", pins.joined(separator: ";"), "https://\(host):\(port)/"])
        return (result.status, result.output)
    }
}

extension Verdict {
    /// The verdict's steps, one a line, for failure messages and text checks.
    var explained: String { "\(decision): " + steps.map(\.description).joined(separator: "\n") }
}
