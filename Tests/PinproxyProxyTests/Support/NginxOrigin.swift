import Foundation
import PinproxyBase

/// An HTTPS origin served by Debian's nginx on an ephemeral loopback port,
/// with HTTP/2 (ALPN `h2`) or HTTP/1.1 only: `/small` (1 KiB), `/bulk`
/// (`bulkBytes` of zeros), `/upload` (takes any body, answers `ok`), and
/// a `bulk-N` file per stream for many-stream tests. `keepaliveRequests`
/// makes nginx send GOAWAY after that many requests on a connection.
final class NginxOrigin: @unchecked Sendable {
    let port: Int
    let directory: TemporaryDirectory
    let bulkBytes: Int
    private let process: Process

    /// `tls: false` listens for plain HTTP/1.1 (a reverse-mode `http://` origin).
    /// `locations` are more `location` blocks for the server.
    init(_ f: Fixtures, http2: Bool, tls: Bool = true, bulkBytes: Int = 8 << 20, keepaliveRequests: Int = 100000,
         locations: String = "") throws {
        guard let nginx = findExecutable("/usr/sbin/nginx", "nginx") else { throw HarnessError("nginx not found") }
        directory = try TemporaryDirectory()
        self.bulkBytes = bulkBytes
        let www = directory.file("www")
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try FileIO.write(Array(String(repeating: "x", count: 1024).utf8), to: www + "/small", mode: 0o644)
        try FileIO.write([UInt8](repeating: 0x61, count: bulkBytes), to: www + "/bulk", mode: 0o644)
        port = try Self.freePort()
        let dir = directory.path
        let config = """
            daemon off; master_process off; worker_processes 1; pid \(dir)/nginx.pid;
            error_log \(dir)/error.log error;
            events { worker_connections 512; }
            http {
              access_log off; client_body_temp_path \(dir)/body; proxy_temp_path \(dir)/proxy;
              fastcgi_temp_path \(dir)/fcgi; uwsgi_temp_path \(dir)/uwsgi; scgi_temp_path \(dir)/scgi;
              keepalive_requests \(keepaliveRequests); http2_max_concurrent_streams 128;
              server {
                \(tls ? "listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");" : "listen 127.0.0.1:\(port);")
                \(tls ? "ssl_certificate \(f.originChainPath); ssl_certificate_key \(f.originKeyPath);" : "")
                \(tls ? "ssl_protocols TLSv1.2 TLSv1.3;" : "")
                root \(www);
                client_max_body_size 0;
                location /upload { client_body_buffer_size 1m; proxy_pass \(tls ? "https" : "http")://127.0.0.1:\(port)/sink; }
                location /sink { return 200 "ok\\n"; }
                \(locations)
              }
            }
            """
        try FileIO.write(Array(config.utf8), to: directory.file("nginx.conf"), mode: 0o644)
        process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", dir, "-c", directory.file("nginx.conf"), "-e", directory.file("error.log")]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        if Self.waitUntilListening(port) { return }
        stop(process)
        throw HarnessError("nginx did not start: \((try? String(contentsOfFile: directory.file("error.log"), encoding: .utf8)) ?? "")")
    }

    deinit {
        // SIGKILL: nginx without a master process may wait on open connections.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw HarnessError("bind failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts connections on 127.0.0.1:`port` within 20 s (a server just started).
    static func waitUntilListening(_ port: Int) -> Bool {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if accepts(port) { return true }
            usleep(50_000)
        }
        return false
    }

    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
