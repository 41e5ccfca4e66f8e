import Foundation
import PinproxyCertificates
import PinproxyTestSupport
import Synchronization
import Testing
@testable import PinproxyProxy

/// Log lines gathered per event-loop batch arrive whole, in order, and all
/// of them: from loops and other threads at once, and from a daemon stopped
/// with SIGTERM.
@Suite("Log line output", .timeLimit(.minutes(5)))
struct LogLineOutputTests {
    /// A file to write lines to and read them back from.
    final class LineFile: Sendable {
        let path: String
        let descriptor: Int32
        init() throws {
            path = NSTemporaryDirectory() + "pinproxy-log-\(UUID().uuidString)"
            descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
            try #require(descriptor >= 0)
        }
        deinit {
            close(descriptor)
            unlink(path)
        }
        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    }

    @Test("a batch's lines wait for its end and leave together; flush writes them at once")
    func batchWritesAtItsEnd() throws {
        let file = try LineFile()
        let output = LogLineOutput(descriptor: file.descriptor)
        let loop = EventLoop(label: "test.log.loop")
        let seen = Mutex<(inBatch: String, afterFlush: String)>(("", ""))
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            output.write(Array("one\n".utf8))
            output.write(Array("two\n".utf8))
            let inBatch = file.text
            output.flush()
            output.write(Array("three\n".utf8))
            seen.withLock { $0 = (inBatch, file.text) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let (inBatch, afterFlush) = seen.withLock { $0 }
        #expect(inBatch == "", "written before the batch ended: \(inBatch)")
        #expect(afterFlush == "one\ntwo\n")
        // The batch's end writes what came after the flush.
        var waited = 0
        while file.text != "one\ntwo\nthree\n" && waited < 3_000 { usleep(1_000); waited += 1 }
        #expect(file.text == "one\ntwo\nthree\n")
    }

    /// Long lines, so that a split or an interleaving shows.
    static func line(_ writer: String, _ index: Int) -> [UInt8] {
        Array("\(writer) \(index) \(String(repeating: writer, count: 50 + index % 200))\n".utf8)
    }

    @Test("lines from two loops and four threads at once: every line whole, once, in each writer's order")
    func concurrentWritersKeepLinesWhole() throws {
        let file = try LineFile()
        let output = LogLineOutput(descriptor: file.descriptor)
        let loops = [EventLoop(label: "test.log.a"), EventLoop(label: "test.log.b")]
        let perWriter = 2_000
        let group = DispatchGroup()
        for (n, loop) in loops.enumerated() {
            for chunk in 0..<20 {
                group.enter()
                loop.execute {
                    for index in chunk * perWriter / 20..<(chunk + 1) * perWriter / 20 { output.write(Self.line("loop\(n)", index)) }
                    group.leave()
                }
            }
        }
        for n in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                for index in 0..<perWriter { output.write(Self.line("thread\(n)", index)) }
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        output.flush()
        var next: [String: Int] = [:]
        var count = 0
        for text in file.text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let parts = text.split(separator: " ")
            guard parts.count == 3, let index = Int(parts[1]) else { Issue.record("not a whole line: \(text.prefix(80))"); return }
            let writer = String(parts[0])
            #expect(String(decoding: Self.line(writer, index), as: UTF8.self) == text + "\n", "a damaged line: \(text.prefix(80))")
            #expect(index == next[writer, default: 0], "\(writer): line \(index) where \(next[writer, default: 0]) was due")
            next[writer] = index + 1
            count += 1
        }
        #expect(count == 6 * perWriter)
        #expect(file.text.hasSuffix("\n"))
    }

    @Test("a daemon stopped with SIGTERM has logged every flow, each line whole, and 'stopped' last")
    func daemonLogsEveryFlowBeforeStopping() throws {
        let binary = try ServeCommandTests.requireBinary()
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let caDir = f.directory.file("ca"), logPath = f.directory.file("stderr.log")
        try CADirectory(path: caDir).store(f.proxyCA, overwrite: false)
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--dir", caDir, "--listen", "127.0.0.1:0", "--upstream-ca", f.originCAPath, "--loops", "2"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = log
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let text = serveReadyLine(out)
        let port = try #require(readyLinePort(text), "\(text)")

        // Three clients at once, each with 25 requests on one connection.
        let clients = 3, perClient = 25
        let url = "https://localhost:\(origin.port)/hello"
        let received = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: clients) { _ in
            let r = try? curl(["--proxy", "http://127.0.0.1:\(port)", "--cacert", "\(caDir)/pinproxy-ca.pem"]
                              + Array(repeating: url, count: perClient), timeout: 60)
            let answers = r?.stdout.components(separatedBy: "hello from origin\n").count ?? 1
            received.withLock { $0 += answers - 1 }
        }
        #expect(received.withLock { $0 } == clients * perClient)

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        try log.close()
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "", "the log does not end with a newline")
        let shape = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (trace|debug|info|notice|warning|error|critical) pinproxy: \[[A-Za-z]+\] .+/
        for line in lines.dropLast() { #expect(line.wholeMatch(of: shape) != nil, "not a whole log line: \(line)") }
        let flows = lines.filter { $0.wholeMatch(of: /.* info pinproxy: \[PinproxyProxy\] 127\.0\.0\.1:\d+ GET https:\/\/localhost:\d+\/hello -> 200 \(profile forge\)/) != nil }
        #expect(flows.count == clients * perClient, "\(lines.joined(separator: "\n"))")
        #expect(lines.dropLast().last?.hasSuffix("] stopped") == true, "\(lines.suffix(3))")
    }
}
