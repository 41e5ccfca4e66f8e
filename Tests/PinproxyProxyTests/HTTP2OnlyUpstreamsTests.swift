import Foundation
import PinproxyCertificates
@testable import PinproxyProxy
import Testing

@Suite("HTTP/2-only upstreams: memory and detection")
struct HTTP2OnlyUpstreamsTests {
    static func target(_ port: Int, tls: Bool = true) -> UpstreamTarget {
        UpstreamTarget(host: .dns("localhost"), port: port, tls: tls, serverName: .dns("localhost"))
    }

    @Test("a remembered target is offered h2 only, until it expires or is forgotten; plain targets and --http2 off never")
    func remembers() {
        let memory = HTTP2OnlyUpstreams()
        let now = Date()
        #expect(memory.alpn(for: Self.target(1), http2: true) == nil)
        memory.remember(Self.target(1), now: now)
        #expect(memory.alpn(for: Self.target(1), http2: true) == ["h2"])
        #expect(memory.alpn(for: Self.target(1), http2: false) == nil)
        #expect(memory.alpn(for: Self.target(2), http2: true) == nil)
        #expect(!memory.contains(Self.target(1), now: now.addingTimeInterval(HTTP2OnlyUpstreams.lifetime + 1)))
        #expect(!memory.contains(Self.target(1), now: now), "an expired entry is dropped")
        memory.remember(Self.target(3, tls: false), now: now)
        #expect(memory.alpn(for: Self.target(3, tls: false), http2: true) == nil)
        memory.remember(Self.target(4), now: now)
        memory.forget(Self.target(4))
        #expect(!memory.contains(Self.target(4), now: now))
    }

    @Test("at most `capacity` targets are kept; the oldest goes first")
    func bounded() {
        let memory = HTTP2OnlyUpstreams()
        let start = Date()
        for i in 0...HTTP2OnlyUpstreams.capacity {
            memory.remember(Self.target(1000 + i), now: start.addingTimeInterval(Double(i)))
        }
        let now = start.addingTimeInterval(Double(HTTP2OnlyUpstreams.capacity))
        #expect(!memory.contains(Self.target(1000), now: now))
        #expect(memory.contains(Self.target(1001), now: now))
        #expect(memory.contains(Self.target(1000 + HTTP2OnlyUpstreams.capacity), now: now))
    }

    @Test("HTTP/2 frames on stream 0 (SETTINGS, GOAWAY) are told from an HTTP/1 response")
    func frames() {
        #expect(HTTP2OnlyUpstreams.looksLikeHTTP2Frames([0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100]))
        #expect(HTTP2OnlyUpstreams.looksLikeHTTP2Frames([0, 0, 8, 7, 0, 0, 0, 0, 0]))
        #expect(!HTTP2OnlyUpstreams.looksLikeHTTP2Frames(Array("HTTP/1.1 200 OK\r\n".utf8)))
        #expect(!HTTP2OnlyUpstreams.looksLikeHTTP2Frames([0, 0, 6, 4, 0, 0, 0, 0, 1]), "SETTINGS is never on a stream")
        #expect(!HTTP2OnlyUpstreams.looksLikeHTTP2Frames([0, 0, 6, 4]))
    }
}
