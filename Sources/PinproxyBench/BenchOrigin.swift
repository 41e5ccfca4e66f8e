import Foundation
import PinproxyCertificates
import PinproxyProxy

/// The benchmark's HTTPS origin: nginx with one worker, a throwaway CA and
/// leaf (for localhost, 127.0.0.1 and `hostNames`), a 1 KiB `/small`, a
/// `/bulk` of the asked size and `/upload`, which takes a body of up to
/// 1 MiB and answers `ok`; in a temporary directory removed on ``stop()``.
/// With `http2`, it offers `h2` by ALPN as well as HTTP/1.1 (a client that
/// offers no `h2` still gets HTTP/1.1).
final class BenchOrigin {
    let directory: String
    let port: Int
    let caPath: String
    private let process: Process

    /// - Parameter connections: nginx's `worker_connections`; its descriptor
    ///   limit is set to twice that.
    /// - Parameter keepAliveSeconds: how long nginx keeps an idle connection
    ///   (HTTP/1.1 and HTTP/2 alike); a benchmark that holds idle connections
    ///   longer than this would see the origin close them.
    init(bulkMegabytes: Int, hostNames: [String] = [], connections: Int = 4096, http2: Bool = false,
         keepAliveSeconds: Int = 60) throws {
        guard let nginx = BenchTools.find("nginx", in: ["/usr/sbin", "/usr/bin", "/usr/local/sbin"]) else {
            throw PinproxyError(.io, "nginx is needed as the benchmark origin (apt-get install nginx)")
        }
        directory = NSTemporaryDirectory() + "pinproxy-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        var options = CertificateAuthority.Options()
        options.commonName = "pinproxy bench origin CA"
        let originCA = try CertificateAuthority.create(options)
        let leaf = try LeafForger(authority: originCA).forge(hostNames: ["localhost", "127.0.0.1"] + hostNames)
        try FileIO.write(Array(leaf.chain.map { $0.pemEncoded }.joined().utf8), to: directory + "/origin.pem", mode: 0o644)
        try FileIO.write(Array(try leaf.privateKey.pemEncoded().utf8), to: directory + "/origin-key.pem", mode: 0o600)
        caPath = directory + "/origin-ca.pem"
        try FileIO.write(Array(originCA.certificate.pemEncoded.utf8), to: caPath, mode: 0o644)
        try FileIO.write(Array(String(repeating: "x", count: 1024).utf8), to: directory + "/www/small", mode: 0o644)
        try BenchTools.writeZeros(directory + "/www/bulk", megabytes: bulkMegabytes)

        port = try BenchTools.freePort()
        let config = """
            daemon off; master_process off; worker_processes 1; pid \(directory)/nginx.pid;
            error_log \(directory)/error.log error; worker_rlimit_nofile \(2 * connections);
            events { worker_connections \(connections); }
            http {
              access_log off; sendfile on; keepalive_requests 1000000; keepalive_timeout \(keepAliveSeconds);
              server {
                listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                ssl_certificate \(directory)/origin.pem; ssl_certificate_key \(directory)/origin-key.pem;
                ssl_protocols TLSv1.2 TLSv1.3;
                root \(directory)/www;
                location /upload { client_max_body_size 1m; return 200 "ok\\n"; }
                location = /protocol { return 200 "$server_protocol\\n"; }
                location = /tls { return 200 "$ssl_protocol\\n"; }
              }
            }
            """
        try FileIO.write(Array(config.utf8), to: directory + "/nginx.conf", mode: 0o644)
        process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/error.log"]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        do {
            try BenchTools.waitForPort(port)
        } catch {
            stop()
            throw error
        }
    }

    var pid: Int32 { process.processIdentifier }

    func stop() {
        if process.isRunning {
            // SIGKILL, not SIGTERM: nginx inherits its parent thread's signal
            // mask, and a Dispatch worker thread (a test's) blocks SIGTERM, so
            // an nginx started there never sees it. Nothing of this origin
            // needs a graceful end.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
