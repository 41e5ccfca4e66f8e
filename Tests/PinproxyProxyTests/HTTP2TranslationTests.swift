import Foundation
import PinproxyProxy
import Testing

/// HTTP/2 clients through an HTTP/1.1 upstream: each stream translated to an
/// HTTP/1.1 exchange on the proxy's small pool of upstream connections.
@Suite("HTTP/2 translated to HTTP/1.1", .timeLimit(.minutes(10)))
struct HTTP2TranslationTests {
    /// A proxy in reverse mode in front of a plain `http://` origin on `port`.
    static func reverseProxy(_ f: Fixtures, to port: Int, responseTimeout: TimeInterval? = nil) throws -> RunningProxy {
        try RunningProxy(f, configure: { c in
            c.http2 = true
            c.mode = .reverse(scheme: "http", host: .dns("localhost"), port: port)
            if let responseTimeout { c.timeouts.upstreamResponse = responseTimeout }
        })
    }

    static var h2Client: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/h2_bare_client.py").path
    }

    /// `curl --http2` to the reverse proxy's port, as `localhost`.
    static func curlReverse(_ f: Fixtures, _ proxy: RunningProxy, _ arguments: [String], timeout: TimeInterval = 60) throws -> ProcessResult {
        try curl(["--cacert", f.proxyCAPath, "--http2", "--resolve", "localhost:\(proxy.port):127.0.0.1"] + arguments, timeout: timeout)
    }

    @Test("nghttp (h2 only) through the forward proxy to an HTTP/1.1-only origin: 100 concurrent streams, recorded as HTTP/2.0")
    func nghttpForwardToHTTP1() throws {
        let nghttp = try #require(findExecutable("/usr/bin/nghttp", "nghttp"))
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: false, bulkBytes: 256 << 10)
        let proxy = try RunningProxy(f, configure: { $0.http2 = true })
        // nghttp cannot use a proxy: a CONNECT shim hands its connection to the proxy's CONNECT tunnel.
        let shim = try ConnectShim(proxyPort: proxy.port, target: "localhost:\(origin.port)")
        let r = try runProcess(nghttp, ["-n", "-s", "-m", "100", "--no-verify-peer", "https://localhost:\(shim.port)/bulk"], timeout: 90)
        #expect(r.status == 0, "\(r.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count == 100)
        #expect(flows.allSatisfy { $0.response?.status == 200 && $0.response?.bodySize == 256 << 10 && $0.error == nil })
        #expect(flows.allSatisfy { $0.request.httpVersion == "HTTP/2.0" && $0.response?.httpVersion == "HTTP/2.0" })
        #expect(flows.allSatisfy { $0.clientTLS?.alpn == "h2" && $0.upstreamTLS?.alpn == "http/1.1" })
        #expect(flows.allSatisfy { $0.request.url == "https://localhost:\(origin.port)/bulk" })
        // The response fields as the client got them: names lower-cased, nginx's Connection gone.
        let names = flows.first?.response?.headers.map(\.name) ?? []
        #expect(names.contains("server") && names.contains("content-length") && names.allSatisfy { $0 == $0.lowercased() }, "\(names)")
        #expect(!names.contains("connection"), "\(names)")
    }

    @Test("curl --http2 in reverse mode before a plain http:// nginx: 8 MiB down, 5 MiB up without a length, both on HTTP/2")
    func curlReverseLargeBodies() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: false, tls: false, bulkBytes: 8 << 20)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let down = try Self.curlReverse(f, proxy, ["-s", "-o", "/dev/null", "-w", "%{http_version} %{http_code} %{size_download}",
                                                   "https://localhost:\(proxy.port)/bulk"])
        #expect(down.status == 0, "\(down.stderr)")
        #expect(down.stdout == "2 200 \(8 << 20)", "\(down.stdout)")

        let upload = f.directory.file("upload.bin")
        try Data(repeating: 0x75, count: 5 << 20).write(to: URL(fileURLWithPath: upload))
        // No Content-Length: the body goes upstream chunked.
        let up = try Self.curlReverse(f, proxy, ["-s", "--data-binary", "@" + upload, "-H", "Content-Length:", "-o", "/dev/null",
                                                 "-w", "%{http_version} %{http_code}", "https://localhost:\(proxy.port)/upload"])
        #expect(up.status == 0, "\(up.stderr)")
        #expect(up.stdout == "2 200", "\(up.stdout)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.contains { $0.request.url.hasSuffix("/bulk") && $0.response?.bodySize == 8 << 20 && $0.error == nil })
        #expect(flows.contains { $0.request.url.hasSuffix("/upload") && $0.request.bodySize == 5 << 20 && $0.response?.status == 200 })
        #expect(flows.allSatisfy { $0.request.httpVersion == "HTTP/2.0" && $0.clientTLS?.alpn == "h2" && $0.upstreamTLS == nil })
    }

    @Test("HEAD, 204, 304, a chunked body with trailers, an echo of 6 MiB and a response framed by close, over HTTP/2")
    func curlReverseEdgeCases() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let base = "https://localhost:\(proxy.port)"
        let format = ["-w", "%{http_version} %{http_code} %{size_download}\\n"]
        let head = try Self.curlReverse(f, proxy, ["-s", "-I", "-o", "/dev/null"] + format + ["\(base)/bytes/1000"])
        #expect(head.stdout == "2 200 0\n", "\(head.stdout) \(head.stderr)")
        for status in [204, 304] {
            let r = try Self.curlReverse(f, proxy, ["-s", "-o", "/dev/null"] + format + ["\(base)/status/\(status)"])
            #expect(r.status == 0 && r.stdout == "2 \(status) 0\n", "\(r.stdout) \(r.stderr)")
        }
        let headers = f.directory.file("trailers.txt")
        let chunked = try Self.curlReverse(f, proxy, ["-s", "-D", headers, "-o", "/dev/null"] + format + ["\(base)/chunked/300000"])
        #expect(chunked.stdout == "2 200 300000\n", "\(chunked.stdout) \(chunked.stderr)")
        let dump = (try? String(contentsOfFile: headers, encoding: .utf8)) ?? ""
        #expect(dump.lowercased().contains("x-checksum: done"), "the origin's trailer reaches the client: \(dump)")
        let closing = try Self.curlReverse(f, proxy, ["-s", "-o", "/dev/null"] + format + ["\(base)/close/200000"])
        #expect(closing.stdout == "2 200 200000\n", "\(closing.stdout) \(closing.stderr)")

        let body = f.directory.file("echo.bin")
        try Data(repeating: 0x65, count: 6 << 20).write(to: URL(fileURLWithPath: body))
        let echo = try Self.curlReverse(f, proxy, ["-s", "--data-binary", "@" + body, "-H", "Content-Length:", "-o", "/dev/null"]
                                        + format + ["\(base)/echo"])
        #expect(echo.stdout == "2 200 \(6 << 20)\n", "\(echo.stdout) \(echo.stderr)")
        let expecting = try Self.curlReverse(f, proxy, ["-s", "--data-binary", "@" + body, "-H", "Expect: 100-continue", "-o", "/dev/null"]
                                             + format + ["\(base)/echo"])
        #expect(expecting.stdout == "2 200 \(6 << 20)\n", "\(expecting.stdout) \(expecting.stderr)")

        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let trailers = try runProcess(python, [Self.h2Client, "trailers", String(proxy.port)], timeout: 30)
        #expect(trailers.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3 x-sum: 7", "\(trailers.stdout) \(trailers.stderr)")
        // CONNECT (and extended CONNECT) has no HTTP/1.1 form on a pooled connection: 501 with the reason.
        let connect = try runProcess(python, [Self.h2Client, "connect", String(proxy.port)], timeout: 30)
        #expect(connect.stdout.contains("CONNECT over HTTP/2"), "\(connect.stdout) \(connect.stderr)")
        #expect(proxy.server.recorder.recent.flows.contains { $0.request.method == "CONNECT" && $0.response?.status == 501 })
    }

    @Test("more concurrent uploads than upstream connections: the waiting ones do not starve the ones being carried")
    func moreUploadsThanConnections() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let body = f.directory.file("upload.bin")
        // No two stretches alike: bytes that arrive reordered or twice change the echo.
        var state: UInt32 = 0x9e37_79b9
        let sent = Data((0..<(1 << 20)).map { _ -> UInt8 in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        })
        try sent.write(to: URL(fileURLWithPath: body))
        // The origin answers /echo only once the whole body arrived: twelve
        // streams on six connections, whose bodies all share one connection window.
        // The six streams that wait hold what they received until a connection is free.
        var args = ["-s", "--parallel", "--parallel-max", "12", "--data-binary", "@" + body,
                    "-w", "%{http_version} %{http_code} %{size_download}\n"]
        for i in 0..<12 { args += ["-o", f.directory.file("echo-\(i).bin"), "https://localhost:\(proxy.port)/echo"] }
        let r = try Self.curlReverse(f, proxy, args)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 12 && lines.allSatisfy { $0 == "2 200 \(1 << 20)" }, "\(r.stdout)")
        for i in 0..<12 {
            let echoed = try Data(contentsOf: URL(fileURLWithPath: f.directory.file("echo-\(i).bin")))
            // Compared outside #expect, which would diff two mebibytes on a failure.
            let same = echoed == sent
            #expect(same, "echo \(i) differs from what was sent (\(echoed.count) bytes)")
        }
        // At most six connections to the origin were open at once.
        let peak = try curl(["-s", "http://127.0.0.1:\(origin.port)/connections"])
        #expect(Int(peak.stdout).map { (1...6).contains($0) } == true, "peak \(peak.stdout)")
    }

    @Test("a slow-reading stream beside fast ones: the fast ones finish, the slow body stays at the origin")
    func slowReaderBesideFastOnes() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let slowBytes = 64 << 20
        let r = try runProcess(python, [Self.h2Client, "slow", String(proxy.port), String(origin.port), "/counted/\(slowBytes)",
                                        "/bytes/200000", "20"], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(result["fast_ended"] as? Int == 20, "\(r.stdout)")
        #expect(result["fast_bytes"] as? [Int] == [200000], "\(r.stdout)")
        // The slow stream's window (65,535 bytes) is all it got.
        let received = result["slow_received"] as? Int ?? -1
        #expect(received > 0 && received <= 65535, "\(r.stdout)")
        #expect(result["slow_ended"] as? Bool == false)
        // Without backpressure the proxy would have read all 64 MiB. With it, the
        // origin wrote only what the sockets' buffers and one stream window hold.
        let wrote = result["origin_wrote"] as? Int ?? -1
        #expect(wrote >= 0 && wrote < 24 << 20, "the origin wrote \(wrote) of \(slowBytes) bytes: \(r.stdout)")
    }

    @Test("an upstream that cuts one response short resets that stream; the others finish")
    func upstreamClosesMidResponse() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let base = "https://localhost:\(proxy.port)"
        var args = ["-s", "--parallel", "-w", "%{url_effective} %{http_version} %{http_code} %{size_download}\\n"]
        args += ["-o", "/dev/null", "\(base)/reset"]
        for i in 0..<5 { args += ["-o", "/dev/null", "\(base)/bytes/\(100000 + i)"] }
        let r = try Self.curlReverse(f, proxy, args)
        #expect(r.status != 0, "curl reports the reset stream")
        let lines = r.stdout.split(separator: "\n")
        for i in 0..<5 { #expect(lines.contains { $0.hasSuffix("/bytes/\(100000 + i) 2 200 \(100000 + i)") }, "\(r.stdout)") }
        let flows = proxy.server.recorder.recent.flows
        let reset = flows.first { $0.request.url.hasSuffix("/reset") }
        #expect(reset?.error != nil, "\(String(describing: reset))")
        #expect(flows.filter { $0.request.url.contains("/bytes/") && $0.error == nil && ($0.response?.bodySize ?? 0) >= 100000 }.count == 5,
                "\(flows.map { ($0.request.url, $0.response?.status, $0.error) })")
    }

    @Test("a client's RST_STREAM closes that stream's upstream connection; the next stream is served")
    func clientResetClosesUpstream() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port)
        let r = try runProcess(python, [Self.h2Client, "cancel", String(proxy.port), String(origin.port)], timeout: 60)
        // The origin sees its 64 MiB response cut short: the proxy closed the connection rather than
        // leaving it paused (the body is far larger than what the sockets' buffers hold).
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "hello-status-ok 1", "\(r.stdout) \(r.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.contains { $0.request.url.hasSuffix("/counted/67108864") && $0.error?.contains("reset") == true })
    }

    @Test("an upstream that never answers: 504 after the response timeout, the other streams are served")
    func upstreamNeverAnswers() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try Self.reverseProxy(f, to: origin.port, responseTimeout: 1)
        let base = "https://localhost:\(proxy.port)"
        let r = try Self.curlReverse(f, proxy, ["-s", "--parallel",
                                                "-w", "%{url_effective} %{http_version} %{http_code}\\n",
                                                "-o", "/dev/null", "\(base)/hang", "-o", "/dev/null", "\(base)/hello"])
        #expect(r.stdout.contains("/hang 2 504"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("/hello 2 200"), "\(r.stdout) \(r.stderr)")
        let hung = proxy.server.recorder.recent.flows.first { $0.request.url.hasSuffix("/hang") }
        #expect(hung?.response?.status == 504)
        #expect(hung?.error?.contains("no response within 1 s") == true, "\(String(describing: hung?.error))")
    }

    @Test("a relayed HTTP/2 upstream that never answers one stream: 504 after the response timeout, the others served")
    func relayedStreamTimeout() throws {
        let nghttp = try #require(findExecutable("/usr/bin/nghttp", "nghttp"))
        let f = try Fixtures()
        // nginx speaks HTTP/2 to the proxy and hands /hang to an origin that never answers.
        let hanging = try Origin(chain: nil, key: nil)
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 1 << 10,
                                     locations: "location /hang { proxy_pass http://127.0.0.1:\(hanging.port); proxy_read_timeout 60s; }")
        let proxy = try RunningProxy(f, configure: { c in
            c.http2 = true
            c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
            c.timeouts.upstreamResponse = 1
        })
        let r = try runProcess(nghttp, ["-n", "--no-verify-peer", "-s", "https://localhost:\(proxy.port)/hang",
                                        "https://localhost:\(proxy.port)/small"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.contains { $0.request.url.hasSuffix("/small") && $0.response?.status == 200 && $0.upstreamTLS?.alpn == "h2" })
        let hung = flows.first { $0.request.url.hasSuffix("/hang") }
        #expect(hung?.response?.status == 504, "\(flows.map { ($0.request.url, $0.response?.status, $0.error) })")
        #expect(hung?.error?.contains("no response within 1 s") == true)
    }
}

