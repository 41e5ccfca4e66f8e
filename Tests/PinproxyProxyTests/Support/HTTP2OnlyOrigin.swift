import Foundation
import PinproxyBase

/// An HTTPS origin that speaks only HTTP/2: Debian's `nghttpd` on an
/// ephemeral loopback port. Offered anything but `h2` it completes the
/// handshake without ALPN and closes. It serves `/bulk` (`bulkBytes` of a
/// repeating pattern) and `/small`, echoes POST and PUT bodies, and sends
/// the trailer `x-origin-trailer: done` after every body (with `trailers`). With `verbose`,
/// its log (``log``) names every frame it sends.
final class HTTP2OnlyOrigin: @unchecked Sendable {
    let port: Int
    let directory: TemporaryDirectory
    let bulk: [UInt8]
    private let process: Process
    private let logPath: String

    init(_ f: Fixtures, bulkBytes: Int = 9 << 20, trailers: Bool = true, verbose: Bool = false) throws {
        guard let nghttpd = findExecutable("/usr/sbin/nghttpd", "nghttpd") else { throw HarnessError("nghttpd not found (apt-get install nghttp2-server)") }
        directory = try TemporaryDirectory()
        let www = directory.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        bulk = (0..<bulkBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
        try FileIO.write(bulk, to: www + "/bulk", mode: 0o644)
        try FileIO.write(Array("small body\n".utf8), to: www + "/small", mode: 0o644)
        port = try NginxOrigin.freePort()
        logPath = directory.file("nghttpd.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process = Process()
        let arguments = ["--address=127.0.0.1", "--echo-upload", "-d", www]
            + (trailers ? ["--trailer=x-origin-trailer: done"] : []) + (verbose ? ["-v"] : []) + [String(port), f.originKeyPath, f.originChainPath]
        // Line-buffered, so that the log is current while it runs.
        if let stdbuf = findExecutable("/usr/bin/stdbuf", "stdbuf") {
            process.executableURL = URL(fileURLWithPath: stdbuf)
            process.arguments = ["-oL", "-eL", nghttpd] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: nghttpd)
            process.arguments = arguments
        }
        let log = FileHandle(forWritingAtPath: logPath)
        process.standardOutput = log
        process.standardError = log
        try process.run()
        if NginxOrigin.waitUntilListening(port) { return }
        stop(process)
        throw HarnessError("nghttpd did not start")
    }

    /// What nghttpd logged so far (with `verbose`, a line per frame).
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Connections it closed because the client did not offer `h2`.
    var refusedConnections: Int { log.components(separatedBy: "Client did not advertise HTTP/2 protocol").count - 1 }

    /// Body bytes it sent in DATA frames (`verbose` only).
    var dataBytesSent: Int {
        var total = 0
        for line in log.split(separator: "\n") where line.contains("send DATA frame <length=") {
            let after = line.split(separator: "<length=", maxSplits: 1).last ?? ""
            total += Int(after.prefix { $0.isNumber }) ?? 0
        }
        return total
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// `openssl s_server` with ALPN `foo` only: it refuses every other offer
/// (`http/1.1` and `h2` alike) with the alert `no_application_protocol`.
final class NoProtocolOrigin: @unchecked Sendable {
    let port: Int
    private let process: Process

    init(_ f: Fixtures) throws {
        guard let openssl = findExecutable("/usr/bin/openssl", "openssl") else { throw HarnessError("openssl not found") }
        port = try NginxOrigin.freePort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", f.originChainPath, "-key", f.originKeyPath,
                             "-alpn", "foo", "-www", "-quiet"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = Pipe()
        try process.run()
        if NginxOrigin.waitUntilListening(port) { return }
        stop(process)
        throw HarnessError("openssl s_server did not start")
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
