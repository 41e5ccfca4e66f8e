import Foundation
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS
import Testing

/// Upstreams that stall, close or refuse: the client gets a prompt 502 that
/// says why, and the event blames the upstream, not the client.
@Suite("Upstream failures", .timeLimit(.minutes(3)))
struct UpstreamFailureTests {
    @Test("an upstream that never answers TLS: 502 after the upstream handshake timeout, upstream-failed event")
    func stalledUpstreamHandshake() throws {
        let f = try Fixtures()
        let upstream = try Origin(misbehaving: "silent")
        // The client's handshake limit is shorter than the upstream's: it must
        // not run while the proxy waits on the upstream.
        let proxy = try RunningProxy(f) {
            $0.timeouts.handshake = 1
            $0.timeouts.upstreamHandshake = 2
        }
        let r = try curl(["--proxy", proxy.url, "--cacert", f.proxyCAPath, "-w", "\n%{http_code}",
                          "https://localhost:\(upstream.port)/"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("\n502"), "\(r.stdout)")
        #expect(r.stdout.contains("TLS handshake with the upstream localhost:\(upstream.port) timed out"), "\(r.stdout)")
        let event = proxy.waitForEvent(.upstreamFailed)
        #expect(event?.reason?.contains("localhost:\(upstream.port)") == true, "\(String(describing: event))")
        #expect(proxy.server.recorder.recent.events.allSatisfy { $0.kind != .handshakeTimeout })
    }
}
