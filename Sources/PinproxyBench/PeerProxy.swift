import Foundation
import PinproxyCertificates

/// Another proxy run beside pinproxy under the same load: started in reverse
/// mode in front of the benchmark origin, stopped after the run.
final class PeerProxy {
    let name: String
    let port: Int
    private let process: Process

    private init(name: String, port: Int, process: Process) {
        self.name = name
        self.port = port
        self.process = process
    }

    var pid: Int32 { process.processIdentifier }

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

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
