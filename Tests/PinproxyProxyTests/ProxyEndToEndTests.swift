import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS
import Testing

/// Real clients (curl, Python, openssl s_client) through a real proxy to a real origin, all on loopback.
@Suite("Proxy end to end", .timeLimit(.minutes(10)))
struct ProxyEndToEndTests {
    @Test("curl through the proxy: GET, POST, chunked both ways, large bodies, keep-alive reuse")
    func curlThroughProxy() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let base = "https://localhost:\(origin.port)"
        let common = ["--proxy", proxy.url, "--cacert", f.proxyCAPath]

        let hello = try curl(common + ["\(base)/hello"])
        #expect(hello.status == 0, "\(hello.stderr)")
        #expect(hello.stdout == "hello from origin\n")

        // Two requests on one curl invocation: the second reuses the connection.
        let reuse = try curl(common + ["-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\\n",
                                       "\(base)/hello", "\(base)/chunked/250000"])
        #expect(reuse.stdout == "200 1\n200 0\n", "\(reuse.stdout) \(reuse.stderr)")

        let upload = f.directory.file("upload.bin")
        let bytes = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: upload))
        let echoed = f.directory.file("echoed.bin")
        let post = try curl(common + ["--data-binary", "@\(upload)", "-o", echoed, "-w", "%{http_code}", "\(base)/echo"])
        #expect(post.stdout == "200")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == Data(bytes))

        let chunkedUpload = try curl(common + ["-H", "Transfer-Encoding: chunked", "--data-binary", "@\(upload)",
                                               "-o", echoed, "-w", "%{http_code}", "\(base)/echo"])
        #expect(chunkedUpload.stdout == "200")
        #expect(try Data(contentsOf: URL(fileURLWithPath: echoed)) == Data(bytes))

        let big = try curl(common + ["-o", "/dev/null", "-w", "%{http_code} %{size_download}", "\(base)/bytes/30000000"], timeout: 60)
        #expect(big.stdout == "200 30000000", "\(big.stderr)")

        let head = try curl(common + ["-I", "\(base)/bytes/1234"])
        #expect(head.stdout.contains("Content-Length: 1234"))
        let noContent = try curl(common + ["-o", "/dev/null", "-w", "%{http_code}", "\(base)/status/204"])
        #expect(noContent.stdout == "204")
        let untilClose = try curl(common + ["-o", "/dev/null", "-w", "%{http_code} %{size_download}", "\(base)/close/5000"])
        #expect(untilClose.stdout == "200 5000")

        // Plain http:// through the forward proxy.
        let plainOrigin = try Origin(chain: nil, key: nil)
        let plain = try curl(["--proxy", proxy.url, "http://127.0.0.1:\(plainOrigin.port)/hello"])
        #expect(plain.stdout == "hello from origin\n")

        #expect(proxy.waitForEvent(.intercepted) != nil)
        #expect(proxy.server.recorder.recent.flows.count >= 8)
    }

    @Test("curl --pinnedpubkey: accepted directly, refused through the proxy, and recorded as a rejection")
    func pinningRejectionIsRecorded() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let url = "https://localhost:\(origin.port)/hello"

        let direct = try curl(["--cacert", f.originCAPath, "--pinnedpubkey", f.originPin, url])
        #expect(direct.status == 0, "\(direct.stderr)")

        let pinned = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--pinnedpubkey", f.originPin, url])
        #expect(pinned.status == 90, "curl should refuse the forged key: \(pinned.stderr)")
        let event = proxy.waitForEvent(.closedAfterHandshakeWithoutRequest)
        #expect(event?.host == "localhost")
        #expect(event?.kind.isClientRejection == true)
        // A pin checked after the handshake looks like a probe: suspected, not definite.
        #expect(event?.refusal == .suspected)

        // A client that does not trust the proxy CA refuses with an alert.
        let untrusting = try curl(["--proxy", proxy.url, "--cacert", f.originCAPath, url])
        #expect(untrusting.status == 60)
        let alert = proxy.waitForEvent(.clientAlert)
        #expect(alert?.alert == "unknown_ca")
        #expect(alert?.message.contains("client refused the forged certificate for localhost (alert unknown_ca)") == true)
        #expect(alert?.refusal == .definite)
        #expect(proxy.server.counters.counts.rejected == 1)
        #expect(proxy.server.counters.counts.suspected == 1)
        #expect(proxy.server.counters.profiles["forge"]?.rejected == 1)
        #expect(proxy.server.counters.profiles["forge"]?.suspected == 1)
    }

    @Test("passthrough shows the genuine certificate; PUT /rules switches it at run time")
    func passthroughAndRuntimeRules() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, configure: { $0.rules.passthrough = [try! HostPattern(parsing: "**.localhost")] }, admin: true)
        let url = "https://localhost:\(origin.port)/hello"
        // The genuine chain: the origin CA and the origin pin verify it.
        let genuine = try curl(["--proxy", proxy.url, "--cacert", f.originCAPath, "--pinnedpubkey", f.originPin, url])
        #expect(genuine.status == 0, "\(genuine.stderr)")
        #expect(genuine.stdout == "hello from origin\n")
        #expect(proxy.waitForEvent(.passthrough) != nil)

        let admin = "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
        let put = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"forge","passthrough":[]}"#, "\(admin)/rules"])
        #expect(put.stdout.contains("\"defaultProfile\" : \"forge\""), "\(put.stdout)")
        let forged = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, url])
        #expect(forged.stdout == "hello from origin\n", "\(forged.stderr)")
        let bad = try curl(["-X", "PUT", "--data", #"{"defaultProfile":"nonsense"}"#, "-w", "%{http_code}", "-o", "/dev/null", "\(admin)/rules"])
        #expect(bad.stdout == "400")

        let health = try curl(["\(admin)/health"])
        #expect(health.stdout.contains("\"status\" : \"ready\""))
        let pem = try curl(["\(admin)/ca.pem"])
        #expect(pem.stdout == f.proxyCA.certificate.pemEncoded)
        let cer = try curl(["-o", f.directory.file("ca.cer"), "\(admin)/ca.cer"])
        #expect(cer.status == 0)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: f.directory.file("ca.cer")))) == f.proxyCA.certificate.derEncoded)
        let events = try curl(["\(admin)/events"])
        #expect(events.stdout.contains("passthrough"))
        let flows = try curl(["\(admin)/flows"])
        #expect(flows.stdout.contains("/hello"))
        let missing = try curl(["-o", "/dev/null", "-w", "%{http_code}", "\(admin)/nope"])
        #expect(missing.stdout == "404")
    }

    @Test("an upstream whose certificate fails verification yields 502 with the reason, and an event")
    func badUpstreamCertificate() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.untrustedChainPath, key: f.untrustedKeyPath)
        let proxy = try RunningProxy(f)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\\n%{http_code}", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout.hasSuffix("502"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("failed verification"))
        let event = proxy.waitForEvent(.upstreamVerificationFailed)
        #expect(event?.reason?.contains("certificate") == true)

        // With --upstream-insecure the same origin is served.
        let insecure = try RunningProxy(f, configure: { $0.upstreamTrust = .insecure })
        let ok = try curl(["--proxy", insecure.url, "--cacert", f.proxyCAPath, "https://localhost:\(origin.port)/hello"])
        #expect(ok.stdout == "hello from origin\n")
    }

    @Test("the system trust store verifies too: an origin under a CA it does not hold yields 502")
    func systemTrustStoreVerifiesTheUpstream() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, configure: { $0.upstreamTrust = .system })
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("failed verification"), "\(r.stdout)")
        #expect(proxy.waitForEvent(.upstreamVerificationFailed) != nil)
    }

    @Test("Python requests with HTTPS_PROXY")
    func pythonRequests() throws {
        let python = try #require(pythonWith("requests"), "python3 with the requests module is required: apt-get install python3-requests")
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let script = """
            import requests
            s = requests.Session()
            r1 = s.get("https://localhost:\(origin.port)/hello", timeout=15)
            r2 = s.post("https://localhost:\(origin.port)/echo", data=b"ping" * 1000, timeout=15)
            print(r1.status_code, r1.text.strip(), r2.status_code, len(r2.content))
            """
        var env = ProcessInfo.processInfo.environment
        env["HTTPS_PROXY"] = proxy.url
        env["REQUESTS_CA_BUNDLE"] = f.proxyCAPath
        env["NO_PROXY"] = ""
        env["no_proxy"] = ""
        let r = try runProcess(python, ["-c", script], environment: env)
        #expect(r.stdout == "200 hello from origin 200 4000\n", "\(r.stderr)")
    }

    @Test("openssl s_client -proxy verifies the forged chain against the proxy CA")
    func opensslClient() throws {
        let openssl = try #require(findExecutable("openssl"), "openssl is required: apt-get install openssl")
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let request = "GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        let r = try runProcess(openssl, ["s_client", "-proxy", "127.0.0.1:\(proxy.port)", "-connect", "localhost:\(origin.port)",
                                         "-servername", "localhost", "-CAfile", f.proxyCAPath, "-verify_return_error", "-ign_eof"],
                               input: Array(request.utf8))
        #expect(r.stdout.contains("hello from origin"), "\(r.stdout.suffix(400)) \(r.stderr.suffix(400))")
        #expect(r.stdout.contains("Verify return code: 0 (ok)"))
    }

    @Test("a WebSocket upgrade is relayed both ways after 101")
    func webSocketUpgrade() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f)
        let client = try RawClient(port: proxy.port)
        client.send("GET http://127.0.0.1:\(origin.port)/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let head = client.receiveText(until: "\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 101"), "\(head)")
        client.send("frame-one")
        #expect(client.receiveText(until: "frame-one").contains("frame-one"))
        client.send("frame-two")
        #expect(client.receiveText(until: "frame-two").contains("frame-two"))
    }

    @Test("an absolute-form https:// request goes to the origin over verified TLS; an untrusted origin gets a 502")
    func absoluteFormHTTPS() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let client = try RawClient(port: proxy.port)
        client.send("GET https://localhost:\(origin.port)/hello HTTP/1.1\r\nHost: localhost:\(origin.port)\r\nConnection: close\r\n\r\n")
        let text = client.receiveText(timeout: 15)
        #expect(text.hasPrefix("HTTP/1.1 200") && text.contains("hello from origin"), "\(text)")
        let untrusted = try Origin(chain: f.untrustedChainPath, key: f.untrustedKeyPath)
        let refused = try RawClient(port: proxy.port)
        refused.send("GET https://localhost:\(untrusted.port)/hello HTTP/1.1\r\nHost: localhost:\(untrusted.port)\r\nConnection: close\r\n\r\n")
        let answer = refused.receiveText(timeout: 15)
        #expect(answer.hasPrefix("HTTP/1.1 502") && answer.contains("verification"), "\(answer)")
    }

    @Test("pipelined requests are answered in order; HTTP/1.0 clients get a close-delimited answer")
    func pipelining() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f)
        let client = try RawClient(port: proxy.port)
        let base = "http://127.0.0.1:\(origin.port)"
        client.send("GET \(base)/bytes/3 HTTP/1.1\r\nHost: a\r\n\r\nGET \(base)/hello HTTP/1.1\r\nHost: a\r\n\r\n"
                    + "POST \(base)/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nConnection: close\r\n\r\nping")
        let text = client.receiveText(timeout: 15)
        let statuses = text.components(separatedBy: "HTTP/1.1 200").count - 1
        #expect(statuses == 3, "\(text)")
        let xxx = text.range(of: "xxx"), hello = text.range(of: "hello from origin"), ping = text.range(of: "ping")
        #expect(xxx != nil && hello != nil && ping != nil)
        if let xxx, let hello, let ping { #expect(xxx.lowerBound < hello.lowerBound && hello.lowerBound < ping.lowerBound) }

        let old = try RawClient(port: proxy.port)
        old.send("GET \(base)/chunked/5000 HTTP/1.0\r\n\r\n")
        let answer = old.receiveText(timeout: 15)
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(!answer.lowercased().contains("transfer-encoding: chunked"))
        #expect(answer.hasSuffix(String(repeating: "y", count: 100)))
    }

    @Test("an HTTP/1.0 request without Host goes upstream naming the tunnel's server; an empty Host is a 400")
    func http10WithoutHostInsideATunnel() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        // CONNECT, TLS with the forged leaf, then one HTTP/1.0 request as given; prints the answer.
        let script = """
            import socket, ssl, sys
            s = socket.create_connection(("127.0.0.1", \(proxy.port)))
            s.sendall(b"CONNECT localhost:\(origin.port) HTTP/1.1\\r\\nHost: localhost:\(origin.port)\\r\\n\\r\\n")
            head = b""
            while b"\\r\\n\\r\\n" not in head: head += s.recv(1)
            context = ssl.create_default_context(cafile=sys.argv[1])
            t = context.wrap_socket(s, server_hostname="localhost")
            t.sendall(sys.argv[2].encode().decode("unicode_escape").encode())
            answer = b""
            while True:
                chunk = t.recv(65536)
                if not chunk: break
                answer += chunk
            sys.stdout.write(answer.decode(errors="replace"))
            """
        let python = try #require(findExecutable("/usr/bin/python3", "python3"))
        let without = try runProcess(python, ["-c", script, f.proxyCAPath, #"GET /headers HTTP/1.0\r\nConnection: foo\r\n\r\n"#], timeout: 20)
        #expect(without.stdout.hasPrefix("HTTP/1.1 200"), "\(without.stdout) \(without.stderr)")
        #expect(without.stdout.contains("Host: localhost:\(origin.port)"), "\(without.stdout)")
        let empty = try runProcess(python, ["-c", script, f.proxyCAPath, #"GET /headers HTTP/1.0\r\nHost: \r\nConnection: keep-alive\r\n\r\n"#], timeout: 20)
        #expect(empty.stdout.hasPrefix("HTTP/1.1 400"), "\(empty.stdout) \(empty.stderr)")
        #expect(empty.stdout.contains("Host field is empty"), "\(empty.stdout)")
    }

    @Test("several event loops: concurrent uploads echoed back intact through TLS on both legs")
    func severalLoopsKeepBytesIntact() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, configure: { $0.eventLoops = 3 })
        // Distinct bodies of odd sizes: TLS output leaves in batches of
        // several records, so a misplaced or repeated record shows as a
        // mismatch, and connections spread over the three loops.
        let count = 6
        let uploads: [(path: String, bytes: Data)] = try (0..<count).map { i in
            let size = 1_000_003 + i * 70_001
            var generator = SystemRandomNumberGenerator()
            let bytes = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let path = f.directory.file("upload-\(i).bin")
            try bytes.write(to: URL(fileURLWithPath: path))
            return (path, bytes)
        }
        let results = Locked<[Int: ProcessResult]>([:])
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let r = try? curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "--data-binary", "@\(uploads[i].path)",
                               "-o", uploads[i].path + ".echoed", "-w", "%{http_code}", "https://localhost:\(origin.port)/echo"], timeout: 60)
            results.withLock { $0[i] = r }
        }
        for i in 0..<count {
            let r = try #require(results.withLock { $0[i] })
            #expect(r.stdout == "200", "upload \(i): \(r.stderr)")
            let echoed = try Data(contentsOf: URL(fileURLWithPath: uploads[i].path + ".echoed"))
            #expect(echoed == uploads[i].bytes, "upload \(i) came back altered (\(echoed.count) of \(uploads[i].bytes.count) bytes)")
        }
    }

    @Test("reverse mode terminates TLS for clients that talk to the proxy directly")
    func reverseMode() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, configure: { $0.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port) })
        let r = try curl(["--cacert", f.proxyCAPath, "https://localhost:\(proxy.port)/hello", "https://localhost:\(proxy.port)/bytes/100000",
                          "-o", "/dev/stdout", "-o", "/dev/null", "-w", "%{http_code}\\n"])
        #expect(r.stdout == "hello from origin\n200\n200\n", "\(r.stderr)")
        // Plain text sent to the TLS port is answered with a clear 400.
        let plain = try RawClient(port: proxy.port)
        plain.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(plain.receiveText().contains("400"))
    }

    @Test("reverse mode sends the origin's authority as Host, or the client's with keepHostHeader; reverse:http works")
    func reverseModeHost() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let rewriting = try RunningProxy(f, configure: { $0.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port) })
        let r = try curl(["--cacert", f.proxyCAPath, "https://localhost:\(rewriting.port)/headers"])
        #expect(r.stdout.contains("Host: localhost:\(origin.port)\n"), "\(r.stdout) \(r.stderr)")

        let keeping = try RunningProxy(f, configure: {
            $0.mode = .reverse(scheme: "https", host: .dns("localhost"), port: origin.port)
            $0.keepHostHeader = true
        })
        let k = try curl(["--cacert", f.proxyCAPath, "https://localhost:\(keeping.port)/headers"])
        #expect(k.stdout.contains("Host: localhost:\(keeping.port)\n"), "\(k.stdout) \(k.stderr)")

        // TLS to the client in front of a plain-HTTP origin.
        let plainOrigin = try Origin(chain: nil, key: nil)
        let plain = try RunningProxy(f, configure: { $0.mode = try! .init(parsing: "reverse:http://127.0.0.1:\(plainOrigin.port)") })
        let p = try curl(["--cacert", f.proxyCAPath, "https://localhost:\(plain.port)/headers"])
        #expect(p.stdout.contains("Host: 127.0.0.1:\(plainOrigin.port)\n"), "\(p.stdout) \(p.stderr)")
    }

    @Test("an invalid mode's message names both reverse forms")
    func modeMessage() throws {
        do {
            _ = try ProxyConfiguration.Mode(parsing: "reverse:ftp://x")
            Issue.record("reverse:ftp was accepted")
        } catch let error as PinproxyError {
            #expect(error.reason.contains("reverse:http://HOST:PORT"), "\(error.reason)")
        }
    }

    @Test("proxy authentication: 407 without credentials, served with them")
    func proxyAuthentication() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, configure: { $0.proxyAuthentication = "user:secret" })
        let url = "https://localhost:\(origin.port)/hello"
        // curl reports the CONNECT answer in http_connect (and exits 56: the tunnel failed).
        let denied = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "%{http_connect}", url])
        #expect(denied.stdout.hasSuffix("407"), "\(denied.stdout) \(denied.stderr)")
        let allowed = try curl(["--proxy", proxy.url, "--proxy-user", "user:secret", "--cacert", f.proxyCAPath, url])
        #expect(allowed.stdout == "hello from origin\n", "\(allowed.stderr)")
    }

    /// A plain request through the proxy carries the proxy's credentials in Proxy-Authorization:
    /// the flow keeps the field but not its value, and the HAR and events files (which hold what
    /// clients sent) are readable by their owner only, even when they were there before.
    @Test("the proxy's credentials are in no flow or capture file, and capture files are their owner's")
    func proxyCredentialsAreNotCaptured() throws {
        let f = try Fixtures()
        let plain = try Origin(chain: nil, key: nil)
        let har = f.directory.file("flows.har"), events = f.directory.file("events.jsonl")
        // An existing world-readable file is made its owner's when the capture takes it over.
        #expect(FileManager.default.createFile(atPath: har, contents: Data("old".utf8), attributes: [.posixPermissions: 0o644]))
        let proxy = try RunningProxy(f, configure: { $0.proxyAuthentication = "user:secret" }, harPath: har, eventsPath: events)
        let secret = Data("user:secret".utf8).base64EncodedString()
        let served = try curl(["--proxy", proxy.url, "--proxy-user", "user:secret", "-H", "Authorization: Bearer kept", "http://127.0.0.1:\(plain.port)/hello"])
        #expect(served.stdout == "hello from origin\n", "\(served.stderr)")
        let flows = waitForFlows(proxy, count: 1)
        let fields = flows.first?.request.headers ?? []
        #expect(fields.contains { $0.name.lowercased() == "proxy-authorization" && $0.value == "[redacted by pinproxy]" }, "\(fields)")
        #expect(fields.contains { $0.name == "Authorization" && $0.value == "Bearer kept" }, "\(fields)")
        proxy.server.recorder.flush()
        for path in [har, events] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            #expect(!text.contains(secret) && !text.contains("user:secret"), "\(path)")
            let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o600, "\(path): \(String(mode, radix: 8))")
        }
        #expect(((try? String(contentsOfFile: har, encoding: .utf8)) ?? "").contains("[redacted by pinproxy]"))
    }

    @Test("HAR and JSON lines files hold every completed flow and event")
    func captureFiles() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let har = f.directory.file("flows.har"), events = f.directory.file("events.jsonl")
        let proxy = try RunningProxy(f, configure: { $0.bodyCaptureLimit = 64 }, harPath: har, eventsPath: events)
        for _ in 0..<3 { _ = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "https://localhost:\(origin.port)/hello"]) }
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any]
        let entries = (document?["log"] as? [String: Any])?["entries"] as? [Any]
        #expect(entries?.count == 3)
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 6)
        #expect(lines.contains { $0.contains("\"intercepted\"") })
    }
}
