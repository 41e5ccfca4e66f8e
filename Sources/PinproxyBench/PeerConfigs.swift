import Foundation
import PinproxyCertificates

/// HAProxy and nginx set up to do exactly what pinproxy's reverse mode does
/// in the proxy benchmark: terminate the client's TLS with a leaf from a
/// throwaway CA, open verified TLS to the benchmark origin (its name checked
/// as `localhost`, which the origin's leaf carries), and relay HTTP, reusing
/// upstream connections. The configs are text so that a test can hand them to
/// `haproxy -c` and `nginx -t`.
enum PeerConfigs {
    /// The kinds of peer `bench proxy --peers` knows.
    /// `haproxy-h2` is HAProxy offering `h2` to the origin as well
    /// (`alpn h2,http/1.1` on the server line, as pinproxy offers both):
    /// the same protocols on both legs as pinproxy relays, where `haproxy`
    /// and `nginx` speak HTTP/1.1 to the origin whatever the client spoke.
    static let names = ["haproxy", "haproxy-h2", "nginx"]

    /// The files a peer reads: its leaf and key (separate and as HAProxy's
    /// combined PEM) and the origin's CA to verify the upstream against.
    struct Files {
        var certificate: String
        var key: String
        var combined: String
        var originCA: String

        /// Writes a leaf for 127.0.0.1 and localhost forged by `authority` into `directory`.
        static func write(authority: CertificateAuthority, originCA: String, directory: String) throws -> Files {
            let leaf = try LeafForger(authority: authority).forge(hostNames: ["localhost", "127.0.0.1"])
            let chain = leaf.chain.map { $0.pemEncoded }.joined(), key = try leaf.privateKey.pemEncoded()
            let files = Files(certificate: directory + "/peer.pem", key: directory + "/peer-key.pem",
                              combined: directory + "/peer-combined.pem", originCA: originCA)
            try FileIO.write(Array(chain.utf8), to: files.certificate, mode: 0o644)
            try FileIO.write(Array(key.utf8), to: files.key, mode: 0o600)
            try FileIO.write(Array((chain + key).utf8), to: files.combined, mode: 0o600)
            return files
        }
    }

    /// HAProxy: one thread (as the origin has one nginx worker), upstream
    /// connections shared across clients (`http-reuse always`), the upstream
    /// verified against the origin's CA; h2 and HTTP/1.1 offered to clients.
    static func haproxy(port: Int, originPort: Int, files: Files, http2Upstream: Bool = false) -> String {
        """
        global
          nbthread 1
          maxconn 8192
          tune.ssl.default-dh-param 2048
        defaults
          mode http
          timeout connect 10s
          timeout client 60s
          timeout server 60s
          http-reuse always
        frontend relay
          bind 127.0.0.1:\(port) ssl crt \(files.combined) alpn h2,http/1.1
          default_backend origin
        backend origin
          server origin 127.0.0.1:\(originPort) ssl verify required ca-file \(files.originCA) sni str(localhost) verifyhost localhost\(http2Upstream ? " alpn h2,http/1.1" : "")

        """
    }

    /// nginx as a reverse proxy: one worker, `proxy_pass https://` to an
    /// upstream block keeping 64 idle connections, the upstream verified;
    /// responses streamed rather than spooled to disk
    /// (`proxy_max_temp_file_size 0`), so the bulk load measures the relay.
    /// TLS 1.3 to the origin, as pinproxy and HAProxy speak: nginx before
    /// 1.23.1 offers upstreams TLS 1.2 at most unless `proxy_ssl_protocols`
    /// says otherwise, and TLS 1.2 records cost both ends less per request
    /// (docs/proxy.md, "TLS 1.2 to the origin"), which is other work.
    static func nginx(port: Int, originPort: Int, files: Files, directory: String) -> String {
        """
        daemon off; master_process off; worker_processes 1; pid \(directory)/peer-nginx.pid;
        error_log \(directory)/peer-nginx-error.log error; worker_rlimit_nofile 16384;
        events { worker_connections 8192; }
        http {
          access_log off; keepalive_requests 1000000; keepalive_timeout 60;
          client_body_temp_path \(directory)/peer-nginx-body; proxy_temp_path \(directory)/peer-nginx-proxy;
          upstream origin { server 127.0.0.1:\(originPort); keepalive 64; }
          server {
            listen 127.0.0.1:\(port) ssl http2;
            ssl_certificate \(files.certificate); ssl_certificate_key \(files.key);
            ssl_protocols TLSv1.2 TLSv1.3;
            location / {
              proxy_pass https://origin;
              proxy_http_version 1.1;
              proxy_set_header Connection "";
              proxy_ssl_verify on;
              proxy_ssl_trusted_certificate \(files.originCA);
              proxy_ssl_name localhost;
              proxy_ssl_server_name on;
              proxy_ssl_session_reuse on;
              proxy_ssl_protocols TLSv1.2 TLSv1.3;
              proxy_max_temp_file_size 0;
            }
          }
        }

        """
    }

    /// The peer's executable, or an error naming the Debian package.
    static func executable(_ name: String) throws -> String {
        let program = name == "haproxy-h2" ? "haproxy" : name
        guard let path = BenchTools.find(program, in: ["/usr/sbin", "/usr/bin", "/usr/local/sbin"]) else {
            throw PinproxyError(.io, "\(program) is needed for --peers (apt-get install \(program == "nginx" ? "nginx-light" : program))")
        }
        return path
    }

    /// Writes `name`'s config for `port` into `directory` and returns its
    /// path with the arguments that check it and that run it in the foreground.
    static func write(_ name: String, port: Int, originPort: Int, files: Files, directory: String)
        throws -> (config: String, check: [String], run: [String]) {
        switch name {
        case "haproxy", "haproxy-h2":
            let config = directory + "/peer-\(name).cfg"
            let text = haproxy(port: port, originPort: originPort, files: files, http2Upstream: name == "haproxy-h2")
            try FileIO.write(Array(text.utf8), to: config, mode: 0o644)
            return (config, ["-c", "-q", "-f", config], ["-db", "-f", config])
        case "nginx":
            let config = directory + "/peer-nginx.conf"
            try FileIO.write(Array(nginx(port: port, originPort: originPort, files: files, directory: directory).utf8), to: config, mode: 0o644)
            let base = ["-p", directory, "-c", config, "-e", directory + "/peer-nginx-error.log"]
            return (config, base + ["-t", "-q"], base)
        default:
            throw PinproxyError(.invalidArgument, "unknown peer '\(name)' (\(names.joined(separator: ", ")))")
        }
    }

    /// Runs `executable` with `arguments` and returns its exit status and
    /// standard error (where both peers report a config they refuse).
    static func check(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
