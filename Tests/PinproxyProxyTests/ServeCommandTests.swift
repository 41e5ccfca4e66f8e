import Foundation
import PinproxyCertificates
import PinproxyTestSupport
import Testing

/// The built `pinproxy serve` binary: ready line, pid file, SIGTERM exits 0.
@Suite("pinproxy serve (binary)", .timeLimit(.minutes(10)))
struct ServeCommandTests {
    /// The built binary (the Makefile builds it before the tests run); a missing binary fails the test.
    static func requireBinary() throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: pinproxyBinary), "no built pinproxy at \(pinproxyBinary); run 'swift build' first")
        return pinproxyBinary
    }

    @Test("prints one ready line, serves, writes and removes its pid file, exits 0 on SIGTERM")
    func serveLifecycle() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let caDir = f.directory.file("ca"), pidFile = f.directory.file("pid"), events = f.directory.file("events.jsonl")
        try CADirectory(path: caDir).store(f.proxyCA, overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--dir", caDir, "--listen", "127.0.0.1:0", "--upstream-ca", f.originCAPath,
                             "--pid-file", pidFile, "--events", events, "--admin", "127.0.0.1:0"]
        let keyLog = f.directory.file("keys.log")
        var environment = ProcessInfo.processInfo.environment
        environment["SSLKEYLOGFILE"] = keyLog
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let line = Locked<String>("")
        let ready = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var data = Data()
            while !data.contains(0x0a) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data += chunk
            }
            line.withLock { $0 = String(decoding: data, as: UTF8.self) }
            ready.signal()
        }
        #expect(ready.wait(timeout: .now() + 30) == .success)
        let text = line.withLock { $0 }
        #expect(text.hasPrefix("pinproxy ready: forward proxy on 127.0.0.1:"), "\(text)")
        #expect(text.contains("SPKI pin sha256/"))
        let port = try #require(text.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))) })
        #expect(FileManager.default.fileExists(atPath: pidFile))

        let r = try curl(["--proxy", "http://127.0.0.1:\(port)", "--cacert", "\(caDir)/pinproxy-ca.pem", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout == "hello from origin\n", "\(r.stderr)")

        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!process.isRunning)
        if !process.isRunning { #expect(process.terminationStatus == 0) }
        #expect(!FileManager.default.fileExists(atPath: pidFile))
        let recorded = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
        #expect(recorded.contains("intercepted"))
        // NSS key log lines for both legs (client and upstream sessions).
        let keys = (try? String(contentsOfFile: keyLog, encoding: .utf8)) ?? ""
        #expect(keys.components(separatedBy: "CLIENT_TRAFFIC_SECRET_0").count - 1 >= 2, "\(keys.prefix(200))")
        // The secrets decrypt every session: the file the proxy creates is its owner's alone.
        let mode = (try FileManager.default.attributesOfItem(atPath: keyLog)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode.map { $0 & 0o777 } == 0o600, "\(String(mode ?? -1, radix: 8))")
    }

    @Test("refuses a non-loopback listen address without --allow-remote")
    func refusesRemote() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let r = try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "0.0.0.0:0"], timeout: 20)
        #expect(r.status != 0)
        #expect(r.stderr.contains("--allow-remote"), "\(r.stderr)")
    }

    @Test("a bad --upstream-ca is one clear line and exit 2, never a crash",
          arguments: ["missing", "empty", "garbage", "key", "directory"])
    func badUpstreamCA(kind: String) throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let path: String
        switch kind {
        case "missing": path = f.directory.file("nonexistent.pem")
        case "empty": path = f.directory.file("empty.pem"); try Data().write(to: URL(fileURLWithPath: path))
        case "garbage": path = f.directory.file("garbage.pem"); try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        case "key": path = f.originKeyPath
        default: path = f.directory.path
        }
        let r = try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0", "--upstream-ca", path], timeout: 20)
        #expect(!r.timedOut)
        #expect(r.status == 2, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains("cannot read the upstream CA file \(path): "), "\(r.stderr)")
        #expect(!r.stderr.contains("double free"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    @Test("refuses to start with an expired CA, saying so")
    func expiredCA() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        var options = CertificateAuthority.Options()
        options.validityDays = 1
        let expired = try CertificateAuthority.create(options, now: Date().addingTimeInterval(-5 * 86_400))
        let caDir = f.directory.file("expired-ca")
        _ = try CADirectory(path: caDir).store(expired, overwrite: true)
        let r = try runProcess(binary, ["serve", "--dir", caDir, "--listen", "127.0.0.1:0"], timeout: 20)
        #expect(!r.timedOut, "serve started with an expired CA")
        #expect(r.status == 2, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains("the CA expired on"), "\(r.stderr)")
    }

    @Test("--loops out of range is refused with the rule", arguments: ["0", "257"])
    func loopsRange(value: String) throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let r = try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0", "--loops", value], timeout: 20)
        #expect(r.status != 0)
        #expect(r.stderr.contains("--loops must be 1–256"), "\(r.stderr)")
    }

    @Test("a timeout out of range is refused with a message that states the rule",
          arguments: ["--handshake-timeout", "--tunnel-idle-timeout"], ["0", "-1", "86401"])
    func timeoutRange(flag: String, value: String) throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let r = try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0", "\(flag)=\(value)"], timeout: 20)
        #expect(r.status != 0)
        #expect(r.stderr.contains("\(flag) must be more than 0 and at most 86400 seconds"), "\(r.stderr)")
    }

    @Test("--tunnel-idle-timeout ends a raw tunnel that went quiet")
    func tunnelIdleTimeoutFlag() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        try CADirectory(path: f.directory.file("ca")).store(f.proxyCA, overwrite: false)
        let (process, port) = try Self.startServe(binary, ["--dir", f.directory.file("ca"), "--tunnel-idle-timeout", "1"])
        defer { SServer.stop(process) }
        let client = try RawClient(port: port)
        client.send("CONNECT 127.0.0.1:\(plainOrigin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        // Plain HTTP as the first bytes makes it a raw tunnel at once (a client
        // that sent nothing would meet the 10 s handshake deadline instead, with
        // or without the flag); the origin keeps its connection open, so only
        // the tunnel's own idle limit closes it, well before that deadline.
        client.send("GET /tunnelled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 "))
        #expect(client.closedByPeer(timeout: 8), "the idle tunnel stayed open")
    }

    @Test("--handshake-timeout ends a client that never starts TLS after CONNECT; --header-timeout one that never ends its head")
    func handshakeAndHeaderTimeoutFlags() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        try CADirectory(path: f.directory.file("ca")).store(f.proxyCA, overwrite: false)
        // Each flag short and the other long: only the flag that governs the stall can close it in time.
        let (handshakeShort, shortPort) = try Self.startServe(binary, ["--dir", f.directory.file("ca"), "--upstream-ca", f.originCAPath,
                                                                      "--handshake-timeout", "1", "--header-timeout", "120"])
        defer { SServer.stop(handshakeShort) }
        let (headerShort, longPort) = try Self.startServe(binary, ["--dir", f.directory.file("ca"), "--upstream-ca", f.originCAPath,
                                                                  "--handshake-timeout", "120", "--header-timeout", "1"])
        defer { SServer.stop(headerShort) }

        // CONNECT answered, then silence where the TLS ClientHello belongs.
        for (port, closes) in [(shortPort, true), (longPort, false)] {
            let client = try RawClient(port: port)
            client.send("CONNECT localhost:\(origin.port) HTTP/1.1\r\nHost: localhost:\(origin.port)\r\n\r\n")
            #expect(client.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
            #expect(client.closedByPeer(timeout: 6) == closes, "handshake stall, port \(port): \(closes ? "still open" : "closed")")
        }
        // A request head that never ends, straight to the proxy.
        for (port, closes) in [(longPort, true), (shortPort, false)] {
            let client = try RawClient(port: port)
            client.send("GET http://localhost:\(origin.port)/ HTTP/1.1\r\nHost: localhost:\(origin.port)\r\nX-Slow: ")
            #expect(client.closedByPeer(timeout: 6) == closes, "head stall, port \(port): \(closes ? "still open" : "closed")")
        }
    }

    @Test("without --listen, serve takes 127.0.0.1:8080, loopback only (or says that address is taken)")
    func defaultListenAddress() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        try CADirectory(path: f.directory.file("ca")).store(f.proxyCA, overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--dir", f.directory.file("ca")]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let ready = Self.readyLine(out) ?? ""
        SServer.stop(process)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        if ready.isEmpty {
            // Something on this machine holds the port: the refusal names the default address.
            #expect(errors.contains("cannot listen on 127.0.0.1:8080: "), "\(errors)")
        } else {
            #expect(ready.hasPrefix("pinproxy ready: forward proxy on 127.0.0.1:8080;"), "\(ready)")
        }
    }

    @Test("--upstream-hold lets an idle client's upstream go; out of range it is refused")
    func upstreamHoldFlag() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        for bad in ["-1", "86401"] {
            let r = try runProcess(binary, ["serve", "--dir", f.directory.file("ca"), "--listen", "127.0.0.1:0", "--upstream-hold=\(bad)"], timeout: 20)
            #expect(r.status != 0 && r.stderr.contains("--upstream-hold must be 0–86400 seconds"), "\(r.stderr)")
        }
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        try CADirectory(path: f.directory.file("ca")).store(f.proxyCA, overwrite: false)
        let (process, port) = try Self.startServe(binary, ["--dir", f.directory.file("ca"), "--upstream-ca", f.originCAPath,
                                                           "--upstream-hold", "0.3", "--idle-upstream-timeout", "0"])
        defer { SServer.stop(process) }
        // Two requests on one client connection, two seconds apart: the upstream was let go between them.
        let url = "https://localhost:\(origin.port)/peer"
        let r = try curl(["--proxy", "http://127.0.0.1:\(port)", "--cacert", f.proxyCAPath, "--http1.1", "--rate", "30/m",
                          "-w", " %{num_connects}\n", url, url])
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(r.status == 0 && lines.count == 2 && lines[1].last == "0", "\(r.stdout) \(r.stderr)")
        #expect(lines.count == 2 && lines[0].first != lines[1].first, "one upstream connection served both: \(r.stdout)")
    }

    /// `pinproxy serve` on an ephemeral loopback port with `arguments`, and the
    /// port its ready line names; the caller stops the process.
    static func startServe(_ binary: String, _ arguments: [String]) throws -> (Process, port: Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--listen", "127.0.0.1:0"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let ready = readyLine(out),
              let port = ready.split(separator: " ").first(where: { $0.hasPrefix("127.0.0.1:") })
                  .flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))) }) else {
            SServer.stop(process)
            throw HarnessError("serve printed no ready line naming its port")
        }
        return (process, port)
    }

    /// The first line `serve` prints (bounded wait), or nil.
    static func readyLine(_ out: Pipe) -> String? {
        let line = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var data = Data()
            while !data.contains(0x0a) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                data += chunk
            }
            line.withLock { $0 = String(decoding: data, as: UTF8.self) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 30) == .success else { return nil }
        return line.withLock { $0 }
    }
}

