import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy
import Testing

/// Errors in the test harness itself.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String
    init() throws {
        let base = NSTemporaryDirectory() + "pinproxy-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = base
    }
    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Ends a helper process for certain and reaps it. Processes started from a test
/// thread inherit its blocked signal mask, SIGTERM included, so `terminate()`
/// may do nothing; SIGKILL cannot be blocked.
func stop(_ process: Process) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}

/// The result of a finished subprocess.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var timedOut: Bool
}

/// Runs a program with arguments, feeding `input`, killing it after `timeout` seconds.
func runProcess(_ executable: String, _ arguments: [String], input: [UInt8]? = nil,
                environment: [String: String]? = nil, timeout: TimeInterval = 30) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inp
    try process.run()
    if let input { inp.fileHandleForWriting.write(Data(input)) }
    try? inp.fileHandleForWriting.close()
    let collected = Locked<(Data, Data)>((Data(), Data()))
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        let d = out.fileHandleForReading.readDataToEndOfFile()
        collected.withLock { $0.0 = d }
        group.leave()
    }
    group.enter()
    DispatchQueue.global().async {
        let d = err.fileHandleForReading.readDataToEndOfFile()
        collected.withLock { $0.1 = d }
        group.leave()
    }
    var timedOut = false
    if group.wait(timeout: .now() + timeout) == .timedOut {
        timedOut = true
        process.terminate()
        kill(process.processIdentifier, SIGKILL)
        _ = group.wait(timeout: .now() + 5)
    }
    process.waitUntilExit()
    let (o, e) = collected.withLock { $0 }
    return ProcessResult(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                         stderr: String(decoding: e, as: UTF8.self), timedOut: timedOut)
}

/// The first executable found on PATH (or at an absolute path).
func findExecutable(_ names: String...) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for name in names {
        if name.hasPrefix("/") { if FileManager.default.isExecutableFile(atPath: name) { return name } else { continue } }
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
    }
    return nil
}

/// A python3 that can `import module`, if any.
func pythonWith(_ module: String) -> String? {
    for candidate in ["/usr/bin/python3", findExecutable("python3")].compactMap({ $0 }) {
        if let r = try? runProcess(candidate, ["-c", "import \(module)"], timeout: 20), r.status == 0 { return candidate }
    }
    return nil
}

/// Certificates generated for one test: an origin CA with a leaf for
/// localhost/127.0.0.1 and one for another name only, a second unrelated CA
/// with its own leaf, and the proxy CA.
struct Fixtures {
    let directory: TemporaryDirectory
    let originCA: CertificateAuthority
    let proxyCA: CertificateAuthority
    var originCAPath: String { directory.file("origin-ca.pem") }
    var originChainPath: String { directory.file("origin-chain.pem") }
    var originKeyPath: String { directory.file("origin-key.pem") }
    /// Issued by the origin CA for `other.test` only: trusted, but not for localhost or 127.0.0.1.
    var otherNameChainPath: String { directory.file("other-name-chain.pem") }
    var otherNameKeyPath: String { directory.file("other-name-key.pem") }
    var untrustedChainPath: String { directory.file("untrusted-chain.pem") }
    var untrustedKeyPath: String { directory.file("untrusted-key.pem") }
    var proxyCAPath: String { directory.file("proxy-ca.pem") }
    /// curl's `sha256//...` pin of the genuine origin key.
    let originPin: String

    init() throws {
        directory = try TemporaryDirectory()
        var options = CertificateAuthority.Options()
        options.commonName = "Origin Test CA"
        originCA = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: originCA, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost", "127.0.0.1", "origin.test"])
        let otherName = try LeafForger(authority: originCA, keyStrategy: .freshPerLeaf).forge(hostNames: ["other.test"])
        options.commonName = "Untrusted Test CA"
        let other = try CertificateAuthority.create(options)
        let untrusted = try LeafForger(authority: other, keyStrategy: .freshPerLeaf).forge(hostNames: ["localhost", "127.0.0.1"])
        proxyCA = try CertificateAuthority.create()
        originPin = leaf.certificate.spkiPin.curl
        try FileIO.write(Array(originCA.certificate.pemEncoded.utf8), to: directory.file("origin-ca.pem"), mode: 0o644)
        try FileIO.write(Array(leaf.chain.map { $0.pemEncoded }.joined().utf8), to: directory.file("origin-chain.pem"), mode: 0o644)
        try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: directory.file("origin-key.pem"), mode: 0o600)
        try FileIO.write(Array(otherName.chain.map { $0.pemEncoded }.joined().utf8), to: directory.file("other-name-chain.pem"), mode: 0o644)
        try FileIO.write(Array(try otherName.privateKey.pemEncoded().utf8), to: directory.file("other-name-key.pem"), mode: 0o600)
        try FileIO.write(Array(untrusted.chain.map { $0.pemEncoded }.joined().utf8), to: directory.file("untrusted-chain.pem"), mode: 0o644)
        try FileIO.write(Array(try untrusted.privateKey.pemEncoded().utf8), to: directory.file("untrusted-key.pem"), mode: 0o600)
        try FileIO.write(Array(proxyCA.certificate.pemEncoded.utf8), to: directory.file("proxy-ca.pem"), mode: 0o644)
    }
}