/// A local listener that opens a CONNECT tunnel through the proxy for each
/// connection it accepts and relays bytes both ways, for clients (nghttp)
/// that cannot use an HTTP proxy.
final class ConnectShim: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let stdin = Pipe()

    init(proxyPort: Int, target: String) throws {
        guard let python = findExecutable("/usr/bin/python3", "python3") else { throw HarnessError("python3 not found") }
        let script = """
            import os, socket, sys, threading
            def pipe(a, b):
                try:
                    while True:
                        data = a.recv(65536)
                        if not data: break
                        b.sendall(data)
                except OSError: pass
                try: b.shutdown(socket.SHUT_WR)
                except OSError: pass
            def serve(client):
                up = socket.create_connection(("127.0.0.1", \(proxyPort)))
                up.sendall(b"CONNECT \(target) HTTP/1.1\\r\\nHost: \(target)\\r\\n\\r\\n")
                head = b""
                while b"\\r\\n\\r\\n" not in head:
                    chunk = up.recv(1)
                    if not chunk: return
                    head += chunk
                threading.Thread(target=pipe, args=(client, up), daemon=True).start()
                pipe(up, client)
            listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(16)
            print("READY %d" % listener.getsockname()[1], flush=True)
            threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
            while True:
                try: client, _ = listener.accept()
                except OSError: break
                threading.Thread(target=serve, args=(client,), daemon=True).start()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script]
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = ""
        while !line.contains("\n") {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            line += String(decoding: data, as: UTF8.self)
        }
        guard line.hasPrefix("READY "), let port = Int(line.dropFirst(6).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            stop(process)
            throw HarnessError("the CONNECT shim did not start: \(line)")
        }
        self.port = port
    }

    deinit {
        try? stdin.fileHandleForWriting.close()
        stop(process)
    }
}