/// SIGINT drains for `--drain-timeout`; a second one ends the drain at once, and the capture
/// files still get every flow (the cut exchange recorded as interrupted).
@Suite("serve: a second signal", .timeLimit(.minutes(5)))
struct ServeSecondSignalTests {
    @Test("a second SIGINT ends a long drain at once; the HAR is complete")
    func secondSignalEndsTheDrain() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)  // plain HTTP: the exchange keeps the connection alive
        let caDir = f.directory.file("ca"), har = f.directory.file("flows.har")
        try CADirectory(path: caDir).store(f.proxyCA, overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        // A drain far longer than the test: only the second signal can end it in time.
        process.arguments = ["serve", "--dir", caDir, "--listen", "127.0.0.1:0", "--upstream-ca", f.originCAPath,
                             "--har", har, "--drain-timeout", "600", "--idle-timeout", "900"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let ready = firstLine(out)
        let port = try #require(ready.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: CharacterSet(charactersIn: ";"))) }, "\(ready)")
        // An exchange in progress (a request body of 100 bytes, 10 sent): the drain waits for it.
        let held = try RawClient(port: port)
        held.send("POST http://127.0.0.1:\(origin.port)/hello HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n0123456789")
        // The proxy has the request once the origin's connection is in use: give it a moment.
        usleep(300_000)
        kill(process.processIdentifier, SIGINT)
        let stderrLines = Locked<String>("")
        DispatchQueue.global().async {
            while true {
                let chunk = err.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                stderrLines.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
        var deadline = Date().addingTimeInterval(20)
        while !stderrLines.withLock({ $0.contains("stopping:") }) && Date() < deadline { usleep(20_000) }
        #expect(stderrLines.withLock { $0.contains("a second Ctrl-C ends the drain now") }, "\(stderrLines.withLock { $0 })")
        #expect(process.isRunning, "serve stopped before the second signal: the drain did not wait for the open connection")
        kill(process.processIdentifier, SIGINT)
        // Well inside the exchange's own end (the upstream response timeout, 60 s) and the 600 s drain.
        deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!process.isRunning, "a second SIGINT did not end the 600 s drain")
        #expect(process.terminationStatus == 0)
        #expect(stderrLines.withLock { $0.contains("second signal: closing the connections still open now") })
        // The cut exchange is in the HAR.
        let entries = try HARSupport.entries(atPath: har)
        #expect(entries == 1, "HAR entries: \(entries)")
        withExtendedLifetime((origin, held)) {}
    }

    private func firstLine(_ out: Pipe) -> String {
        var data = Data()
        while !data.contains(0x0a) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            data += chunk
        }
        return String(decoding: data, as: UTF8.self)
    }
}

enum HARSupport {
    /// How many entries the HAR file at `path` holds (it must parse as JSON).
    static func entries(atPath path: String) throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let log = object?["log"] as? [String: Any]
        return (log?["entries"] as? [Any])?.count ?? -1
    }
}
