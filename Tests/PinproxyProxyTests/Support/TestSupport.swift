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

    /// `port`: a given one (another origin's, once it stopped) instead of an ephemeral one.
    convenience init(chain: String?, key: String?, port: Int? = nil) throws {
        var args = [Origin.scriptPath]
        if let chain, let key { args += ["--cert", chain, "--key", key] }
        if let port { args += ["--port", String(port)] }
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
         logLines: Locked<[String]>? = nil) throws {
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
                                harPath: harPath, eventsPath: eventsPath, logger: logger)
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

/// A blocking loopback TCP client with receive timeouts, for raw protocol tests.
final class RawClient {
    let fd: Int32
    private var closed = false

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { close(fd); throw HarnessError("connect to \(port) failed: \(String(cString: strerror(errno)))") }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until `predicate` holds for what was read, EOF, or the timeout.
    func receive(timeout: TimeInterval = 10, until predicate: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
        var all: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            all += buffer[0..<n]
            if predicate(all) { break }
        }
        return all
    }

    /// Reads until the peer closes (or the timeout); returns the text read.
    func receiveText(timeout: TimeInterval = 10, until marker: String? = nil) -> String {
        let bytes = receive(timeout: timeout) { bytes in
            guard let marker else { return false }
            return String(decoding: bytes, as: UTF8.self).contains(marker)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether the peer closed the connection within `timeout` (reads and discards).
    func closedByPeer(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
        return false
    }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN, as a client that crashed or lost its network.
    func resetClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RD))
        close(fd)
        closed = true
    }

    deinit { if !closed { close(fd) } }
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Open descriptors of this process that are TCP sockets, other than
/// listening ones, with a local or remote port in `ports`: the connections
/// of one proxy and its origins, unaffected by other tests running
/// alongside in the same process.
func openSocketCount(ports: Set<Int>) throws -> Int {
    // inode -> (local port, remote port, listening) from the kernel's tables.
    var sockets: [String: (local: Int, remote: Int, listening: Bool)] = [:]
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        // Read to the end: the kernel serves these tables a page at a time.
        guard let handle = FileHandle(forReadingAtPath: table) else { continue }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9 else { continue }
            func port(_ address: Substring) -> Int { address.split(separator: ":").last.flatMap { Int($0, radix: 16) } ?? -1 }
            sockets[String(fields[9])] = (port(fields[1]), port(fields[2]), fields[3] == "0A")
        }
    }
    #expect(!sockets.isEmpty, "no TCP sockets listed in /proc/self/net")
    var count = 0
    for fd in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
              target.hasPrefix("socket:["), let inode = target.dropFirst(8).split(separator: "]").first,
              let socket = sockets[String(inode)], !socket.listening else { continue }
        if ports.contains(socket.local) || ports.contains(socket.remote) { count += 1 }
    }
    return count
}

/// A minimal TLS 1.2/1.3 ClientHello carrying `serverName` bytes as SNI, verbatim.
func clientHello(serverName: [UInt8]) -> [UInt8] {
    func u16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
    var sni: [UInt8] = [0x00] + u16(serverName.count) + serverName
    sni = u16(sni.count) + sni
    var extensions: [UInt8] = u16(0x0000) + u16(sni.count) + sni
    // supported_groups: x25519, secp256r1
    extensions += u16(0x000a) + u16(6) + u16(4) + u16(0x001d) + u16(0x0017)
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256
    extensions += u16(0x000d) + u16(8) + u16(6) + u16(0x0403) + u16(0x0804) + u16(0x0401)
    var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 7, count: 32) + [0x00]
    body += u16(4) + u16(0xc02b) + u16(0xc02f)  // ECDHE-ECDSA/RSA-AES128-GCM-SHA256
    body += [0x01, 0x00]
    body += u16(extensions.count) + extensions
    let handshake: [UInt8] = [0x01, 0x00] + u16(body.count) + body
    return [0x16, 0x03, 0x01] + u16(handshake.count) + handshake
}

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
