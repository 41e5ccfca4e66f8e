import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS
import Testing

/// Hostile and broken input: each gets a clear status or a closed connection,
/// never a crash or a hang, and the proxy keeps serving the next client.
@Suite("Proxy bad input", .timeLimit(.minutes(10)))
struct ProxyBadInputTests {
    /// A proxy with short timeouts and a plain and an HTTPS origin.
    struct Setup {
        let fixtures: Fixtures
        let origin: Origin
        let plainOrigin: Origin
        let proxy: RunningProxy
        /// Every log line at info and above.
        let logLines = Locked<[String]>([])

        init(_ configure: (inout ProxyConfiguration) -> Void = { _ in }) throws {
            fixtures = try Fixtures()
            origin = try Origin(chain: fixtures.originChainPath, key: fixtures.originKeyPath)
            plainOrigin = try Origin(chain: nil, key: nil)
            proxy = try RunningProxy(fixtures, configure: {
                $0.timeouts.requestHeaders = 1
                $0.timeouts.handshake = 2
                $0.timeouts.idle = 2
                configure(&$0)
            }, logLines: logLines)
        }

        /// The proxy still answers a normal request.
        func stillServes() throws -> Bool {
            let r = try curl(["--proxy", proxy.url, "--cacert", fixtures.proxyCAPath, "https://localhost:\(origin.port)/hello"])
            return r.stdout == "hello from origin\n"
        }

        /// Sends `text` on a fresh connection and returns what came back before the close.
        func exchange(_ text: String) throws -> String {
            let client = try RawClient(port: proxy.port)
            client.send(text)
            return client.receiveText()
        }
    }

