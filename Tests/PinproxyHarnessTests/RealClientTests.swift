import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyPinning
import PinproxyTestSupport
import Testing

/// `check --client`: real clients through the proxy, judged from what the proxy saw and their exit status.
@Suite(.timeLimit(.minutes(10)))
struct RealClientTests {
    static func check(_ command: String, selected: [String]? = nil) throws -> CheckReport {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        return try harness.check(client: try ClientCommand(command), selected: selected)
    }

    static let proxyRows = ["passthrough"] + Matrix.attacks

    @Test func curlWithAPinRefusesEveryAttack() throws {
        let report = try Self.check("curl -sS -o /dev/null --resolve {resolve} --cacert {ca} --pinnedpubkey {pin} {url}")
        #expect(report.results.map(\.scenario) == ["direct"] + Self.proxyRows)
        #expect(report.passed == report.results.count, "\(Matrix.dump(report))")
        #expect(report.notes.isEmpty, "\(report.notes)")
        // The direct row: curl straight to the origin (--resolve), no proxy in between.
        let direct = try #require(report.results.first)
        #expect(direct.actual == "ACCEPT" && direct.originReceivedRequest && direct.proxyObserved == nil, "\(Matrix.dump(report))")
        let forge = try #require(report.results.first { $0.scenario == "forge" })
        #expect(forge.clientExitStatus == 60 && forge.refusedAt == .handshake, "\(Matrix.dump(report))")
        // Trusted by {ca}, refused by the pin right after the handshake: curl error 90.
        let misissued = try #require(report.results.first { $0.scenario == "misissued" })
        #expect(misissued.clientExitStatus == 90 && misissued.refusedAt == .afterHandshake, "\(Matrix.dump(report))")
        #expect(misissued.proxyObserved == "closed-after-handshake-without-request")
    }

