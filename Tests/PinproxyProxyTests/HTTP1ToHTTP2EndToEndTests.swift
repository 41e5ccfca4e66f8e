import Foundation
import PinproxyBase
import PinproxyProxy
import Testing

/// HTTP/1.1 clients through an upstream that speaks only HTTP/2 (nghttpd):
/// the proxy finds out, connects again offering `h2`, and translates each
/// request to a stream and each response back to HTTP/1.1.
@Suite("HTTP/1.1 client, HTTP/2-only upstream", .timeLimit(.minutes(10)))
struct HTTP1ToHTTP2EndToEndTests {
    static func proxy(_ f: Fixtures, reverseTo port: Int? = nil, harPath: String? = nil,
                      logLines: Locked<[String]>? = nil) throws -> RunningProxy {
        try RunningProxy(f, configure: { c in
            c.http2 = true
            if let port { c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: port) }
        }, harPath: harPath, logLines: logLines)
    }

    @Test("curl --http1.1 through CONNECT: keep-alive requests, a large body, a chunked upload, trailers, HEAD; flows HTTP/1.1 with ALPN h2 upstream")
    func forwardProxy() throws {
        let f = try Fixtures()
        let origin = try HTTP2OnlyOrigin(f, verbose: true)
        let har = f.directory.file("flows.har")
        let lines = Locked<[String]>([])
        let proxy = try Self.proxy(f, harPath: har, logLines: lines)
        let base = "https://localhost:\(origin.port)"
        let common = ["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http1.1", "-s"]

        // Three requests on one client connection.
        let bulkFile = f.directory.file("bulk.out")
        let r = try curl(common + ["-w", "%{http_version} %{http_code} %{size_download} %{num_connects}\\n",
                                   "-o", bulkFile, "\(base)/bulk", "-o", "/dev/null", "\(base)/small", "-o", "/dev/null", "\(base)/small"],
                         timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "1.1 200 \(origin.bulk.count) 1\n1.1 200 11 0\n1.1 200 11 0\n", "\(r.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: bulkFile)) == Data(origin.bulk))

        // A 5 MiB chunked upload, echoed by the origin.
        let upload = f.directory.file("upload.bin")
        let uploaded = Data((0..<(5 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try uploaded.write(to: URL(fileURLWithPath: upload))
        let echoed = f.directory.file("echo.out")
        let u = try curl(common + ["-H", "Transfer-Encoding: chunked", "--data-binary", "@" + upload, "-o", echoed,
                                   "-w", "%{http_code}", "\(base)/echo"], timeout: 60)
        #expect(u.status == 0, "\(u.stderr)")
        #expect(u.stdout == "200")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == uploaded)

        // The origin's trailer arrives after a chunked body.
        let t = try curl(common + ["--raw", "-D", "-", "\(base)/small"])
        #expect(t.stdout.lowercased().contains("transfer-encoding: chunked"), "\(t.stdout)")
        #expect(t.stdout.hasSuffix("0\r\nx-origin-trailer: done\r\n\r\n"), "\(t.stdout)")

        // HEAD: the length of the body, no body.
        let h = try curl(common + ["-I", "\(base)/bulk"])
        #expect(h.stdout.hasPrefix("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n"), "\(h.stdout)")
        #expect(h.stdout.lowercased().contains("content-length: \(origin.bulk.count)\r\n"), "\(h.stdout)")

        // An upgrade has no HTTP/2 counterpart here: refused, with the reason.
        let w = try curl(common + ["-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-w", "\\n%{http_code}", "\(base)/small"])
        #expect(w.stdout.hasSuffix("\n501"), "\(w.stdout)")
        #expect(w.stdout.contains("speaks only HTTP/2, which has no Upgrade"), "\(w.stdout)")

        let flows = proxy.server.recorder.recent.flows.filter { $0.response?.status == 200 }
        #expect(flows.count == 6)
        #expect(flows.allSatisfy { $0.request.httpVersion == "HTTP/1.1" && $0.response?.httpVersion == "HTTP/1.1" })
        #expect(flows.allSatisfy { $0.clientTLS?.alpn == "http/1.1" && $0.upstreamTLS?.alpn == "h2" })
        #expect(flows.contains { $0.request.url == "\(base)/bulk" && $0.response?.bodySize == origin.bulk.count })
        #expect(flows.contains { $0.request.url == "\(base)/echo" && $0.request.bodySize == 5 << 20 && $0.response?.bodySize == 5 << 20 })
        #expect(lines.withLock { $0 }.contains { $0.contains("the upstream localhost:\(origin.port) speaks only HTTP/2; HTTP/1.1 requests are translated") })
        // Remembered: only the first client connection found the upstream refusing http/1.1.
        #expect(origin.refusedConnections >= 1)
        #expect(origin.refusedConnections <= 2, "later connections offer h2 at once: \(origin.refusedConnections)")

        proxy.daemon?.stop()
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any]
        let entries = (document?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        let served = entries.filter { ($0["response"] as? [String: Any])?["status"] as? Int == 200 }
        #expect(served.count == 6)
        for entry in served {
            #expect((entry["request"] as? [String: Any])?["httpVersion"] as? String == "HTTP/1.1")
            let upstreamTLS = (entry["_pinproxy"] as? [String: Any])?["upstreamTLS"] as? [String: Any]
            #expect(upstreamTLS?["alpn"] as? String == "h2", "\(entry)")
        }
    }

    @Test("reverse mode: curl keep-alive requests, python requests downloading and uploading (chunked)")
    func reverseProxy() throws {
        let f = try Fixtures()
        let origin = try HTTP2OnlyOrigin(f, bulkBytes: 8 << 20)
        let proxy = try Self.proxy(f, reverseTo: origin.port)
        let base = "https://localhost:\(proxy.port)"
        let common = ["--cacert", f.proxyCAPath, "--http1.1", "-s", "--resolve", "localhost:\(proxy.port):127.0.0.1"]
        var args = common + ["-w", "%{http_code} %{size_download} %{num_connects}\\n"]
        for _ in 0..<4 { args += ["-o", "/dev/null", "\(base)/bulk"] }
        let r = try curl(args, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "200 \(8 << 20) 1\n" + String(repeating: "200 \(8 << 20) 0\n", count: 3), "\(r.stdout)")

        let python = try #require(pythonWith("requests"))
        let script = """
            import hashlib, requests, sys
            s = requests.Session(); ca = sys.argv[1]
            base = sys.argv[2]
            r = s.get(base + "/bulk", verify=ca); print(r.status_code, len(r.content), hashlib.sha256(r.content).hexdigest())
            body = bytes(i * 13 % 251 for i in range(5 << 20))
            def parts():
                for i in range(0, len(body), 1 << 20): yield body[i:i + (1 << 20)]
            r = s.post(base + "/echo", data=parts(), verify=ca); print(r.status_code, r.content == body)
            r = s.put(base + "/echo", data=body, verify=ca); print(r.status_code, r.content == body)
            """
        let p = try runProcess(python, ["-c", script, f.proxyCAPath, "https://localhost:\(proxy.port)"], timeout: 90)
        #expect(p.status == 0, "\(p.stderr)")
        let digest = SHA256Hex.of(origin.bulk)
        #expect(p.stdout == "200 \(8 << 20) \(digest)\n200 True\n200 True\n", "\(p.stdout) \(p.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count == 7)
        #expect(flows.allSatisfy { $0.response?.status == 200 && $0.request.httpVersion == "HTTP/1.1" && $0.upstreamTLS?.alpn == "h2" })
    }

    @Test("an origin that completes the handshake without ALPN and answers HTTP/1.1 with HTTP/2 frames is spoken to in HTTP/2")
    func answersWithFrames() throws {
        let f = try Fixtures()
        let origin = try Origin(script: "h2_frames_origin.py", chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try Self.proxy(f)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http1.1", "-s", "-D", "-",
                          "https://localhost:\(origin.port)/a", "https://localhost:\(origin.port)/b"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        let answers = r.stdout.components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1
        #expect(answers == 2, "\(r.stdout)")
        #expect(r.stdout.hasSuffix("\r\n\r\nhello over h2\n"), "\(r.stdout)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count == 2)
        #expect(flows.allSatisfy { $0.response?.status == 200 && $0.upstreamTLS?.alpn == "h2" && $0.response?.bodySize == 14 })
    }

    @Test("RST_STREAM before the head: 502 with the reason; after part of the body: the client is cut; GOAWAY: 502")
    func resetsAndGoAway() throws {
        let f = try Fixtures()
        for (mode, status, reason) in [("reset-before-head", "502", "reset the stream (INTERNAL_ERROR)"),
                                       ("goaway", "502", "refused the stream (GOAWAY)"),
                                       ("reset-mid-body", "200", "")] {
            let origin = try Origin(script: "h2_frames_origin.py", chain: f.originChainPath, key: f.originKeyPath, arguments: ["--mode", mode])
            let proxy = try Self.proxy(f, reverseTo: origin.port)
            let r = try curl(["--cacert", f.proxyCAPath, "--http1.1", "-s", "-w", "\n%{http_code} %{size_download}",
                              "--resolve", "localhost:\(proxy.port):127.0.0.1", "https://localhost:\(proxy.port)/"], timeout: 30)
            let flow = proxy.server.recorder.recent.flows.first
            if mode == "reset-mid-body" {
                #expect(r.status == 18, "partial transfer: \(r.status) \(r.stdout)")
                #expect(r.stdout.hasSuffix("\n200 1000"), "\(r.stdout)")
                #expect(flow?.error?.contains("reset the stream") == true, "\(String(describing: flow?.error))")
            } else {
                #expect(r.status == 0, "\(mode): \(r.stderr)")
                #expect(r.stdout.contains(reason) && r.stdout.contains("\n\(status) "), "\(mode): \(r.stdout)")
                #expect(flow?.response?.status == 502 && flow?.upstreamTLS?.alpn == "h2", "\(mode)")
            }
        }
    }

    @Test("with --http2 off an HTTP/2-only origin is not retried: 502")
    func offWithoutTranslation() throws {
        let f = try Fixtures()
        let origin = try HTTP2OnlyOrigin(f, verbose: true)
        let proxy = try RunningProxy(f) { $0.http2 = false }
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http1.1", "-s", "-w", "\n%{http_code}",
                          "https://localhost:\(origin.port)/small"], timeout: 30)
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(proxy.server.recorder.recent.flows.allSatisfy { $0.upstreamTLS?.alpn != "h2" })
    }

    @Test("with --upstream-http2 off an HTTP/2-only origin is still reached over h2: an h2 client relayed, an HTTP/1.1 client translated")
    func upstreamHTTP2OffStillReachesAnHTTP2OnlyOrigin() throws {
        let f = try Fixtures()
        let origin = try HTTP2OnlyOrigin(f, bulkBytes: 1 << 20, verbose: true)
        let proxy = try RunningProxy(f) { $0.upstreamHTTP2 = false }
        for flag in ["--http2", "--http1.1"] {
            let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, flag, "-s", "-o", "/dev/null",
                              "-w", "%{http_version} %{http_code} %{size_download}", "https://localhost:\(origin.port)/bulk"], timeout: 30)
            #expect(r.status == 0 && r.stdout == "\(flag == "--http2" ? "2" : "1.1") 200 \(1 << 20)", "\(flag): \(r.stdout) \(r.stderr)")
        }
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count == 2 && flows.allSatisfy { $0.upstreamTLS?.alpn == "h2" && $0.response?.status == 200 }, "\(flows.map { $0.upstreamTLS?.alpn ?? "-" })")
    }

    @Test("an origin that refuses every ALPN offer (http/1.1, then h2) gets a 502 that says so")
    func refusesEverything() throws {
        let f = try Fixtures()
        let origin = try NoProtocolOrigin(f)
        let proxy = try Self.proxy(f)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http1.1", "-s", "-w", "\\n%{http_code}",
                          "https://localhost:\(origin.port)/"], timeout: 30)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("no_application_protocol"), "\(r.stdout)")
        #expect(r.stdout.contains("refused that too"), "\(r.stdout)")
    }

    @Test("a slow client of a large translated body: the origin is held to what the client took, plus a bounded amount")
    func slowClient() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let total = 64 << 20
        let origin = try HTTP2OnlyOrigin(f, bulkBytes: total, trailers: false, verbose: true)
        let proxy = try Self.proxy(f, reverseTo: origin.port)
        // Warm up: the first connection finds out the origin speaks only HTTP/2.
        let warm = try curl(["-k", "--http1.1", "-s", "-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.1:\(proxy.port)/small"])
        #expect(warm.stdout == "200")
        let sentBefore = origin.dataBytesSent
        // Reads 1 MiB, reports, waits for a line on stdin, then reads the rest.
        let script = """
            import socket, ssl, sys
            ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
            raw = socket.socket(); raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            raw.connect(("127.0.0.1", int(sys.argv[1])))
            s = ctx.wrap_socket(raw, server_hostname="localhost")
            s.sendall(b"GET /bulk HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
            got = bytearray()
            while len(got) < (1 << 20): got += s.recv(65536)
            print("paused", flush=True)
            sys.stdin.readline()
            while True:
                chunk = s.recv(1 << 20)
                if not chunk: break
                got += chunk
            head, _, body = bytes(got).partition(b"\\r\\n\\r\\n")
            print(head.split(b"\\r\\n")[0].decode(), len(body))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, String(proxy.port)]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { stop(process) }
        var paused = Data()
        while !paused.contains(UInt8(ascii: "\n")) {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            paused += more
        }
        #expect(String(decoding: paused, as: UTF8.self) == "paused\n")
        // Wait until the origin stops sending (its windows are exhausted).
        var last = -1
        for _ in 0..<100 {
            let now = origin.dataBytesSent
            if now == last { break }
            last = now
            usleep(300_000)
        }
        let sentWhilePaused = origin.dataBytesSent - sentBefore
        // The client took about 1 MiB; socket buffers and the HTTP/2 windows hold a few more.
        #expect(sentWhilePaused < 16 << 20, "the origin sent \(sentWhilePaused) bytes to a client that read 1 MiB")
        input.fileHandleForWriting.write(Data("go\n".utf8))
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(String(decoding: rest, as: UTF8.self) == "HTTP/1.1 200 OK \(total)\n")
    }
}

/// The lower-case hex SHA-256 of bytes, as Python's hexdigest writes it.
enum SHA256Hex {
    static func of(_ bytes: [UInt8]) -> String {
        let r = try? runProcess("/usr/bin/sha256sum", ["-"], input: bytes, timeout: 30)
        return String(r?.stdout.prefix(64) ?? "")
    }
}
