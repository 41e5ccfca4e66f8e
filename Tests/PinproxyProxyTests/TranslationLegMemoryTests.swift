import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyHTTP2
import Testing
@testable import PinproxyProxy

/// An HTTP/1.1 client's exchanges translated to HTTP/2 streams in memory:
/// the HTTP/1 layer over an ``HTTP2Leg`` whose connection is a pair of byte
/// queues, with a real HTTP/2 server session at the other end.
@Suite struct TranslationLegMemoryTests {
    /// The connection under the leg: what the leg writes waits for the server session.
    final class MemoryWire: LegWire {
        let target: UpstreamTarget
        private(set) var written: [UInt8] = []
        private(set) var closed = false
        init(target: UpstreamTarget) { self.target = target }
        var isOpen: Bool { !closed }
        func send(_ bytes: [UInt8]) { written += bytes }
        var outputIsCongested: Bool { false }
        func start() {}
        func cork() {}
        func uncork() {}
        func pauseReading() {}
        func resumeReading() {}
        func close() { closed = true }
        func endFailure(_ end: TransportEnd, when: String) -> UpstreamFailure {
            UpstreamFailure(reason: "the upstream closed the connection \(when)", verificationFailed: false)
        }
        func take() -> [UInt8] {
            defer { written = [] }
            return written
        }
    }

    final class Harness {
        let host = MemoryHost()
        let layer: HTTP1ExchangeLayer
        let server: HTTP2Session
        private(set) var wires: [MemoryWire] = []
        private(set) var legs: [HTTP2Leg] = []
        /// The requests the server session received, with their body and whether they ended.
        var requests: [HTTP2StreamID: (head: HTTP2RequestHead, body: [UInt8], ended: Bool)] = [:]

        init() throws {
            let services = try MemoryServices.make(http2: true)
            let record = ConnectionRecord(peer: "127.0.0.1:1", recorder: services.recorder)
            server = try HTTP2Session(role: .server)
            layer = HTTP1ExchangeLayer(host: host, services: services, record: record,
                                       kind: .origin(ExchangeLayerMemoryTests.origin), clientTLS: nil)
            host.layer = layer
            let context = LegContext(host: host, via: false, rewritesHost: true, http2: true,
                                     http2OnlyUpstreams: services.http2OnlyUpstreams, counters: services.recorder.counters,
                                     logger: services.logger, peer: "127.0.0.1:1")
            host.makeLeg = { [unowned self] target, owner, _ in
                let wire = MemoryWire(target: target)
                let leg = try! HTTP2Leg(wire: wire, owner: owner, context: context)
                wires.append(wire)
                legs.append(leg)
                return leg
            }
            host.run { layer.start() }
        }

        func client(_ text: String) {
            host.run { layer.clientData(Array(text.utf8)[...]) }
            exchangeFrames()
        }

        /// Carries bytes both ways between the leg and the server until neither has more.
        func exchangeFrames() {
            host.run {
                var moved = true
                while moved {
                    moved = false
                    guard let wire = wires.last, let leg = legs.last else { return }
                    let up = wire.take()
                    if !up.isEmpty {
                        moved = true
                        server.receive(up)
                    }
                    for event in server.takeEvents() {
                        switch event {
                        case .request(let stream, let head, let endStream): requests[stream] = (head, [], endStream)
                        case .data(let stream, let bytes, let endStream):
                            requests[stream]?.body += bytes
                            if endStream { requests[stream]?.ended = true }
                            server.consume(bytes.count, on: stream)
                        case .trailers(let stream, _): requests[stream]?.ended = true
                        default: break
                        }
                    }
                    let down = server.takeOutput()
                    if !down.isEmpty {
                        moved = true
                        leg.wireEvent(.data(down[...]))
                    }
                }
            }
        }

        func respond(_ stream: HTTP2StreamID, status: Int, headers: [(String, String)] = [], body: [UInt8]? = nil,
                     trailers: [(String, String)]? = nil) throws {
            var fields = HTTPHeaders()
            for (name, value) in headers { fields.add(name: name, value: value) }
            try host.run {
                try server.sendResponse(HTTP2ResponseHead(status: status, headers: fields), on: stream, endStream: body == nil && trailers == nil)
                if let body { try server.sendData(body, on: stream, endStream: trailers == nil) }
                if let trailers {
                    var fields = HTTPHeaders()
                    for (name, value) in trailers { fields.add(name: name, value: value) }
                    try server.sendTrailers(fields, on: stream)
                }
            }
            exchangeFrames()
        }

