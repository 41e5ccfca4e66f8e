import Foundation
import PinproxyCertificates
@testable import PinproxyHarness
import PinproxyTestSupport
import Testing

/// `pinproxy check`'s whole run called as a library: what the CLI prints and writes, without a process.
@Suite(.timeLimit(.minutes(10)))
struct CheckSessionTests {
    /// Standard output and standard error, gathered.
    final class Captured: Sendable {
        let out = Locked("")
        let err = Locked("")
        var output: CheckOutput {
            CheckOutput(write: { text in self.out.withLock { $0 += text } }, writeError: { text in self.err.withLock { $0 += text } })
        }
        var stdout: String { out.withLock { $0 } }
        var stderr: String { err.withLock { $0 } }
    }

    @Test func aSessionPrintsTheCoverageNoteOnceBeforeTheRowsAndWritesTheReports() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write(#"{"family": "okhttp", "certificatePinner": {"other.example.com": ["world:leaf"]}}"#, to: "okhttp.json")
        let captured = Captured()
        let options = CheckOptions(subject: .policy(path: policy, deviceTrust: .yes), selected: ["direct", "forge"], http2: false,
                                   reports: [ReportFile(.json, path: directory.file("r.json")), ReportFile(.markdown, path: directory.file("r.md"))])
        let status = try CheckSession(options, output: captured.output).run(handlingSignals: false)
        let stdout = captured.stdout
        // Unpinned: OkHttp trusts the platform alone, so the forged chain under an installed proxy CA goes through.
        #expect(status == 1, "\(stdout)")
        let note = "note: the policy pins nothing for api.example.com: no CertificatePinner pattern (other.example.com) matches it"
        #expect(stdout.hasPrefix(note), "\(stdout)")
        #expect(stdout.components(separatedBy: "the policy pins nothing").count == 2, "said once: \(stdout)")
        #expect(stdout.contains("pinproxy check: \(policy) — okhttp") && stdout.contains("(world, origin and proxy set up in "), "\(stdout)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory.file("r.json")))) as? [String: Any]
        #expect((json?["notes"] as? [String])?.first?.hasPrefix("the policy pins nothing for api.example.com") == true, "in the report too")
        #expect(FileManager.default.fileExists(atPath: directory.file("r.md")))
        #expect(captured.stderr.isEmpty, "\(captured.stderr)")
    }

    @Test func anInterruptionBeforeTheFirstRowReturns130AndWritesNoReport() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf"]}}"#, to: "okhttp.json")
        let captured = Captured()
        let session = CheckSession(CheckOptions(subject: .policy(path: policy, deviceTrust: .both), selected: ["direct", "forge"],
                                                reports: [ReportFile(.json, path: directory.file("r.json"))]), output: captured.output)
        #expect(session.interrupt() == false)
        let status = try session.run(handlingSignals: false)
        #expect(status == 130)
        #expect(captured.stdout.contains("INTERRUPTED after 0 of 4 scenarios"), "\(captured.stdout)")
        #expect(captured.stderr == "pinproxy: interrupted\n")
        #expect(!FileManager.default.fileExists(atPath: directory.file("r.json")))
    }

    @Test func theProgressLineNamesEachRowBeforeItRunsAndIsClearedBeforeTheTable() throws {
        let directory = try TemporaryDirectory()
        let policy = try directory.write(#"{"family": "okhttp", "certificatePinner": {"api.example.com": ["world:leaf", "world:intermediate"]}}"#, to: "okhttp.json")
        // Both streams and the progress line in one log, to see what came first.
        let log = Locked<[String]>([])
        let output = CheckOutput(write: { text in log.withLock { $0.append("out:" + text) } },
                                 writeError: { text in log.withLock { $0.append("err:" + text) } },
                                 progress: { text in log.withLock { $0.append("progress:" + text) } })
        let options = CheckOptions(subject: .policy(path: policy, deviceTrust: .both), selected: ["direct", "forge", "re-key"], http2: false)
        let status = try CheckSession(options, output: output).run(handlingSignals: false)
        #expect(status == 0)
        let entries = log.withLock { $0 }
        let progress = entries.filter { $0.hasPrefix("progress:") }
        #expect(progress == [
            "progress:pinproxy check: row 1 of 6: direct, proxy CA on the device…",
            "progress:pinproxy check: row 2 of 6: direct, proxy CA not on the device…",
            "progress:pinproxy check: row 3 of 6: forge, proxy CA on the device…",
            "progress:pinproxy check: row 4 of 6: forge, proxy CA not on the device…",
            "progress:pinproxy check: row 5 of 6: re-key, direct…",
            "progress:pinproxy check: row 6 of 6: re-key, through passthrough…",
            "progress:",
        ], "\(entries)")
        // Cleared before the table is written, and nothing written in between.
        let cleared = try #require(entries.firstIndex(of: "progress:"))
        let table = try #require(entries.firstIndex { $0.hasPrefix("out:pinproxy check:") })
        #expect(cleared < table, "\(entries)")
        #expect(!entries.contains { $0.hasPrefix("err:") }, "\(entries)")
    }

    @Test func aStatusLineReplacesTheLineAndFitsTheTable() {
        #expect(CheckOutput.statusLine("row 1") == "\r\u{1B}[Krow 1")
        #expect(CheckOutput.statusLine("") == "\r\u{1B}[K")
        let long = CheckOutput.statusLine(String(repeating: "x", count: 150))
        #expect(long == "\r\u{1B}[K" + String(repeating: "x", count: 98) + "…")
    }

    @Test func aBadPolicyFileThrowsTheInputError() throws {
        let directory = try TemporaryDirectory()
        let session = CheckSession(CheckOptions(subject: .policy(path: directory.file("missing.json"), deviceTrust: .both)), output: Captured().output)
        #expect(throws: PinproxyError.self) { try session.run(handlingSignals: false) }
    }
}
