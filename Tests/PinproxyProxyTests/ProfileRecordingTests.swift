import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy
import Testing

/// What the proxy records about refusals and profiles: definite and suspected
/// refusals kept apart, and the profile named in every record.
@Suite("Refusal grades and profiles in records", .timeLimit(.minutes(10)))
struct ProfileRecordingTests {
    /// A daemon with an admin API whose log lines are kept.
    struct LoggedDaemon {
        let daemon: ProxyDaemon
        let lines: Locked<[String]>
        var port: Int { daemon.server.address?.port ?? 0 }
        var admin: String { "http://127.0.0.1:\(daemon.admin?.address?.port ?? 0)" }

        init(_ f: Fixtures, profile: AttackProfile = .forge, har: String? = nil, events: String? = nil) throws {
            var c = ProxyConfiguration()
            c.listen = ListenAddress(host: "127.0.0.1", port: 0)
            c.upstreamTrust = .file(f.originCAPath)
            c.timeouts.drain = 1
            c.rules.defaultProfile = profile
            let lines = Locked<[String]>([])
            var logger = Logger(label: "pinproxy-test") { _ in CollectingLogHandler(lines: lines) }
            logger.logLevel = .info
            daemon = try ProxyDaemon(configuration: c, authority: f.proxyCA, adminAddress: ListenAddress(host: "127.0.0.1", port: 0),
                                     harPath: har, eventsPath: events, logger: logger)
            _ = try daemon.start()
            self.lines = lines
        }

        /// The first log line containing every one of `parts`, waiting for it (bounded).
        func line(containing parts: String...) -> String? {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let found = lines.withLock({ $0.first { line in parts.allSatisfy(line.contains) } }) { return found }
                usleep(50_000)
            }
            return nil
        }

        func event(_ kind: TLSOutcomeEvent.Kind) -> TLSOutcomeEvent? {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let e = daemon.server.recorder.recent.events.first(where: { $0.kind == kind }) { return e }
                usleep(50_000)
            }
            return nil
        }
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test("a handshake then silence (openssl s_client) is a suspected refusal, an alert a definite one: apart in events, log lines and /health")
    func suspectedAndDefiniteRefusalsKeptApart() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try LoggedDaemon(f)
        defer { proxy.daemon.stop() }

        _ = try receivedChain(proxyPort: proxy.port, originPort: origin.port)  // a probe: handshake, then gone
        let probe = try #require(proxy.event(.closedAfterHandshakeWithoutRequest))
        #expect(probe.refusal == .suspected)
        let notice = try #require(proxy.line(containing: "may have refused the forged certificate", "or was only probing", "(profile forge)"))
        #expect(notice.hasPrefix("notice "), "\(notice)")

        let untrusting = try curl(["--proxy", "http://127.0.0.1:\(proxy.port)", "https://localhost:\(origin.port)/hello"])
        #expect(untrusting.status == 60)
        let alert = try #require(proxy.event(.clientAlert))
        #expect(alert.refusal == .definite)
        let warning = try #require(proxy.line(containing: "client refused the forged certificate for localhost (alert unknown_ca)", "(profile forge)"))
        #expect(warning.hasPrefix("warning "), "\(warning)")

        let health = try json(try curl(["\(proxy.admin)/health"]).stdout)
        let counts = try #require(health["counts"] as? [String: Any])
        #expect(counts["rejected"] as? Int == 1, "\(counts)")
        #expect(counts["suspected"] as? Int == 1, "\(counts)")
        let forge = try #require((health["profiles"] as? [String: Any])?["forge"] as? [String: Any], "\(health)")
        #expect(forge["rejected"] as? Int == 1 && forge["suspected"] as? Int == 1 && forge["events"] as? Int == 2, "\(forge)")

        let events = try #require(try json(try curl(["\(proxy.admin)/events"]).stdout)["events"] as? [[String: Any]])
        let grades = events.compactMap { event in (event["kind"] as? String).map { "\($0) \(event["refusal"] as? String ?? "-")" } }
        #expect(Set(grades) == ["closed-after-handshake-without-request suspected", "client-alert definite"], "\(grades)")
    }

    @Test("every record names the profile: event, flow, HAR entry, JSON line and log line")
    func everyRecordNamesTheProfile() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let har = f.directory.file("flows.har"), events = f.directory.file("events.jsonl")
        let proxy = try LoggedDaemon(f, profile: .expired, har: har, events: events)
        // A client that skips verification accepts the expired leaf and sends its request.
        let r = try curl(["--proxy", "http://127.0.0.1:\(proxy.port)", "--insecure", "https://localhost:\(origin.port)/hello"])
        #expect(r.stdout == "hello from origin\n", "\(r.stderr)")
        let accepted = try #require(proxy.event(.intercepted))
        #expect(accepted.profile == "expired")
        #expect(accepted.message == "client accepted the expired certificate for localhost and sent a request (profile expired)")
        #expect(proxy.line(containing: "GET https://localhost:\(origin.port)/hello -> 200", "(profile expired)") != nil,
                "\(proxy.lines.withLock { $0 })")
        #expect(proxy.line(containing: "accepted the expired certificate", "(profile expired)") != nil)
        proxy.daemon.stop()

        let flow = try #require(proxy.daemon.server.recorder.recent.flows.first)
        #expect(flow.clientTLS?.profile == "expired")
        #expect(flow.outcome?.profile == "expired")

        let entries = try #require((try json(try String(contentsOfFile: har, encoding: .utf8))["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let extra = try #require(entries.first?["_pinproxy"] as? [String: Any])
        #expect((extra["clientTLS"] as? [String: Any])?["profile"] as? String == "expired", "\(extra)")
        #expect((extra["outcome"] as? [String: Any])?["profile"] as? String == "expired", "\(extra)")

        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map { try json(String($0)) }
        let flowLine = try #require(lines.first { $0["type"] as? String == "flow" }?["flow"] as? [String: Any])
        #expect((flowLine["clientTLS"] as? [String: Any])?["profile"] as? String == "expired", "\(flowLine)")
        let eventLine = try #require(lines.first { $0["type"] as? String == "event" }?["event"] as? [String: Any])
        #expect(eventLine["profile"] as? String == "expired", "\(eventLine)")
    }
}