        var received: String { host.run { host.memory.text } }
        var lastStream: HTTP2StreamID? { requests.keys.max() }
    }

    @Test func aRequestBecomesAStreamAndItsResponseAnHTTP11Response() throws {
        let h = try Harness()
        h.client("GET /h2?x=1 HTTP/1.1\r\nHost: proxy.test\r\nAccept: text/plain\r\n\r\n")
        let stream = try #require(h.lastStream)
        let request = try #require(h.requests[stream])
        #expect(request.head.method == "GET")
        #expect(request.head.path == "/h2?x=1")
        #expect(request.head.authority == "origin.test")
        #expect(request.head.headers["accept"] == ["text/plain"])
        #expect(request.head.headers["host"].isEmpty)
        #expect(request.ended)
        try h.respond(stream, status: 200, headers: [("content-type", "text/plain")], body: Array("hello".utf8))
        #expect(h.received.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(h.received.lowercased().contains("content-type: text/plain\r\n"))
        #expect(h.received.hasSuffix("5\r\nhello\r\n0\r\n\r\n"))
        // The next request is the next stream on the same connection.
        h.client("HEAD /again HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        #expect(h.legs.count == 1)
        let second = try #require(h.lastStream)
        #expect(second.rawValue == stream.rawValue + 2)
        try h.respond(second, status: 204)
        #expect(h.received.hasSuffix("HTTP/1.1 204 No Content\r\n\r\n") || h.received.contains("HTTP/1.1 204 No Content\r\n"))
        #expect(!h.host.finished)
    }

    @Test func aRequestBodyGoesAsDataAndTrailersComeBackInTheChunkedEnd() throws {
        let h = try Harness()
        h.client("POST /up HTTP/1.1\r\nHost: proxy.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        let stream = try #require(h.lastStream)
        #expect(h.requests[stream]?.body == Array("hello".utf8))
        #expect(h.requests[stream]?.ended == false)
        h.client("6\r\n world\r\n0\r\n\r\n")
        #expect(h.requests[stream]?.body == Array("hello world".utf8))
        #expect(h.requests[stream]?.ended == true)
        try h.respond(stream, status: 201, headers: [("trailer", "x-checksum")], body: Array("ok".utf8),
                      trailers: [("x-checksum", "abc")])
        #expect(h.received.hasPrefix("HTTP/1.1 201 Created\r\n"))
        #expect(h.received.hasSuffix("2\r\nok\r\n0\r\nx-checksum: abc\r\n\r\n"))
    }

    @Test func aStreamTheUpstreamResetsGetsTheClientA502() throws {
        let h = try Harness()
        h.client("GET /reset HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        let stream = try #require(h.lastStream)
        try h.host.run { try h.server.reset(stream, code: .internalError) }
        h.exchangeFrames()
        #expect(h.received.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(h.received.contains("the HTTP/2 upstream reset the stream"))
        #expect(h.wires[0].isOpen == false)
    }

    @Test func afterGOAWAYTheNextRequestOpensAnotherLeg() throws {
        let h = try Harness()
        h.client("GET /1 HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        let stream = try #require(h.lastStream)
        try h.host.run { try h.server.goAway(code: .noError) }
        try h.respond(stream, status: 200, body: Array("one".utf8))
        #expect(h.received.hasSuffix("3\r\none\r\n0\r\n\r\n"))
        h.host.run { h.layer.clientData(Array("GET /2 HTTP/1.1\r\nHost: proxy.test\r\n\r\n".utf8)[...]) }
        #expect(h.legs.count == 2)
    }

    @Test func anUpgradeCannotCrossToHTTP2() throws {
        let h = try Harness()
        h.client("GET /ws HTTP/1.1\r\nHost: proxy.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        #expect(h.received.hasPrefix("HTTP/1.1 501 Not Implemented\r\n"))
        #expect(h.received.contains("speaks only HTTP/2, which has no Upgrade"))
    }
}
