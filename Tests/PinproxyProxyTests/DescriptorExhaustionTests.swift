import Foundation
import PinproxyBase
import PinproxyCertificates
import PinproxyTestSupport
import Testing

/// `serve` with few file descriptors: the loop that watches the listening
/// socket stops watching it when `accept` fails for want of descriptors, and
/// watches it again 100 ms later, so that a full table neither spins the
/// loop nor stops the proxy for good.
@Suite("Running out of file descriptors", .timeLimit(.minutes(10)))
struct DescriptorExhaustionTests {
    /// Opens a TCP connection to 127.0.0.1:`port` (completed by the kernel's
    /// backlog whether or not the proxy accepts it); -1 on failure.
    static func connectRaw(port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    @Test("out of descriptors, serve says so and pauses accepting; once connections close it accepts and answers again")
    func pausesAndResumes() throws {
        let binary = try ServeCommandTests.requireBinary()
        let prlimit = try #require(findExecutable("prlimit"), "prlimit (util-linux) not found")
        let f = try Fixtures()
        let caDir = f.directory.file("ca")
        try CADirectory(path: caDir).store(f.proxyCA, overwrite: false)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: prlimit)
        // A hard limit too: serve raises its soft limit to the hard one.
        process.arguments = ["--nofile=48:48", binary, "serve", "--dir", caDir, "--listen", "127.0.0.1:0"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let errors = Locked(Data())
        DispatchQueue.global().async {
            while true {
                let chunk = err.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                errors.withLock { $0 += chunk }
            }
        }
        let ready = serveReadyLine(out, deadline: Date() + 30)
        let port = try #require(readyLinePort(ready), "no ready line: \(ready)")
        func stderrText() -> String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

        // More idle connections than the proxy has descriptors left for.
        var holders: [Int32] = []
        defer { for fd in holders { close(fd) } }
        for _ in 0..<80 {
            let fd = Self.connectRaw(port: port)
            if fd >= 0 { holders.append(fd) }
        }
        #expect(holders.count == 80)
        var warned = false
        for _ in 0..<100 where !warned {
            warned = stderrText().contains("out of file descriptors; pausing accept for 100 ms at a time until one frees (raise the limit: ulimit -n)")
            if !warned { usleep(100_000) }
        }
        #expect(warned, "no warning; stderr: \(stderrText())")
        #expect(process.isRunning, "serve exited: \(stderrText())")

        for fd in holders { close(fd) }
        holders = []
        // Answered once the closed connections are gone: a 502 for an
        // upstream that refuses, from the proxy itself.
        var status = ""
        for _ in 0..<50 where status != "502" {
            status = (try? curl(["--proxy", "http://127.0.0.1:\(port)", "-o", "/dev/null", "-w", "%{http_code}",
                                 "--max-time", "2", "http://127.0.0.1:9/"]))?.stdout ?? ""
            if status != "502" { usleep(200_000) }
        }
        #expect(status == "502", "the proxy did not answer again; stderr: \(stderrText())")
        // One warning however many 100 ms pauses the shortage took (at most one every 10 s).
        #expect(stderrText().split(separator: "\n").filter { $0.contains("out of file descriptors") }.count == 1, "\(stderrText())")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "stderr: \(stderrText())")
    }
}