/// The test origin (Support/origin.py), HTTPS or plain, on an ephemeral loopback port.
final class Origin: @unchecked Sendable {
    let process: Process
    let port: Int
    private let stdin: Pipe

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("origin.py").path
    }

    /// `port`: a given one (another origin's, once it stopped) instead of an ephemeral one;
    /// `host`: another loopback address to listen on than 127.0.0.1.
    convenience init(chain: String?, key: String?, port: Int? = nil, host: String? = nil) throws {
        var args = [Origin.scriptPath]
        if let chain, let key { args += ["--cert", chain, "--key", key] }
        if let port { args += ["--port", String(port)] }
        if let host { args += ["--host", host] }
        try self.init(arguments: args)
    }

    /// An upstream that fails in one way (Support/misbehaving_upstream.py): `silent`, `close-after-handshake`.
    convenience init(misbehaving mode: String, chain: String? = nil, key: String? = nil) throws {
        let script = URL(fileURLWithPath: Origin.scriptPath).deletingLastPathComponent().appendingPathComponent("misbehaving_upstream.py").path
        var args = [script, mode]
        if let chain, let key { args += ["--cert", chain, "--key", key] }
        try self.init(arguments: args)
    }

    /// Another script of Support/ that prints "READY <port>" (h2_frames_origin.py), with a certificate.
    convenience init(script name: String, chain: String, key: String, arguments extra: [String] = []) throws {
        let script = URL(fileURLWithPath: Origin.scriptPath).deletingLastPathComponent().appendingPathComponent(name).path
        try self.init(arguments: [script, "--cert", chain, "--key", key] + extra)
    }

    init(arguments args: [String]) throws {
        guard let python = findExecutable("/usr/bin/python3", "python3") else { throw HarnessError("python3 not found") }
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = args
        let out = Pipe()
        stdin = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var buffer = Data()
            while true {
                let d = out.fileHandleForReading.availableData
                if d.isEmpty { break }
                buffer += d
                if buffer.contains(0x0a) { break }
            }
            line.withLock { $0 = String(decoding: buffer, as: UTF8.self) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success,
              let text = line.withLock({ $0 }), text.hasPrefix("READY "),
              let port = Int(text.dropFirst(6).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            stop(process)
            throw HarnessError("the test origin did not start")
        }
        self.port = port
    }

    deinit {
        try? stdin.fileHandleForWriting.close()
        stop(process)
    }
}

/// A proxy started in this process on an ephemeral loopback port.
final class RunningProxy: @unchecked Sendable {
    let server: ProxyServer
    let port: Int
    let admin: AdminServer?
    let daemon: ProxyDaemon?

    /// `logLines`, when given, collects every log line at `info` and above as "level message".
    init(_ fixtures: Fixtures, configure: (inout ProxyConfiguration) -> Void = { _ in },
         admin: Bool = false, harPath: String? = nil, eventsPath: String? = nil,
         logLines: Locked<[String]>? = nil, keepsRecentFlows: Bool = true) throws {
        var c = ProxyConfiguration()
        c.listen = ListenAddress(host: "127.0.0.1", port: 0)
        c.upstreamTrust = .file(fixtures.originCAPath)
        c.timeouts.drain = 1
        configure(&c)
        var logger = Logger(label: "pinproxy-test")
        logger.logLevel = .error
        if let logLines {
            logger = Logger(label: "pinproxy-test") { _ in CollectingLogHandler(lines: logLines) }
            logger.logLevel = .info
        }
        let d = try ProxyDaemon(configuration: c, authority: fixtures.proxyCA,
                                adminAddress: admin ? ListenAddress(host: "127.0.0.1", port: 0) : nil,
                                harPath: harPath, eventsPath: eventsPath, keepsRecentFlows: keepsRecentFlows, logger: logger)
        let address = try d.start()
        daemon = d
        server = d.server
        self.admin = d.admin
        port = address.port
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Waits (bounded) until an event of `kind` was recorded.
    func waitForEvent(_ kind: TLSOutcomeEvent.Kind, timeout: TimeInterval = 10) -> TLSOutcomeEvent? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let e = server.recorder.recent.events.first(where: { $0.kind == kind }) { return e }
            usleep(50_000)
        }
        return nil
    }

    deinit { daemon?.stop() }
}

/// Waits (bounded) for a collected log line that satisfies `predicate`.
func waitForLine(in lines: Locked<[String]>, timeout: TimeInterval = 10, where predicate: (String) -> Bool) -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let line = lines.withLock({ $0.first(where: predicate) }) { return line }
        usleep(50_000)
    }
    return nil
}

/// curl with a bounded run time; returns the result.
func curl(_ arguments: [String], timeout: TimeInterval = 30) throws -> ProcessResult {
    guard let curl = findExecutable("curl") else { throw HarnessError("curl not found") }
    return try runProcess(curl, ["-sS", "--max-time", "20"] + arguments, timeout: timeout)
}
