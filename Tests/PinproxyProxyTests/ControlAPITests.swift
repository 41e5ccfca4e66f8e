import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy
import Testing

/// The control API's edges (strict rules JSON, clearing, HEAD, POST) and
/// what the proxy records at shutdown and logs for rejections.
@Suite("Control API and capture", .timeLimit(.minutes(10)))
struct ControlAPITests {
    static func admin(_ proxy: RunningProxy) throws -> String {
        "http://127.0.0.1:\(try #require(proxy.admin?.address?.port))"
    }

    @Test("PUT /rules refuses unknown keys, at the top and inside a rule, naming the key")
    func unknownRuleKeys() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try ControlAPITests.admin(proxy)
        let top = try curl(["-X", "PUT", "--data", #"{"extra":1}"#, "-w", "\n%{http_code}", "\(admin)/rules"])
        #expect(top.stdout.hasSuffix("\n400"), "\(top.stdout)")
        #expect(top.stdout.contains("unknown key 'extra'"), "\(top.stdout)")
        let nested = try curl(["-X", "PUT", "--data", #"{"rules":[{"pattern":"a.test","profile":"forge","prio":1}]}"#,
                               "-w", "\n%{http_code}", "\(admin)/rules"])
        #expect(nested.stdout.hasSuffix("\n400"), "\(nested.stdout)")
        #expect(nested.stdout.contains("unknown key 'prio'"), "\(nested.stdout)")
        // Missing keys, wrong types and broken JSON are told in plain words, with the place.
        for (body, words) in [
            (#"{"rules":[{"pattern":"x.test"}]}"#, "invalid rules JSON: rules[0].profile: missing (it is required)"),
            (#"{"rules":[{"pattern":7,"profile":"forge"}]}"#, "invalid rules JSON: rules[0].pattern: expected a string"),
            (#"{"passthrough":"a.test"}"#, "invalid rules JSON: passthrough: expected an array"),
            ("rules please", "invalid rules JSON: not valid JSON"),
        ] {
            let r = try curl(["-X", "PUT", "--data", body, "-w", "\n%{http_code}", "\(admin)/rules"])
            #expect(r.stdout.hasSuffix("\n400"), "\(r.stdout)")
            #expect(r.stdout.contains(words), "\(body): \(r.stdout)")
            #expect(!r.stdout.contains("DecodingError") && !r.stdout.contains("CodingKeys"), "\(r.stdout)")
        }
        let good = try curl(["-X", "PUT", "--data", #"{"passthrough":["**.bank.test"]}"#, "-o", "/dev/null", "-w", "%{http_code}", "\(admin)/rules"])
        #expect(good.stdout == "200")
    }

    @Test("POST /rules is refused with 405 and Allow")
    func postRulesRefused() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let r = try curl(["-i", "-X", "POST", "--data", #"{"defaultProfile":"passthrough"}"#, "\(try ControlAPITests.admin(proxy))/rules"])
        #expect(r.stdout.hasPrefix("HTTP/1.1 405"), "\(r.stdout)")
        #expect(r.stdout.contains("Allow: GET, HEAD, PUT"), "\(r.stdout)")
        #expect(proxy.server.rules.defaultProfile == .forge)
    }

    @Test("DELETE /flows and DELETE /events empty the recent rings with 204")
    func clearRings() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f, admin: true)
        let admin = try ControlAPITests.admin(proxy)
        _ = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "https://localhost:\(origin.port)/hello"])
        #expect(proxy.waitForEvent(.intercepted) != nil)
        #expect(!proxy.server.recorder.recent.flows.isEmpty)
        for path in ["flows", "events"] {
            let r = try curl(["-i", "-X", "DELETE", "\(admin)/\(path)"])
            #expect(r.stdout.hasPrefix("HTTP/1.1 204"), "\(r.stdout)")
            #expect(!r.stdout.contains("Content-Length"), "\(r.stdout)")
        }
        #expect(proxy.server.recorder.recent.flows.isEmpty)
        #expect(proxy.server.recorder.recent.events.isEmpty)
        #expect(proxy.server.recorder.recent.hostSummaries.isEmpty)
        let flows = try curl(["\(admin)/flows"])
        let parsed = try JSONSerialization.jsonObject(with: Data(flows.stdout.utf8)) as? [String: Any]
        #expect((parsed?["flows"] as? [Any])?.isEmpty == true, "\(flows.stdout)")
    }

    @Test("HEAD mirrors GET's headers without a body")
    func headMirrorsGet() throws {
        let f = try Fixtures()
        let proxy = try RunningProxy(f, admin: true)
        let admin = try ControlAPITests.admin(proxy)
        for path in ["ca.pem", "ca.cer", "health", "rules"] {
            let get = try curl(["-s", "-D", "-", "-o", "/dev/null", "\(admin)/\(path)"])
            let head = try curl(["-s", "-I", "\(admin)/\(path)"])
            func header(_ text: String, _ name: String) -> String? {
                text.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ":") }.map(String.init)
            }
            #expect(head.stdout.hasPrefix("HTTP/1.1 200"), "\(path): \(head.stdout)")
            #expect(header(head.stdout, "content-type") == header(get.stdout, "content-type"), "\(path): \(head.stdout) vs \(get.stdout)")
            if path.hasPrefix("ca.") {
                #expect(header(head.stdout, "content-length") == header(get.stdout, "content-length"), "\(path)")
            }
        }
    }

    @Test("the first exchange on an upstream connection carries its connect and TLS times, later ones -1")
    func connectTimingsOnFirstExchangeOnly() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        // One curl, two requests: the second reuses the tunnel and the upstream connection.
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath,
                          "https://localhost:\(origin.port)/hello", "https://localhost:\(origin.port)/hello"])
        #expect(r.status == 0, "\(r.stderr)")
        let flows = proxy.server.recorder.recent.flows.filter { $0.request.url.hasSuffix("/hello") }
        try #require(flows.count == 2, "\(flows.count) flows")
        let first = flows.min { $0.startedAt < $1.startedAt }!, second = flows.max { $0.startedAt < $1.startedAt }!
        #expect(first.timings.connect >= 0 && first.timings.ssl >= 0 && first.timings.connect >= first.timings.ssl,
                "\(first.timings)")
        #expect(second.timings.connect == -1 && second.timings.ssl == -1, "\(second.timings)")
        // Both carry the connection's TLS outcome: the client trusted the forged leaf.
        #expect(flows.allSatisfy { $0.outcome?.kind == .intercepted }, "\(flows.map { $0.outcome?.kind.rawValue ?? "nil" })")
    }

    @Test("an exchange cut off by shutdown is in the HAR with 'interrupted by shutdown'")
    func interruptedFlowRecorded() throws {
        let f = try Fixtures()
        let plainOrigin = try Origin(chain: nil, key: nil)
        let har = f.directory.file("flows.har")
        let proxy = try RunningProxy(f, harPath: har)
        // A reader that never reads keeps the download in progress.
        let client = try RawClient(port: proxy.port, receiveBuffer: 4096)
        client.send("GET http://127.0.0.1:\(plainOrigin.port)/bytes/200000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = client.receive(timeout: 10) { $0.count > 0 }
        proxy.daemon?.stop()
        let text = try String(contentsOfFile: har, encoding: .utf8)
        #expect(text.contains("/bytes/200000000"), "\(text.prefix(400))")
        #expect(text.contains("interrupted by shutdown"), "\(text.prefix(400))")
    }

    @Test("warning lines for rejections carry the client address")
    func rejectionLogHasClientAddress() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let lines = Locked<[String]>([])
        var c = ProxyConfiguration()
        c.listen = ListenAddress(host: "127.0.0.1", port: 0)
        c.upstreamTrust = .file(f.originCAPath)
        c.timeouts.drain = 1
        var logger = Logger(label: "pinproxy-test") { _ in CollectingLogHandler(lines: lines) }
        logger.logLevel = .info
        let daemon = try ProxyDaemon(configuration: c, authority: f.proxyCA, adminAddress: nil, harPath: nil, eventsPath: nil, logger: logger)
        let address = try daemon.start()
        defer { daemon.stop() }
        // curl without the proxy CA refuses the forged chain (alert unknown_ca).
        _ = try curl(["--proxy", "http://127.0.0.1:\(address.port)", "https://localhost:\(origin.port)/hello"])
        let deadline = Date().addingTimeInterval(10)
        var warning: String?
        while warning == nil && Date() < deadline {
            warning = lines.withLock { $0.first { $0.hasPrefix("warning ") && $0.contains("refused the forged certificate") } }
            if warning == nil { usleep(50_000) }
        }
        let line = try #require(warning, "no warning line: \(lines.withLock { $0 })")
        #expect(line.contains("127.0.0.1:"), "\(line)")
    }

    @Test("a client accepting an attack's chain is a warning; accepting forge is an ordinary line")
    func acceptingAnAttackChainIsAWarning() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let lines = Locked<[String]>([])
        let proxy = try RunningProxy(f, configure: { $0.rules = InterceptionRules(defaultProfile: .expired) }, logLines: lines)
        // curl -k accepts anything: the expired leaf included.
        let r = try curl(["--proxy", proxy.url, "-k", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout == "hello from origin\n", "\(r.stderr)")
        let accepted = try #require(waitForLine(in: lines) { $0.contains("accepted the expired certificate") })
        #expect(accepted.hasPrefix("warning "), "\(accepted)")

        let forgeLines = Locked<[String]>([])
        let forge = try RunningProxy(f, logLines: forgeLines)
        _ = try curl(["--proxy", forge.url, "--cacert", f.proxyCAPath, "https://localhost:\(origin.port)/hello"])
        let ordinary = try #require(waitForLine(in: forgeLines) { $0.contains("accepted the forged certificate") })
        #expect(ordinary.hasPrefix("info "), "\(ordinary)")
    }

    @Test("log lines name the client address once; the JSON event keeps it in its own field")
    func logLinesNameTheClientOnce() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let lines = Locked<[String]>([])
        let events = f.directory.file("events.jsonl")
        let proxy = try RunningProxy(f, eventsPath: events, logLines: lines)
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout == "hello from origin\n", "\(r.stderr)")
        let event = try #require(proxy.waitForEvent(.intercepted))
        let address = event.clientAddress
        #expect(address.hasPrefix("127.0.0.1:"), "\(address)")
        let accepted = try #require(waitForLine(in: lines) { $0.contains("accepted the forged certificate") })
        let flowLine = try #require(waitForLine(in: lines) { $0.contains("/hello -> 200") })
        for line in [accepted, flowLine] {
            #expect(line.components(separatedBy: address).count - 1 == 1, "\(line)")
        }
        proxy.daemon?.stop()
        let json = try String(contentsOfFile: events, encoding: .utf8)
        #expect(json.contains("\"clientAddress\":\"\(address)\""), "\(json)")
    }
}

/// Keeps every log line as "level message".
struct CollectingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}
