import Foundation
import PinproxyBase
import PinproxyProxy
import Testing

/// HTTP/2 through the intercepting proxy: curl and nghttp against nginx with
/// `http2`, through a real listening proxy, with `--http2 on`.
@Suite("HTTP/2 end to end", .timeLimit(.minutes(10)))
struct HTTP2EndToEndTests {
    static func proxy(_ f: Fixtures, http2: Bool = true, upstreamHTTP2: Bool = true, reverseTo port: Int? = nil,
                      harPath: String? = nil) throws -> RunningProxy {
        try RunningProxy(f, configure: { c in
            c.http2 = http2
            c.upstreamHTTP2 = upstreamHTTP2
            if let port { c.mode = .reverse(scheme: "https", host: .dns("localhost"), port: port) }
        }, harPath: harPath)
    }

    @Test("curl --http2: many streams on one connection, a large download and a large upload, captured as HTTP/2.0")
    func curlManyStreams() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let har = f.directory.file("flows.har")
        let proxy = try Self.proxy(f, harPath: har)
        let base = "https://localhost:\(origin.port)"
        // 30 parallel requests that curl multiplexes over one proxied connection.
        var args = ["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http2", "--parallel", "--parallel-max", "30",
                    "-s", "-w", "%{http_version} %{http_code} %{size_download} %{num_connects}\\n"]
        for i in 0..<30 { args += ["-o", "/dev/null", "\(base)/small?n=\(i)"] }
        args += ["-o", "/dev/null", "\(base)/bulk"]
        let r = try curl(args, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 31)
        #expect(lines.allSatisfy { $0.hasPrefix("2 200 ") }, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("2 200 \(origin.bulkBytes) ") }, "\(r.stdout)")
        #expect(lines.filter { $0.hasSuffix(" 1") }.count <= 2, "one connection carries the streams: \(r.stdout)")

