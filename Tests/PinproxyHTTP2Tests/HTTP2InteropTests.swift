import Foundation
import PinproxyHTTP1
import PinproxyHTTP2
import PinproxyTestSupport
import Testing

/// Real HTTP/2 clients (nghttp, curl) against a loopback h2c server built on
/// the server session: proof that real peers interoperate with it.
@Suite("HTTP/2 server session with real clients", .serialized)
struct HTTP2InteropTests {
    @Test("curl downloads 3 MB and uploads 2 MB with prior knowledge")
    func curl() throws {
        let server = try LoopbackH2Server()
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let base = "http://127.0.0.1:\(server.port)"
        let size = 3 * 1024 * 1024 + 5
        let download = try run(["curl", "--max-time", "60", "-sS", "--http2-prior-knowledge", "-o", directory.file("down"), "-w", "%{http_version} %{http_code}",
                                "\(base)/bytes/\(size)"])
        #expect(download.status == 0, "\(download.output)")
        #expect(download.stdout == "2 200")
        let downloaded = FileManager.default.contents(atPath: directory.file("down")).map { [UInt8]($0) }
        let same = downloaded == downloadPattern(size)
        #expect(same, "curl got \(downloaded?.count ?? 0) bytes, not the \(size) sent")

        let upload = pattern(2 * 1024 * 1024, seed: 11)
        try Data(upload).write(to: URL(fileURLWithPath: directory.file("up")))
        let echo = try run(["curl", "--max-time", "60", "-sS", "--http2-prior-knowledge", "--data-binary", "@" + directory.file("up"),
                            "-o", directory.file("echo"), "\(base)/echo"])
        #expect(echo.status == 0, "\(echo.output)")
        let echoed = FileManager.default.contents(atPath: directory.file("echo")).map { [UInt8]($0) }
        let echoedSame = echoed == upload
        #expect(echoedSame, "the echo was \(echoed?.count ?? 0) bytes, not \(upload.count)")
        #expect(server.record.withLock { $0.errors }.isEmpty)
    }

    @Test("nghttp runs 40 concurrent streams through small windows, and sends trailers")
    func nghttp() throws {
        let server = try LoopbackH2Server()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        // 16 KiB stream windows and 64 KiB for the connection: flow control all the way.
        let many = try run(["nghttp", "--timeout=60", "-n", "-m", "40", "-w", "14", "-W", "16", "\(base)/bytes/200000"])
        #expect(many.status == 0, "\(many.output)")
        let record = server.record.withLock { $0 }
        #expect(record.requests.count == 40)
        #expect(record.closedNormally == 40)
        #expect(record.mostOpenStreams > 1, "the streams never overlapped")

        let directory = try TemporaryDirectory()
        let body = try directory.write(String(repeating: "0123456789", count: 5000), to: "body")
        let traced = try run(["nghttp", "--timeout=60", "-d", body, "--trailer", "x-check: 42", "\(base)/echo"])
        #expect(traced.status == 0, "\(traced.output)")
        #expect(traced.stdout == String(repeating: "0123456789", count: 5000))
        #expect(server.record.withLock { $0.trailers }.last == ["x-check": "42"])
        #expect(server.record.withLock { $0.errors }.isEmpty)
    }

    @Test("nghttp sees the trailers of a response")
    func responseTrailers() throws {
        let server = try LoopbackH2Server()
        defer { server.stop() }
        let result = try run(["nghttp", "--timeout=60", "-v", "-d", "/dev/null", "http://127.0.0.1:\(server.port)/echo"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.stdout.contains("x-trailers-seen"))
    }
}
