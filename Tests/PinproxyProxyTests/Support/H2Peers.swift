import Foundation
import PinproxyProxy

/// The python HTTP/2 peers of the HTTP/2 end-to-end tests (Support/h2_*.py,
/// python3-h2 for the origin and the well-behaved client, raw frames for the
/// client that breaks the protocol).
enum H2Peers {
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// The python3 with python3-h2, or nil (the tests then say so).
    static var python: String? { pythonWith("h2") }

    /// Runs Support/h2_raw_client.py: `kind` of misbehaviour, through the proxy at
    /// `proxyPort`, after CONNECT to `connect` when given (else reverse mode).
    static func rawClient(_ kind: String, proxyPort: Int, connect: String?) throws -> ProcessResult {
        guard let python else { throw HarnessError("python3 with h2 (python3-h2) not found") }
        var args = [script("h2_raw_client.py"), kind, "--port", String(proxyPort)]
        if let connect { args += ["--connect", connect] }
        return try runProcess(python, args, timeout: 60)
    }

    /// Runs Support/h2_client.py `scenario` through the proxy, after CONNECT to `connect`.
    static func client(_ scenario: String, proxyPort: Int, connect: String, originLog: String? = nil, path: String? = nil,
                       arguments extra: [String] = []) throws -> ProcessResult {
        guard let python else { throw HarnessError("python3 with h2 (python3-h2) not found") }
        var args = [script("h2_client.py"), scenario, "--port", String(proxyPort), "--connect", connect] + extra
        if let originLog { args += ["--origin-log", originLog] }
        if let path { args += ["--path", path] }
        return try runProcess(python, args, timeout: 90)
    }
}

/// Support/h2_origin.py: an HTTPS origin that speaks HTTP/2 only, on an
/// ephemeral loopback port, logging what reached it.
final class H2Origin: @unchecked Sendable {
    let directory: TemporaryDirectory
    let origin: Origin
    var port: Int { origin.port }
    var logPath: String { directory.file("origin.log") }

    /// `goAwayAfter`: each connection sends GOAWAY with its Nth request, with
    /// `goAwayCode` as its error code.
    init(chain: String, key: String, goAwayAfter: Int? = nil, goAwayCode: Int = 0) throws {
        guard H2Peers.python != nil else { throw HarnessError("python3 with h2 (python3-h2) not found") }
        directory = try TemporaryDirectory()
        var args = [H2Peers.script("h2_origin.py"), "--cert", chain, "--key", key, "--log", directory.file("origin.log")]
        if let goAwayAfter { args += ["--goaway-after", String(goAwayAfter), "--goaway-code", String(goAwayCode)] }
        origin = try Origin(arguments: args)
    }

    convenience init(_ f: Fixtures, goAwayAfter: Int? = nil, goAwayCode: Int = 0) throws {
        try self.init(chain: f.originChainPath, key: f.originKeyPath, goAwayAfter: goAwayAfter, goAwayCode: goAwayCode)
    }

    /// The log's lines, split into words.
    var log: [[String]] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    }

    /// The paths of the requests that reached the origin.
    var requestPaths: [String] { log.filter { $0.first == "REQUEST" && $0.count >= 4 }.map { $0[3] } }
}

/// Waits (bounded) until the proxy recorded `count` flows that satisfy `predicate`.
func waitForFlows(_ proxy: RunningProxy, count: Int, timeout: TimeInterval = 10,
                  where predicate: (Flow) -> Bool = { _ in true }) -> [Flow] {
    let deadline = Date().addingTimeInterval(timeout)
    var flows: [Flow] = []
    while Date() < deadline {
        flows = proxy.server.recorder.recent.flows.filter(predicate)
        if flows.count >= count { break }
        usleep(50_000)
    }
    return flows
}