        let upload = f.directory.file("upload.bin")
        try Data(repeating: 0x62, count: 5 << 20).write(to: URL(fileURLWithPath: upload))
        let u = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http2", "-s", "--data-binary", "@" + upload,
                          "-w", "%{http_version} %{http_code}", "-o", f.directory.file("answer"), "\(base)/upload"], timeout: 60)
        #expect(u.status == 0, "\(u.stderr)")
        #expect(u.stdout == "2 200", "\(u.stdout)")

        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count >= 32)
        #expect(flows.allSatisfy { $0.request.httpVersion == "HTTP/2.0" && $0.response?.httpVersion == "HTTP/2.0" })
        #expect(flows.contains { $0.request.url == "\(base)/bulk" && $0.response?.bodySize == origin.bulkBytes })
        #expect(flows.contains { $0.request.url == "\(base)/upload" && $0.request.bodySize == 5 << 20 && $0.response?.status == 200 })
        #expect(flows.allSatisfy { $0.clientTLS?.alpn == "h2" && $0.upstreamTLS?.alpn == "h2" })
        proxy.daemon?.stop()
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any]
        let entries = (document?["log"] as? [String: Any])?["entries"] as? [[String: Any]] ?? []
        #expect(entries.count >= 32)
        #expect(entries.allSatisfy { ($0["request"] as? [String: Any])?["httpVersion"] as? String == "HTTP/2.0" })
    }

    @Test("nghttp in reverse mode: 100 concurrent streams over one connection")
    func nghttpConcurrentStreams() throws {
        let nghttp = try #require(findExecutable("/usr/bin/nghttp", "nghttp"))
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 1 << 20)
        let proxy = try Self.proxy(f, reverseTo: origin.port)
        var args = ["-n", "-s", "-m", "100", "--no-verify-peer"]
        args += ["https://127.0.0.1:\(proxy.port)/bulk"]
        let r = try runProcess(nghttp, args, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let flows = proxy.server.recorder.recent.flows
        #expect(flows.count == 100)
        #expect(flows.allSatisfy { $0.response?.status == 200 && $0.response?.bodySize == 1 << 20 && $0.error == nil })
    }

    @Test("--http2 off, or an upstream on HTTP/1.1 only: the client is offered http/1.1 and is served")
    func mirrorsHTTP1() throws {
        let f = try Fixtures()
        for (http2, originH2) in [(false, true), (true, false)] {
            let origin = try NginxOrigin(f, http2: originH2, bulkBytes: 1 << 20)
            let proxy = try Self.proxy(f, http2: http2)
            let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http2", "-s", "-o", "/dev/null",
                              "-w", "%{http_version} %{http_code} %{size_download}", "https://localhost:\(origin.port)/bulk"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout == "1.1 200 \(1 << 20)", "http2 \(http2), origin h2 \(originH2): \(r.stdout)")
            #expect(proxy.server.recorder.recent.flows.first?.request.httpVersion == "HTTP/1.1")
        }
    }

    @Test("--upstream-http2 off: curl speaks HTTP/2 with the proxy, the h2-capable origin is reached over HTTP/1.1 (forward and reverse)")
    func upstreamHTTP2Off() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, bulkBytes: 3 << 20, locations: #"location = /protocol { return 200 "$server_protocol"; }"#)
        let upload = f.directory.file("upload.bin")
        try Data(repeating: 0x62, count: 1 << 20).write(to: URL(fileURLWithPath: upload))
        for reverse in [false, true] {
            let proxy = try Self.proxy(f, upstreamHTTP2: false, reverseTo: reverse ? origin.port : nil)
            let base = reverse ? "https://localhost:\(proxy.port)" : "https://localhost:\(origin.port)"
            let via = reverse ? ["--resolve", "localhost:\(proxy.port):127.0.0.1"] : ["--proxy", proxy.url]
            let common = via + ["--cacert", f.proxyCAPath, "-s"]
            // Both offered (curl --http2): the client still gets h2.
            let p = try curl(common + ["--http2", "-w", " %{http_version} %{http_code}", "\(base)/protocol", "--next"] + common
                             + ["--http2", "-o", "/dev/null", "-w", " %{http_version} %{http_code} %{size_download}", "\(base)/bulk"], timeout: 60)
            #expect(p.status == 0, "\(p.stderr)")
            #expect(p.stdout == "HTTP/1.1 2 200 2 200 \(3 << 20)", "reverse \(reverse): \(p.stdout)")
            // h2 only (prior knowledge over TLS), with a body: translated, not refused.
            let u = try curl(common + ["--http2-prior-knowledge", "--data-binary", "@" + upload, "-o", "/dev/null",
                                       "-w", "%{http_version} %{http_code}", "\(base)/upload"], timeout: 60)
            #expect(u.status == 0 && u.stdout == "2 200", "reverse \(reverse): \(u.stdout) \(u.stderr)")
            let flows = proxy.server.recorder.recent.flows
            #expect(flows.count == 3, "\(flows.map(\.request.url))")
            #expect(flows.allSatisfy { $0.clientTLS?.alpn == "h2" && $0.upstreamTLS?.alpn == "http/1.1" && $0.request.httpVersion == "HTTP/2.0" },
                    "\(flows.map { "\($0.clientTLS?.alpn ?? "-") \($0.upstreamTLS?.alpn ?? "-") \($0.request.httpVersion)" })")
            #expect(flows.contains { $0.request.url.hasSuffix("/upload") && $0.request.bodySize == 1 << 20 && $0.response?.status == 200 })
        }
    }

    @Test("a client that breaks HTTP/2 gets GOAWAY and is closed; the proxy goes on serving others")
    func malformedClient() throws {
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let proxy = try Self.proxy(f, reverseTo: origin.port)
        // A valid preface, then a HEADERS frame on stream 0: a connection error (PROTOCOL_ERROR).
        let script = """
            import socket, ssl, sys
            ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", \(proxy.port))), server_hostname="localhost")
            assert s.selected_alpn_protocol() == "h2", s.selected_alpn_protocol()
            s.sendall(b"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n" + bytes([0,0,0,4,0,0,0,0,0]) + bytes([0,0,1,1,5,0,0,0,0,0x82]))
            data = b""
            s.settimeout(10)
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            i = 0
            while i + 9 <= len(data):
                length = int.from_bytes(data[i:i+3], "big"); kind = data[i+3]
                if kind == 7: print("GOAWAY", int.from_bytes(data[i+13:i+17], "big")); sys.exit(0)
                i += 9 + length
            print("no GOAWAY"); sys.exit(1)
            """
        let r = try runProcess(python, ["-c", script], timeout: 30)
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.hasPrefix("GOAWAY 1"), "PROTOCOL_ERROR: \(r.stdout)")
        let after = try curl(["--cacert", f.proxyCAPath, "--http2", "-s", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
                              "--resolve", "localhost:\(proxy.port):127.0.0.1", "https://localhost:\(proxy.port)/small"])
        #expect(after.stdout == "2 200", "\(after.stdout) \(after.stderr)")
    }
}

