import Foundation
import PinproxyCertificates
import PinproxyTestSupport
import Testing

/// The capture files of a real `pinproxy serve` stopped with SIGTERM while
/// clients are still sending requests.
@Suite("Capture: files of a daemon stopped under load", .timeLimit(.minutes(10)))
struct CaptureDaemonTests {
    @Test("after SIGTERM under load the HAR is valid and holds every response a client received; every JSON line parses")
    func sigtermUnderLoad() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let caDir = f.directory.file("ca"), har = f.directory.file("load.har"), events = f.directory.file("load.jsonl")
        let (daemon, port) = try startDaemon(f, har: har, events: events)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

        // Four clients, each many keep-alive requests; each completed response adds a line to its file.
        let url = "https://localhost:\(origin.port)/hello"
        var clients: [(Process, String)] = []
        for index in 0..<4 {
            let path = f.directory.file("client-\(index).txt")
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            let client = Process()
            client.executableURL = URL(fileURLWithPath: try #require(findExecutable("/usr/bin/curl", "curl")))
            client.arguments = ["-s", "--proxy", "http://127.0.0.1:\(port)", "--cacert", "\(caDir)/pinproxy-ca.pem",
                                "-o", "/dev/null", "-w", "%{http_code}\\n"] + Array(repeating: url, count: 2000)
            client.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            client.standardError = FileHandle.nullDevice
            try client.run()
            clients.append((client, path))
        }
        defer { for (client, _) in clients where client.isRunning { kill(client.processIdentifier, SIGKILL) } }
        func completed() -> Int {
            clients.map { (try? String(contentsOfFile: $0.1, encoding: .utf8))?.split(separator: "\n").filter { $0 == "200" }.count ?? 0 }
                .reduce(0, +)
        }
        let deadline = Date().addingTimeInterval(60)
        while completed() < 100 && Date() < deadline { usleep(50_000) }
        #expect(clients.allSatisfy { $0.0.isRunning }, "the clients finished before the daemon was stopped")

        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()
        #expect(daemon.terminationStatus == 0)
        for (client, _) in clients {
            if client.isRunning { kill(client.processIdentifier, SIGKILL) }
            client.waitUntilExit()
        }
        let received = completed()
        #expect(received >= 100)

        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any])
        let entries = try #require((document["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let answered = entries.filter { ($0["response"] as? [String: Any])?["status"] as? Int == 200 }
        #expect(answered.count >= received, "\(answered.count) entries with status 200, \(received) responses received")
        let ids = entries.compactMap { ($0["_pinproxy"] as? [String: Any])?["id"] as? String }
        #expect(Set(ids).count == entries.count)
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
        var flowLines = 0
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line.prefix(200))")
            if object["type"] as? String == "flow" { flowLines += 1 }
        }
        #expect(flowLines == entries.count)
    }

    /// `pinproxy serve` writing `har` and `events`, and the port it listens on.
    private func startDaemon(_ f: Fixtures, har: String, events: String) throws -> (Process, Int) {
        try CADirectory(path: f.directory.file("ca")).store(f.proxyCA, overwrite: false)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: pinproxyBinary)
        daemon.arguments = ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0", "--upstream-ca", f.originCAPath,
                            "--har", har, "--events", events, "--log-level", "error"]
        let out = Pipe()
        daemon.standardOutput = out
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        let text = serveReadyLine(out)
        guard let port = readyLinePort(text) else {
            if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
            throw HarnessError("no ready line from pinproxy serve: \(text)")
        }
        return (daemon, port)
    }

    @Test("requests on one kept-alive connection that repeat, or almost repeat, the one before are each recorded with their own fields")
    func repeatedRequestsKeepTheirOwnFields() throws {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary)")
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let har = f.directory.file("repeat.har"), events = f.directory.file("repeat.jsonl")
        let (daemon, port) = try startDaemon(f, har: har, events: events)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        // One curl, one connection (--next keeps it): pairs of identical
        // requests, then one field's value or the URL changes.
        let count = 30
        var arguments: [String] = []
        for index in 0..<count {
            if index > 0 { arguments.append("--next") }
            arguments += ["-s", "-o", "/dev/null", "--proxy", "http://127.0.0.1:\(port)", "--cacert", f.directory.file("ca") + "/pinproxy-ca.pem",
                          "-H", "X-Seq: \(index / 2)", "https://localhost:\(origin.port)/bytes/\(index % 3 + 1)"]
        }
        let client = Process()
        client.executableURL = URL(fileURLWithPath: try #require(findExecutable("/usr/bin/curl", "curl")))
        client.arguments = arguments
        try client.run()
        client.waitUntilExit()
        #expect(client.terminationStatus == 0)
        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()

        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any])
        let entries = try #require((document["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        try #require(entries.count == count)
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["flow"] as? [String: Any]
        }
        try #require(lines.count == count)
        func field(_ name: String, _ headers: Any?) -> String? {
            (headers as? [[String: String]])?.first { $0["name"]?.lowercased() == name }?["value"]
        }
        for index in 0..<count {
            let size = index % 3 + 1
            for (format, request, response) in [
                ("HAR", entries[index]["request"] as? [String: Any], entries[index]["response"] as? [String: Any]),
                ("JSON lines", lines[index]["request"] as? [String: Any], lines[index]["response"] as? [String: Any]),
            ] {
                #expect(field("x-seq", request?["headers"]) == "\(index / 2)", "\(format) flow \(index)")
                #expect((request?["url"] as? String)?.hasSuffix("/bytes/\(size)") == true, "\(format) flow \(index)")
                #expect(field("content-length", response?["headers"]) == "\(size)", "\(format) flow \(index)")
            }
        }
    }
}
