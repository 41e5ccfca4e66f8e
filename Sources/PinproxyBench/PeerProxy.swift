import Foundation
import PinproxyCertificates

/// Another proxy run beside pinproxy under the same load: started in reverse
/// mode in front of the benchmark origin, stopped after the run.
final class PeerProxy {
    let name: String
    let port: Int
    private let process: Process
    /// nginx and HAProxy are stopped with SIGKILL: started from a Dispatch
    /// worker thread they inherit its mask, which blocks SIGTERM.
    private let killHard: Bool

    private init(name: String, port: Int, process: Process, killHard: Bool = false) {
        self.name = name
        self.port = port
        self.process = process
        self.killHard = killHard
    }

    var pid: Int32 { process.processIdentifier }

    /// HAProxy, nginx or mitmproxy; not pinproxy's own `serve` process.
    var isPeer: Bool { name != Self.pinproxyServeName }

    /// mitmproxy's `mitmdump` in reverse mode, quiet, not verifying the
    /// origin's throwaway certificate, with its own CA in `directory`.
    static func mitmdump(_ executable: String, originPort: Int, directory: String) throws -> PeerProxy {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw PinproxyError(.io, "no mitmdump at \(executable) (make bench PEERS=1 installs one)")
        }
        let version = (try? BenchTools.run(executable, ["--version"]))?
            .split(separator: "\n").first { $0.hasPrefix("Mitmproxy:") }?
            .split(separator: " ").last.map(String.init) ?? "?"
        let port = try BenchTools.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--mode", "reverse:https://127.0.0.1:\(originPort)", "--listen-host", "127.0.0.1",
                             "--listen-port", String(port), "--ssl-insecure", "--quiet",
                             "--set", "confdir=\(directory)/mitmproxy"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let peer = PeerProxy(name: "mitmproxy \(version)", port: port, process: process)
        do {
            try BenchTools.waitForPort(port, seconds: 60)
        } catch {
            peer.stop()
            throw error
        }
        return peer
    }

    /// HAProxy or nginx (``PeerConfigs``) in front of the origin, its config
    /// checked by the peer itself first, and answering 200 for `/small`
    /// through itself (the client verifying the peer's leaf against `clientCA`)
    /// before it is handed back.
    static func server(_ kind: String, originPort: Int, files: PeerConfigs.Files, clientCA: String,
                       directory: String, curl: String) throws -> PeerProxy {
        let executable = try PeerConfigs.executable(kind)
        let port = try BenchTools.freePort()
        let setup = try PeerConfigs.write(kind, port: port, originPort: originPort, files: files, directory: directory)
        let checked = try PeerConfigs.check(executable, setup.check)
        guard checked.status == 0 else {
            throw PinproxyError(.io, "\(kind) refuses its config \(setup.config): \(checked.stderr.split(separator: "\n").first ?? "")")
        }
        // `nginx -v` writes to standard error, `haproxy -v` to standard output.
        let banner = kind == "nginx" ? (try? PeerConfigs.check(executable, ["-v"]))?.stderr : try? BenchTools.run(executable, ["-v"])
        let version = (banner ?? "").split(whereSeparator: { $0 == " " || $0 == "/" || $0 == "\n" })
            .first { $0.first?.isNumber == true }.map { " " + $0.split(separator: "-")[0] } ?? ""
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = setup.run
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let peer = PeerProxy(name: kind + version, port: port, process: process, killHard: true)
        do {
            try BenchTools.waitForPort(port)
            try BenchTools.expect200(curl, "https://127.0.0.1:\(port)/small", caFile: clientCA, what: "\(kind) in front of the origin")
        } catch {
            peer.stop()
            throw error
        }
        return peer
    }

    /// The `--peers` name of the path that runs pinproxy as a `serve` process.
    static let pinproxyServeKind = "pinproxy-serve"
    /// Its path's name in the tables.
    static let pinproxyServeName = "pinproxy serve"

    /// pinproxy itself as a `serve` process of its own, started by the
    /// benchmark as the peers are, so that it can be set beside pinproxy
    /// running inside the benchmark's process: the same executable, the
    /// benchmark's CA (so the clients verify it alike), reverse mode to the
    /// origin verified against its CA, `--log-level error` without
    /// `--admin` (no flow built). Not a peer: never the best peer.
    static func pinproxyServe(originPort: Int, originCA: String, authority: CertificateAuthority, clientCA: String,
                              directory: String, curl: String) throws -> PeerProxy {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
              executable.hasSuffix("/pinproxy") else {
            throw PinproxyError(.io, "\(pinproxyServeKind) runs the pinproxy executable the benchmark runs from, and this process is not one")
        }
        let caDirectory = directory + "/serve-ca"
        try FileManager.default.createDirectory(atPath: caDirectory, withIntermediateDirectories: true)
        _ = try CADirectory(path: caDirectory).store(authority, overwrite: true)
        let port = try BenchTools.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--ca-dir", caDirectory, "--mode", "reverse:https://127.0.0.1:\(originPort)",
                             "--listen", "127.0.0.1:\(port)", "--upstream-ca", originCA, "--log-level", "error"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let peer = PeerProxy(name: pinproxyServeName, port: port, process: process, killHard: true)
        do {
            try BenchTools.waitForPort(port, seconds: 30)
            try BenchTools.expect200(curl, "https://127.0.0.1:\(port)/small", caFile: clientCA, what: "pinproxy serve in front of the origin")
        } catch {
            peer.stop()
            throw error
        }
        return peer
    }

    func stop() {
        if process.isRunning {
            if killHard { kill(process.processIdentifier, SIGKILL) } else { process.terminate() }
            process.waitUntilExit()
        }
    }
}