/// An origin that answers before the request body is in (nginx's 413 for a body over
/// `client_max_body_size`, decided from content-length), then asks the client to stop sending
/// (RST_STREAM NO_ERROR, RFC 9113 §8.1): the answer reaches the client whole.
@Suite("HTTP/2: an answer before the whole request", .timeLimit(.minutes(5)))
struct HTTP2EarlyAnswerTests {
    @Test("curl --http2 uploading 2 MB to a 1 KiB limit gets nginx's 413 through the proxy, and the flow records it",
          arguments: [true, false])
    func earlyAnswerToAnUpload(upstreamHTTP2: Bool) throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, locations: "location /limited { client_max_body_size 1k; }")
        let proxy = try HTTP2EndToEndTests.proxy(f, upstreamHTTP2: upstreamHTTP2)
        let body = f.directory.file("upload.bin")
        try FileIO.write([UInt8](repeating: 0x62, count: 2 << 20), to: body, mode: 0o644)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--http2", "-sS", "--data-binary", "@\(body)",
                          "-w", "\n%{http_version} %{http_code}", "https://localhost:\(origin.port)/limited"], timeout: 60)
        // The 413 head always reaches curl. Its body too, unless curl 7.88 cuts its upload short (an
        // END_STREAM before content-length, which the proxy's session resets) before the body left the
        // proxy: a race on curl's side, so only the head is asserted here; nghttp below gets it whole.
        #expect(r.stdout.hasSuffix("\n2 413"), "curl: \(r.status) \(r.stdout) \(r.stderr)")
        let flow = try #require(waitForFlows(proxy, count: 1).first { $0.request.url.hasSuffix("/limited") })
        #expect(flow.response?.status == 413)
    }

    @Test("nghttp (which keeps uploading) gets the 413 through reverse mode")
    func nghttpGetsTheEarlyAnswer() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true, locations: "location /limited { client_max_body_size 1k; }")
        let proxy = try HTTP2EndToEndTests.proxy(f, reverseTo: origin.port)
        let body = f.directory.file("upload.bin")
        try FileIO.write([UInt8](repeating: 0x62, count: 2 << 20), to: body, mode: 0o644)
        guard let nghttp = findExecutable("nghttp") else { throw HarnessError("nghttp not found") }
        let r = try runProcess(nghttp, ["-v", "-d", body, "https://localhost:\(proxy.port)/limited"], input: [], timeout: 60)
        #expect(r.stdout.contains(":status: 413"), "\(r.stdout.suffix(800)) \(r.stderr)")
        #expect(r.stdout.contains("413 Request Entity Too Large"), "the body of the early answer: \(r.stdout.suffix(800))")
        let flow = try #require(waitForFlows(proxy, count: 1).first { $0.request.url.hasSuffix("/limited") })
        #expect(flow.response?.status == 413 && flow.error == nil, "\(flow.error ?? "")")
    }
}

@Suite("HTTP/2 flows", .timeLimit(.minutes(5)))
struct HTTP2FlowHeaderTests {
    @Test("an HTTP/2 flow lists the pseudo-header fields as the client sent them, :authority included")
    func pseudoHeadersAreRecorded() throws {
        let f = try Fixtures()
        let origin = try NginxOrigin(f, http2: true)
        let proxy = try HTTP2EndToEndTests.proxy(f, reverseTo: origin.port)
        // The client names another authority than the origin's: only :authority says which.
        let r = try curl(["--http2", "--cacert", f.proxyCAPath, "-sS", "-o", "/dev/null", "-w", "%{http_version}",
                          "--resolve", "localhost:\(proxy.port):127.0.0.1", "https://localhost:\(proxy.port)/small?x=1"])
        #expect(r.stdout == "2", "\(r.stdout) \(r.stderr)")
        let flow = try #require(waitForFlows(proxy, count: 1).first)
        let pseudo = flow.request.headers.prefix { $0.name.hasPrefix(":") }.map { "\($0.name) \($0.value)" }
        #expect(pseudo == [":method GET", ":scheme https", ":authority localhost:\(proxy.port)", ":path /small?x=1"], "\(flow.request.headers)")
        #expect(flow.request.headers.contains { $0.name == "user-agent" })
    }
}