    @Test func curlTrustingTheProxyCAWithoutAPinIsReportedAsFailing() throws {
        let report = try Self.check("curl -sS -o /dev/null --resolve {resolve} --cacert {proxy-ca} {url}")
        let forge = try #require(report.results.first { $0.scenario == "forge" })
        #expect(forge.status == .fail && forge.actual == "ACCEPT" && forge.clientExitStatus == 0, "\(Matrix.dump(report))")
        #expect(forge.proxyObserved == "intercepted")
        #expect(Matrix.failures(report) == ["direct/-", "passthrough/-", "forge/-", "stuff/-"], "\(Matrix.dump(report))")
        // Why the genuine origin was refused, said before the rows: no {ca}.
        #expect(report.notes.contains { $0.hasPrefix("the command names neither {ca} nor {device-ca}") && $0.contains("add --cacert {ca}") },
                "\(report.notes)")
        // The genuine chain is refused in the handshake, straight and through the tunnel alike: the origin saw it.
        for name in ["direct", "passthrough"] {
            let row = try #require(report.results.first { $0.scenario == name })
            #expect(row.actual == "REJECT" && row.refusedAt == .handshake && row.clientExitStatus == 60, "\(Matrix.dump(report))")
        }
        #expect(report.exitStatus == 1)
        #expect(TableReport.text(report).contains("exit 0; the client sent its request through the proxy"))
    }

    @Test func wgetWithAPinRefusesEveryAttack() throws {
        // wget cannot be told an address for a name: no direct row, and a note says why.
        let report = try Self.check("wget -q -O /dev/null --ca-certificate={ca} --pinnedpubkey={pin} {url}")
        #expect(report.results.map(\.scenario) == Self.proxyRows)
        #expect(report.passed == report.results.count, "\(Matrix.dump(report))")
        #expect(report.notes.contains { $0.hasPrefix("no direct row: the command names neither {resolve} nor {address}") }, "\(report.notes)")
    }

    @Test func pythonWithoutPinningFallsToTheMisissuingCA() throws {
        // The world's host looked up as {address}; through the proxy Python looks up the proxy only.
        let script = """
            import socket, ssl, sys, urllib.request
            lookup = socket.getaddrinfo
            socket.getaddrinfo = lambda host, *rest, **named: lookup(sys.argv[4] if host == sys.argv[3] else host, *rest, **named)
            context = ssl.create_default_context(cafile=sys.argv[2])
            print(urllib.request.urlopen(sys.argv[1], context=context).status)
            """
        let report = try Self.check("python3 -c \(ClientCommand.quote(script)) {url} {ca} {host} {address}")
        #expect(report.results.first?.scenario == "direct" && report.results.first?.status == .pass, "\(Matrix.dump(report))")
        #expect(Matrix.failures(report) == ["misissued/-"], "\(Matrix.dump(report))")
        #expect(report.errors == 0)
    }

    @Test func aDirectRowThatNeverReachesTheOriginIsAnErrorNotARefusal() throws {
        // {address} is named but unused: curl goes to a closed port instead, whatever DNS says of the host.
        let closed = try LoopbackPort(listening: false)
        let report = try Self.check("curl -sS -o /dev/null --connect-to {host}:{port}:127.0.0.1:\(closed.port) --cacert {ca} {url} # {address}",
                                    selected: ["direct"])
        let direct = try #require(report.results.first)
        #expect(report.results.count == 1 && direct.status == .error, "\(Matrix.dump(report))")
        #expect(direct.reason.contains("the client never reached the origin (exit 7"), "\(direct.reason)")
        #expect(report.exitStatus == 3)
        // A command that names neither placeholder cannot run the direct row at all.
        #expect(throws: PinproxyError.self) { try Self.check("curl -sS {url}", selected: ["direct", "forge"]) }
    }

    @Test func aClientThatIgnoresTheProxyIsAnError() throws {
        let report = try Self.check("true {url}")
        #expect(report.results.allSatisfy { $0.status == .error }, "\(Matrix.dump(report))")
        #expect(report.results.first?.reason.contains("never reached the proxy") == true)
        #expect(report.exitStatus == 3)
    }

    @Test func unknownPlaceholdersAreRefused() {
        #expect { try ClientCommand("curl {uri}") } throws: { "\($0)".contains("unknown placeholder {uri} (did you mean {url}?); known:") }
        #expect { try ClientCommand("curl {nonsense}") } throws: { "\($0)".contains("unknown placeholder {nonsense}; known:") }
        #expect(throws: PinproxyError.self) { try ClientCommand("  ") }
        #expect(ClientCommand.quote("a b'c") == "'a b'\\''c'")
    }

    @Test func childrenStartWithDefaultSignalsAndAreReapedAfterATimeout() throws {
        signal(SIGPIPE, SIG_IGN)  // as the proxy sets it in this process
        let status = try ChildProcess.run(shell: "grep -E '^Sig(Blk|Ign)' /proc/self/status", environment: ["PATH": "/usr/bin:/bin"], timeout: 5)
        #expect(status.status == 0)
        #expect(status.output.contains("SigBlk:\t0000000000000000"), "\(status.output)")
        // Signals 1–31 at their defaults (SIGPIPE among them); 32 and 33 are glibc's own, which no program sets.
        let ignored = status.output.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }
            .flatMap { UInt64($0.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespaces), radix: 16) }
        #expect(ignored.map { $0 & 0x7fff_ffff } == 0, "\(status.output)")

        let started = Date()
        let slow = try ChildProcess.run(shell: "sleep 30 & echo $!; wait", environment: ["PATH": "/usr/bin:/bin"], timeout: 0.5)
        #expect(slow.timedOut)
        #expect(Date().timeIntervalSince(started) < 5)
        let grandchild = try #require(Int32(slow.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        // The whole group went: the backgrounded sleep is gone, or a zombie waiting for init, never running.
        func stat(_ pid: Int32) -> [Substring]? {
            (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: " ")
        }
        let deadline = Date().addingTimeInterval(2)
        while let fields = stat(grandchild), fields[2] != "Z", Date() < deadline { usleep(10_000) }
        let fields = stat(grandchild)
        #expect(fields == nil || fields?[2] == "Z", "grandchild \(grandchild): \(fields.map { $0.prefix(3).joined(separator: " ") } ?? "")")
        // The shell itself (the group's leader, field 5 of the sleep's stat) was reaped: no zombie of ours.
        if let group = fields.flatMap({ Int32($0[4]) }) {
            #expect(stat(group) == nil, "the shell \(group) was not reaped")
        }
    }
}

/// `--client-timeout`: a client that hangs is ended at its deadline, and the row says so.
@Suite(.timeLimit(.minutes(10)))
struct ClientTimeoutTests {
    @Test func aHangingClientIsEndedAtItsDeadlineAndTheRowSaysSo() throws {
        let harness = try Harness.start(host: Matrix.host)
        defer { harness.stop() }
        let rows = ["direct", "passthrough", "forge", "self-signed", "expired"]
        let report = try harness.check(client: try ClientCommand("sleep 30 # {url} {resolve}"), selected: rows, timeout: 1)
        #expect(report.results.map(\.scenario) == rows)
        for row in report.results {
            #expect(row.status == .error && row.clientExitStatus == 143, "\(Matrix.dump(report))")
            let place = row.scenario == "direct" ? "origin" : "proxy"
            #expect(row.reason.hasPrefix("the client timed out after 1 s (--client-timeout; SIGTERM, then SIGKILL) without reaching the \(place)"),
                    "\(row.scenario): \(row.reason)")
        }

        let half = try harness.check(client: try ClientCommand("sleep 30 # {url}"), selected: ["forge"], timeout: 0.5)
        #expect(half.results.first?.reason.contains("timed out after 0.5 s") == true, "\(Matrix.dump(half))")
    }
}
