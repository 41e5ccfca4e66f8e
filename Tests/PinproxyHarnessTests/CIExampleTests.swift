import Foundation
import PinproxyCertificates
import PinproxyTestSupport
import Testing

/// docs/ci.md's GitHub Actions workflow: its steps that can run here run as written, with the
/// runner's variables pointed at a temporary directory and `pinproxy` on the PATH.
@Suite(.timeLimit(.minutes(10)))
struct CIExampleTests {
    /// How a step ended.
    struct StepResult {
        var status: Int32
        var stdout: String
        var stderr: String
        var output: String { stdout + stderr }
    }

    /// The `run:` script of the step named `name` in `workflow` (a block `run: |` or one line).
    static func step(_ name: String, in workflow: String) throws -> String {
        let lines = workflow.components(separatedBy: "\n")
        let named = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "- name: \(name)" }, "no step '\(name)'")
        let runIndex = try #require(lines[(named + 1)...].firstIndex { $0.trimmingCharacters(in: .whitespaces).hasPrefix("run:") }, "no run in '\(name)'")
        let runLine = lines[runIndex].trimmingCharacters(in: .whitespaces)
        guard runLine == "run: |" else { return String(runLine.dropFirst("run:".count)).trimmingCharacters(in: .whitespaces) }
        let indent = lines[runIndex].prefix { $0 == " " }.count
        var body: [String] = []
        for line in lines[(runIndex + 1)...] {
            if line.trimmingCharacters(in: .whitespaces).isEmpty { body.append(""); continue }
            if line.prefix(while: { $0 == " " }).count <= indent { break }
            body.append(String(line.dropFirst(indent + 2)))
        }
        return body.joined(separator: "\n")
    }

    /// Runs `arguments` from the package root with its output in files, and waits for it to exit:
    /// a step leaves the daemon running in the background, which would hold a pipe open.
    static func runInFiles(_ arguments: [String], in directory: TemporaryDirectory) throws -> StepResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        let outPath = directory.file("step.out"), errPath = directory.file("step.err")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return StepResult(status: process.terminationStatus,
                             stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                             stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    @Test func theWorkflowsStepsRunAsWritten() throws {
        let workflow = try String(contentsOfFile: packageRoot + "/docs/ci.md", encoding: .utf8)
        let directory = try TemporaryDirectory()
        let bin = directory.file("bin"), runner = directory.file("runner")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: runner, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/pinproxy", withDestinationPath: pinproxyBinary)
        // Free loopback ports for the daemon instead of the workflow's 8080 and 8081.
        let ports = try (0..<2).map { _ in try LoopbackPort(listening: false).port }
        let environment = [
            "PATH": "\(bin):/usr/bin:/bin", "HOME": directory.path, "RUNNER_TEMP": runner,
            "PINPROXY_LISTEN": "127.0.0.1:\(ports[0])", "PINPROXY_ADMIN": "127.0.0.1:\(ports[1])",
            "GITHUB_STEP_SUMMARY": directory.file("summary.md"),
        ]
        // As GitHub runs a step: bash -e -o pipefail, from the checkout.
        func runStep(_ name: String, replacing: [(String, String)] = []) throws -> StepResult {
            // A runner's step inherits no descriptor beyond 0–2; this process's own (Foundation
            // watches a child's exit through one) would otherwise stay open in the daemon.
            let closeInherited = #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null; done; true"#
            var script = try Self.step(name, in: workflow)
            for (old, new) in replacing {
                #expect(script.contains(old), "\(name): \(script)")
                script = script.replacingOccurrences(of: old, with: new)
            }
            return try Self.runInFiles(["env", "-i"] + environment.map { "\($0)=\($1)" } + ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", closeInherited + "\n" + script],
                                       in: directory)
        }
        let pidFile = runner + "/pinproxy.pid"
        let start = try runStep("Start pinproxy")
        defer {
            if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                kill(pid, SIGKILL)
            }
        }
        #expect(start.status == 0, "\(start.output)")
        #expect(FileManager.default.fileExists(atPath: runner + "/ca/pinproxy-ca.pem") && FileManager.default.fileExists(atPath: pidFile))

        let gate = try runStep("Pinning gate", replacing: [("config/pinning.json", packageRoot + "/docs/examples/okhttp.json")])
        // The summary counts the rotations' outages between the failures and the errors.
        #expect(gate.status == 0 && gate.stdout.contains(" passed, 0 failed,") && gate.stdout.contains(" 0 errors"), "\(gate.output)")
        let junit = try String(contentsOfFile: runner + "/pinning.xml", encoding: .utf8)
        #expect(junit.contains("<testsuite ") && junit.contains("failures=\"0\""), "\(junit.prefix(400))")

        let summary = try runStep("Summary")
        #expect(summary.status == 0, "\(summary.output)")
        let page = try String(contentsOfFile: directory.file("summary.md"), encoding: .utf8)
        #expect(page.contains("### pinproxy check") && page.contains("| scenario |"), "\(page.prefix(400))")

        let stop = try runStep("Stop pinproxy")
        #expect(stop.status == 0, "\(stop.output)")
        #expect(!FileManager.default.fileExists(atPath: pidFile), "the daemon removes its pid file once it has stopped")
        #expect(FileManager.default.fileExists(atPath: runner + "/flows.har") && FileManager.default.fileExists(atPath: runner + "/events.jsonl"))
    }
}
