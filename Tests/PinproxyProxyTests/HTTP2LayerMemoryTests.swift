import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyHTTP2
import Testing
@testable import PinproxyProxy

/// The HTTP/2 exchange layer driven in memory: a client session the test
/// plays sends frames, a stream leg the test plays stands for the upstream,
/// and what the client's session reads is checked. No socket is opened.
@Suite struct HTTP2LayerMemoryTests {
    /// A leg that records what the layer handed it; the test answers through the layer.
    final class MemoryStreamLeg: HTTP2StreamLeg {
        private(set) var opened: [HTTP2Exchange] = []
        private(set) var data: [HTTP2StreamID: [UInt8]] = [:]
        private(set) var ended: Set<HTTP2StreamID> = []
        private(set) var trailers: [HTTP2StreamID: HTTPHeaders] = [:]
        private(set) var resets: [(HTTP2StreamID, HTTP2ErrorCode)] = []
        private(set) var closedStreams: [(HTTP2StreamID, HTTP2ErrorCode)] = []
        private(set) var written: [HTTP2StreamID: Int] = [:]
        private(set) var timedOut: [HTTP2StreamID] = []
        private(set) var closed = false

        var connection: Upstream? { nil }
        func handles(_ upstream: Upstream) -> Bool { false }
        func upstream(_ upstream: Upstream, _ event: UpstreamEvent) {}
        func open(_ exchange: HTTP2Exchange, endStream: Bool) {
            opened.append(exchange)
            if endStream { ended.insert(exchange.clientStream) }
        }
        func forwardData(_ bytes: [UInt8], of exchange: HTTP2Exchange, endStream: Bool) {
            data[exchange.clientStream, default: []] += bytes
            if endStream { ended.insert(exchange.clientStream) }
        }
        func forwardTrailers(_ trailers: HTTPHeaders, of exchange: HTTP2Exchange) {
            self.trailers[exchange.clientStream] = trailers
            ended.insert(exchange.clientStream)
        }
        func clientReset(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) { resets.append((exchange.clientStream, code)) }
        func clientClosed(_ exchange: HTTP2Exchange, code: HTTP2ErrorCode) { closedStreams.append((exchange.clientStream, code)) }
        func responseWritten(_ stream: HTTP2StreamID, count: Int) { written[stream, default: 0] += count }
        func isAwaitingResponse(_ exchange: HTTP2Exchange) -> Bool { exchange.response == nil }
        func responseTimedOut(_ exchange: HTTP2Exchange, reason: String) { timedOut.append(exchange.clientStream) }
        func pump() -> Bool { false }
        func close() { closed = true }
        func releaseIdle() -> Bool { false }
    }

    final class Harness {
        let host = MemoryHost()
        let layer: HTTP2ExchangeLayer
        let leg = MemoryStreamLeg()
        let client: HTTP2Session
        private var read = 0
        private(set) var events: [HTTP2Event] = []

        /// The HTTP/1.1 legs of a translating pool (``translating(_:)``).
        var legs: [MemoryLeg] { host.opened.compactMap { $0 as? MemoryLeg } }

        /// A layer whose streams go to an ``HTTP1UpstreamPool`` over
        /// ``MemoryLeg``s, as to an upstream that chose HTTP/1.1.
        static func translating() throws -> Harness {
            try Harness(adoptLeg: false, translate: true)
        }

        init(adoptLeg: Bool = true, translate: Bool = false, failure: (status: Int, reason: String)? = nil) throws {
            let services = try MemoryServices.make(http2: true)
            let record = ConnectionRecord(peer: "127.0.0.1:1", recorder: services.recorder)
            layer = try HTTP2ExchangeLayer(host: host, services: services, record: record, target: ExchangeLayerMemoryTests.origin,
                                           failure: failure, clientTLS: nil, tlsOutcome: nil, upstream: nil)
            client = try HTTP2Session(role: .client)
            host.layer = layer
            if translate { host.makeLeg = { target, owner, _ in MemoryLeg(target: target, owner: owner) } }
            host.run {
                if adoptLeg { layer.adopt(leg) }
                if translate { layer.adopt(HTTP1UpstreamPool(layer: layer, first: nil)) }
                layer.start()
            }
            exchange()
        }

        /// Moves bytes both ways until neither side has more.
        func exchange() {
            host.run {
                for _ in 0..<20 {
                    let out = client.takeOutput()
                    if !out.isEmpty { layer.clientData(out[...]) }
                    let received = host.memory.received
                    if received.count > read {
                        client.receive(Array(received[read...]))
                        read = received.count
                    }
                    events += client.takeEvents()
                    if out.isEmpty && !client.wantsWrite && host.memory.received.count == read { break }
                }
            }
        }

