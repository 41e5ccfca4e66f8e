import Foundation
import PinproxyProxy
import Testing

/// An upstream may answer before the request body is complete (an early 401
/// or 413). The client must read that answer, told that the connection
/// closes, rather than meet a reset while it is still uploading.
@Suite("Early responses", .timeLimit(.minutes(10)))
struct EarlyResponseTests {
    /// A 256 MiB file of zeros (sparse): far more than the socket buffers on
    /// the way hold, so the upload is still going when the answer arrives.
    static func largeUpload(_ f: Fixtures) throws -> String {
        let path = f.directory.file("upload.bin")
        try #require(FileManager.default.createFile(atPath: path, contents: nil))
        try #require(truncate(path, 256 << 20) == 0)
        return path
    }

    @Test("an early 413 during a large upload: the client reads it, with Connection: close", arguments: ["https", "http"])
    func earlyAnswerDuringUpload(scheme: String) throws {
        let f = try Fixtures()
        let origin = scheme == "https" ? try Origin(chain: f.originChainPath, key: f.originKeyPath) : try Origin(chain: nil, key: nil)
        let proxy = try RunningProxy(f)
        let upload = try Self.largeUpload(f)
        let headers = f.directory.file("headers.txt")
        for _ in 0..<3 {
            let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-H", "Expect:", "-T", upload,
                              "-D", headers, "-o", "/dev/null", "-w", "%{http_code}",
                              "\(scheme)://localhost:\(origin.port)/early/413"], timeout: 60)
            #expect(r.status == 0, "curl should read the answer, not a reset: \(r.status) \(r.stderr)")
            #expect(r.stdout == "413", "\(r.stdout)")
            let head = try String(contentsOfFile: headers, encoding: .utf8).lowercased()
            #expect(head.contains("\r\nconnection: close\r\n"), "\(head)")
        }
        let flow = try #require(proxy.server.recorder.recent.flows.first)
        #expect(flow.response?.status == 413)
    }

    @Test("Expect: 100-continue answered with 401 instead of 100: relayed with Connection: close")
    func expectContinueAnsweredEarly() throws {
        let f = try Fixtures()
        let origin = try Origin(chain: f.originChainPath, key: f.originKeyPath)
        let proxy = try RunningProxy(f)
        let upload = try Self.largeUpload(f)
        let headers = f.directory.file("headers.txt")
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-H", "Expect: 100-continue", "-T", upload,
                          "-D", headers, "-o", "/dev/null", "-w", "%{http_code}",
                          "https://localhost:\(origin.port)/early/401"], timeout: 60)
        #expect(r.status == 0, "\(r.status) \(r.stderr)")
        #expect(r.stdout == "401", "\(r.stdout)")
        let head = try String(contentsOfFile: headers, encoding: .utf8).lowercased()
        #expect(!head.contains("100 continue"), "\(head)")
        #expect(head.contains("\r\nconnection: close\r\n"), "\(head)")
    }
}