    @Test("malformed request lines and headers get 400/431 with a reason")
    func malformedRequests() throws {
        let s = try Setup()
        let cases: [(String, String)] = [
            ("GARBAGE\r\n\r\n", "400"),
            ("GET http://127.0.0.1:\(s.plainOrigin.port)/hello HTTP/9.9\r\nHost: x\r\n\r\n", "505"),
            ("GET http://127.0.0.1:\(s.plainOrigin.port)/hello HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", "400"),
            ("GET http://127.0.0.1:\(s.plainOrigin.port)/hello HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n", "431"),
            ("GET http://127.0.0.1:\(s.plainOrigin.port)/hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "400"),
            ("POST http://127.0.0.1:\(s.plainOrigin.port)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n", "400"),
            ("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        ]
        for (request, status) in cases {
            let answer = try s.exchange(request)
            #expect(answer.hasPrefix("HTTP/1.1 \(status)"), "\(request.prefix(60).debugDescription) → \(answer.prefix(120).debugDescription)")
        }
        #expect(try s.stillServes())
    }

    @Test("every refused request is logged with its status and reason, never the credentials")
    func refusalsAreLogged() throws {
        let fixtures = try Fixtures()
        let lines = Locked<[String]>([])
        let proxy = try RunningProxy(fixtures, configure: { $0.proxyAuthentication = "user:secret" }, logLines: lines)
        func exchange(_ bytes: [UInt8]) throws -> String {
            let client = try RawClient(port: proxy.port)
            client.send(bytes)
            return client.receiveText()
        }
        let wrong = "Proxy-Authorization: Basic \(Data("user:guess".utf8).base64EncodedString())\r\n"
        #expect(try exchange(bytes("GARBAGE\r\n\r\n")).hasPrefix("HTTP/1.1 400"))
        #expect(try exchange(clientHello(serverName: Array("localhost".utf8))).hasPrefix("HTTP/1.1 400"))
        #expect(try exchange(bytes("GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\n\r\n")).hasPrefix("HTTP/1.1 407"))
        #expect(try exchange(bytes("CONNECT localhost:443 HTTP/1.1\r\nHost: x\r\n\(wrong)\r\n")).hasPrefix("HTTP/1.1 407"))
        let expected = [
            "notice 127.0.0.1:", ": refused a malformed request (400): the request line 'GARBAGE'",
            ": refused a malformed request (400): a TLS handshake arrived where a plain HTTP request was expected",
            ": GET http://127.0.0.1:9/ refused (407): no Proxy-Authorization",
            ": CONNECT refused (407): ",
        ]
        for fragment in expected {
            #expect(waitForLine(in: lines, where: { $0.contains(fragment) }) != nil, "no log line with \(fragment): \(lines.withLock { $0 })")
        }
        #expect(lines.withLock { $0 }.allSatisfy { !$0.contains("secret") && !$0.contains("guess") && !$0.contains("dXNlcjpn") })
    }

    @Test("plain HTTP to a reverse-mode port is answered 400 and logged as the connection it was, not as a CONNECT")
    func plainHTTPOnAReversePortIsLoggedAsIs() throws {
        let fixtures = try Fixtures()
        let lines = Locked<[String]>([])
        let proxy = try RunningProxy(fixtures, configure: { $0.mode = .reverse(scheme: "https", host: .dns("origin.test"), port: 9) },
                                     logLines: lines)
        let client = try RawClient(port: proxy.port)
        client.send(bytes("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
        let answer = client.receiveText()
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.debugDescription)")
        #expect(answer.contains("this port speaks TLS (reverse proxy for origin.test); use https://"), "\(answer.debugDescription)")
        let line = waitForLine(in: lines, where: { $0.contains("this port speaks TLS") })
        #expect(line?.contains(": connection refused (400): this port speaks TLS (reverse proxy for origin.test)") == true, "\(line ?? "no line")")
        #expect(lines.withLock { $0 }.allSatisfy { !$0.contains("CONNECT") }, "\(lines.withLock { $0 })")
    }

    @Test("plain HTTP after CONNECT to a port that refuses gets a 502 with the reason; a ClientHello gets a close")
    func plainRequestThroughAFailedTunnel() throws {
        let s = try Setup()
        let closedPort = try NginxOrigin.freePort()
        let plain = try RawClient(port: s.proxy.port)
        plain.send("CONNECT 127.0.0.1:\(closedPort) HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(plain.receiveText(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200"))
        plain.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = plain.receiveText(until: "refused")
        #expect(answer.hasPrefix("HTTP/1.1 502"), "\(answer.debugDescription)")
        #expect(answer.contains("the tunnel to 127.0.0.1:\(closedPort) failed: "), "\(answer.debugDescription)")
        #expect(plain.closedByPeer())

        let binary = try RawClient(port: s.proxy.port)
        binary.send("CONNECT 127.0.0.1:\(closedPort) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = binary.receiveText(until: "\r\n\r\n")
        binary.send([0x00, 0x01, 0x02, 0x03])
        #expect(binary.receive().isEmpty)
        #expect(try s.stillServes())
    }

    @Test("invalid CONNECT targets and ports are refused")
    func invalidConnectTargets() throws {
        let s = try Setup()
        for target in ["localhost", "localhost:0", "localhost:99999", "a,b.test:443", "bad_host!:443", "[::1:443", ":443"] {
            let answer = try s.exchange("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(target) → \(answer.prefix(120).debugDescription)")
        }
        // A CONNECT to a closed port: established, then the tunnel closes.
        let client = try RawClient(port: s.proxy.port)
        client.send("CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
        client.send(clientHello(serverName: Array("localhost".utf8)))
        #expect(client.closedByPeer())
        #expect(try s.stillServes())
    }

    @Test("hostile SNI (comma, NUL, 300 characters) is refused and recorded")
    func hostileServerNames() throws {
        let s = try Setup()
        let names: [[UInt8]] = [
            Array("a.test,DNS:evil.com".utf8),
            Array("a.test".utf8) + [0] + Array("evil.com".utf8),
            Array(String(repeating: "a", count: 300).utf8),
        ]
        for name in names {
            let client = try RawClient(port: s.proxy.port)
            client.send("CONNECT localhost:\(s.origin.port) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            _ = client.receiveText(until: "\r\n\r\n")
            client.send(clientHello(serverName: name))
            let reply = client.receive()
            // An alert record (0x15) or a plain close; never a certificate.
            #expect(reply.isEmpty || reply.first == 0x15, "\(reply.prefix(8))")
        }
        let event = s.proxy.waitForEvent(.invalidServerName)
        #expect(event != nil)
        #expect(try s.stillServes())
    }

    @Test("a wildcard server name is refused like a bad CONNECT host: unrecognized_name, an event, no leaf, no upstream")
    func wildcardServerName() throws {
        let s = try Setup { $0.timeouts.upstreamHandshake = 1 }
        let openssl = try #require(findExecutable("openssl"), "openssl is required (apt-get install openssl)")
        // The CONNECT target never accepts: a connection from the proxy would wait in its backlog.
        let target = try IdleListener()
        let r = try runProcess(openssl, ["s_client", "-proxy", "127.0.0.1:\(s.proxy.port)", "-connect", "127.0.0.1:\(target.port)",
                                         "-servername", "*.evil.test"], timeout: 30)
        #expect(!r.stdout.contains("BEGIN CERTIFICATE"), "a leaf was presented: \(r.stdout)")
        #expect(r.stdout.contains("no peer certificate available"), "\(r.stdout)")
        #expect(r.stderr.contains("unrecognized name"), "\(r.stderr)")
        let event = try #require(s.proxy.waitForEvent(.invalidServerName))
        #expect(event.host.contains("*.evil.test"), "\(event)")
        #expect(event.reason?.contains("wildcard") == true, "\(event)")
        #expect(!target.hasPendingConnection, "the proxy connected to the upstream")
        #expect(s.proxy.server.leaves.statistics.count == 0, "a leaf was forged")
        #expect(try s.stillServes())
    }

    @Test("TLS to the plain port, plaintext after CONNECT, and garbage handshakes")
    func wrongProtocol() throws {
        let s = try Setup()
        let tls = try RawClient(port: s.proxy.port)
        tls.send(clientHello(serverName: Array("localhost".utf8)))
        let answer = tls.receiveText()
        #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(100).debugDescription)")

        // Plaintext after CONNECT is tunnelled raw to the target.
        let raw = try RawClient(port: s.proxy.port)
        raw.send("CONNECT 127.0.0.1:\(s.plainOrigin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = raw.receiveText(until: "\r\n\r\n")
        raw.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(raw.receiveText(until: "hello from origin").contains("hello from origin"))

        // A TLS record header followed by junk: the handshake fails, the connection closes.
        let junk = try RawClient(port: s.proxy.port)
        junk.send("CONNECT localhost:\(s.origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = junk.receiveText(until: "\r\n\r\n")
        junk.send([0x16, 0x03, 0x01, 0x00, 0x10] + [UInt8](repeating: 0xff, count: 16))
        #expect(junk.closedByPeer())
        #expect(try s.stillServes())
    }

    @Test("slow-loris headers time out with 408; idle connections are closed")
    func slowLoris() throws {
        let s = try Setup()
        let client = try RawClient(port: s.proxy.port)
        client.send("GET http://127.0.0.1:\(s.plainOrigin.port)/hello HTTP/1.1\r\nHost: x\r\n")
        usleep(300_000)
        client.send("X-Slow: 1\r\n")
        let answer = client.receiveText(timeout: 10)
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer.debugDescription)")
        #expect(waitForLine(in: s.logLines) { $0.contains("refused (408): the request headers did not arrive within 1 s") } != nil,
                "\(s.logLines.withLock { $0 })")

        let idle = try RawClient(port: s.proxy.port)
        #expect(idle.closedByPeer(timeout: 10))
        #expect(try s.stillServes())
    }

    @Test("a client that stops reading mid-response does not grow memory or block others")
    func stalledReader() throws {
        let s = try Setup()
        let before = try residentMemory()
        let client = try RawClient(port: s.proxy.port, receiveBuffer: 4096)
        client.send("GET http://127.0.0.1:\(s.plainOrigin.port)/bytes/200000000 HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(500_000)
        #expect(try s.stillServes())
        usleep(1_000_000)
        let after = try residentMemory()
        // Backpressure holds the relay at a bounded buffer: no growth by the size of the body.
        #expect(after - before < 64 * 1024 * 1024, "resident memory grew by \(after - before) bytes")
    }

    @Test("an upstream that resets mid-body cuts the client off; the proxy keeps serving")
    func upstreamResetMidBody() throws {
        let s = try Setup()
        let r = try curl(["--proxy", s.proxy.url, "--cacert", s.fixtures.proxyCAPath, "-o", "/dev/null",
                          "https://localhost:\(s.origin.port)/reset"])
        #expect(r.status == 18, "curl should see a truncated body, not hang: \(r.status) \(r.stderr)")
        #expect(try s.stillServes())
    }

    @Test("thousands of abandoned connections leave no descriptor behind")
    func abandonedConnections() throws {
        // The upstream connection kept idle after stillServes() goes within the wait below.
        let s = try Setup { $0.timeouts.idleUpstream = 1 }
        #expect(try s.stillServes())
        // Descriptors of this proxy's connections (client side and upstream)
        // and of the clients here: other tests run alongside in this process
        // and open their own.
        let ports: Set<Int> = [s.proxy.port, s.origin.port, s.plainOrigin.port]
        for batch in 0..<10 {
            var clients: [RawClient] = []
            for i in 0..<200 {
                let c = try RawClient(port: s.proxy.port)
                switch (batch + i) % 4 {
                case 0: c.send("GET http://127.0.0.1:\(s.plainOrigin.port)/hel")
                case 1: c.send("CONNECT localhost:\(s.origin.port) HTTP/1.1\r\nHost: x\r\n\r\n")
                case 2: c.send([0x16, 0x03, 0x01])
                default: break
                }
                clients.append(c)
            }
            // The count sees connections at all (so its zero below means something).
            if batch == 0 { #expect(try openSocketCount(ports: ports) >= clients.count) }
            clients.removeAll()
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if s.proxy.server.openConnections == 0, try openSocketCount(ports: ports) == 0 { break }
            usleep(100_000)
        }
        #expect(s.proxy.server.openConnections == 0)
        #expect(try openSocketCount(ports: ports) == 0, "sockets of this proxy still open")
        #expect(try s.stillServes())
    }
}

/// A loopback listener that never accepts: connections to it complete in
/// the kernel and wait in its backlog, where ``hasPendingConnection`` sees them.
final class IdleListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else { close(fd); throw HarnessError("cannot listen on loopback") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a connection waits to be accepted (taking it).
    var hasPendingConnection: Bool {
        let accepted = accept(fd, nil, nil)
        if accepted >= 0 { close(accepted) }
        return accepted >= 0
    }

    deinit { close(fd) }
}

/// Resident set size of this process in bytes.
/// Fails rather than answering 0, which would let a growth check pass unmeasured.
func residentMemory() throws -> Int {
    let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
    let fields = text.split(separator: " ")
    let pages = try #require(fields.count > 1 ? Int(fields[1]) : nil, "cannot parse /proc/self/statm: \(text)")
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// RFC 9112 §3.2: Host is required on HTTP/1.1 requests in origin form.
@Suite("Host header", .timeLimit(.minutes(10)))
struct HostHeaderTests {
    @Test("an intercepted HTTP/1.1 request without Host (or with an empty one) gets 400 with the reason")
    func missingHostIsRefused() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let common = ["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}"]
        for header in ["Host:", "Host;"] {  // curl: "Host:" drops the field, "Host;" sends it empty
            let r = try curl(common + ["-H", header, "https://localhost:\(origin.port)/headers"])
            #expect(r.stdout.hasSuffix("\n400"), "\(header): \(r.stdout) \(r.stderr)")
            #expect(r.stdout.contains("Host"), "\(header): \(r.stdout)")
        }
    }

    @Test("an absolute-form request without Host is forwarded with the URI's authority as Host")
    func absoluteFormWithoutHost() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f)
        let client = try RawClient(port: proxy.port)
        client.send("GET http://127.0.0.1:\(plainOrigin.port)/headers HTTP/1.1\r\nConnection: close\r\n\r\n")
        let text = client.receiveText()
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.lowercased().contains("host: 127.0.0.1:\(plainOrigin.port)"), "\(text)")
    }
}