        func request(_ path: String, method: String = "GET", endStream: Bool = true) throws -> HTTP2StreamID {
            let stream = try host.run {
                try client.sendRequest(HTTP2RequestHead(method: method, scheme: "https", authority: "proxy.test", path: path), endStream: endStream)
            }
            exchange()
            return stream
        }

        /// The leg answers `exchange` through the layer, as a relay or pool does.
        func respond(_ exchange: HTTP2Exchange, status: Int, body: String) throws {
            try host.run {
                try layer.downstream.sendResponse(HTTP2ResponseHead(status: status), on: exchange.clientStream, endStream: false)
                try layer.downstream.sendData(Array(body.utf8), on: exchange.clientStream, endStream: true)
                layer.pump()
            }
            self.exchange()
        }

        func status(of stream: HTTP2StreamID) -> Int? {
            for case .response(let s, let head, _) in events where s == stream { return head.status }
            return nil
        }

        func body(of stream: HTTP2StreamID) -> String {
            var bytes: [UInt8] = []
            for case .data(let s, let chunk, _) in events where s == stream { bytes += chunk }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test func eachStreamGoesToTheLegAndItsAnswerToItsOwnStream() throws {
        let h = try Harness()
        let first = try h.request("/one")
        let second = try h.request("/two")
        #expect(h.leg.opened.map(\.request.path) == ["/one", "/two"])
        #expect(h.leg.opened.map(\.clientStream) == [first, second])
        #expect(h.leg.ended == [first, second])
        // Answered out of order: each answer lands on its own stream.
        try h.respond(h.leg.opened[1], status: 201, body: "second")
        try h.respond(h.leg.opened[0], status: 200, body: "first")
        #expect(h.status(of: first) == 200 && h.body(of: first) == "first")
        #expect(h.status(of: second) == 201 && h.body(of: second) == "second")
        // The client's session reports the bytes it wrote back to the leg (flow control end to end).
        #expect(h.leg.written[first] == 5 && h.leg.written[second] == 6)
        #expect(!h.host.finished && !h.leg.closed)
    }

    @Test func aRequestBodyAndItsTrailersGoToTheLeg() throws {
        let h = try Harness()
        let stream = try h.request("/upload", method: "POST", endStream: false)
        try h.host.run { try h.client.sendData(Array("hello ".utf8), on: stream) }
        h.exchange()
        try h.host.run { try h.client.sendData(Array("world".utf8), on: stream) }
        h.exchange()
        #expect(h.leg.data[stream].map { String(decoding: $0, as: UTF8.self) } == "hello world")
        #expect(!h.leg.ended.contains(stream))
        var fields = HTTPHeaders()
        fields.add(name: "x-checksum", value: "abc")
        try h.host.run { try h.client.sendTrailers(fields, on: stream) }
        h.exchange()
        #expect(h.leg.trailers[stream]?.fields.map(\.value) == ["abc"])
        #expect(h.leg.ended.contains(stream))
    }

    @Test func aStreamTheClientResetsIsResetAtTheLeg() throws {
        let h = try Harness()
        let stream = try h.request("/slow", method: "POST", endStream: false)
        try h.host.run { try h.client.reset(stream, code: .cancel) }
        h.exchange()
        #expect(h.leg.resets.map(\.0) == [stream] && h.leg.resets.first?.1 == .cancel)
        #expect(h.leg.closedStreams.map(\.0) == [stream])
    }

    @Test func aFailedUpstreamAnswersWaitingStreams502AndLaterOnesToo() throws {
        let h = try Harness()
        let answered = try h.request("/done")
        let waiting = try h.request("/waiting")
        try h.respond(h.leg.opened[0], status: 200, body: "ok")
        h.host.run { h.layer.upstreamFailed("the upstream origin.test:443 reset the connection") }
        h.exchange()
        #expect(h.leg.closed)
        #expect(h.status(of: answered) == 200 && h.body(of: answered) == "ok")
        #expect(h.status(of: waiting) == 502)
        #expect(h.body(of: waiting).contains("the upstream origin.test:443 reset the connection"))
        // The client is told to go elsewhere for new streams.
        #expect(h.events.contains { if case .goAway = $0 { true } else { false } })
    }

    @Test func aConnectionWhoseUpstreamFailedAnswersEveryStreamWithTheReason() throws {
        let h = try Harness(adoptLeg: false, failure: (503, "the upstream origin.test:443 refused the connection"))
        let first = try h.request("/x")
        let second = try h.request("/y", method: "POST", endStream: false)
        try h.host.run { try h.client.sendData(Array("body".utf8), on: second, endStream: true) }
        h.exchange()
        #expect(h.leg.opened.isEmpty && h.leg.data.isEmpty)
        for stream in [first, second] {
            #expect(h.status(of: stream) == 503)
            #expect(h.body(of: stream) == "the upstream origin.test:443 refused the connection\n")
        }
        #expect(!h.host.finished)
    }
}
