import Foundation
import PinproxyHTTP1
import PinproxyHTTP2
import Testing
@testable import PinproxyProxy

/// An HTTP/2 client's streams translated to HTTP/1.1 exchanges in memory:
/// the HTTP/2 layer over an ``HTTP1UpstreamPool`` whose legs are
/// ``MemoryLeg``s the test answers, as an upstream that chose HTTP/1.1
/// would. No socket is opened.
@Suite struct TranslationPoolMemoryTests {
    typealias Harness = HTTP2LayerMemoryTests.Harness

    /// The leg at `index` receives `text` from its upstream; the layer then
    /// pumps its client session, as after every event of a real connection.
    static func respond(_ h: Harness, leg index: Int = 0, _ text: String) throws {
        try upstreamEvent(h) { try h.legs[index].respond(text) }
    }

    static func upstreamEvent(_ h: Harness, _ event: () throws -> Void) rethrows {
        try h.host.run {
            try event()
            h.layer.pump()
        }
        h.exchange()
    }

    static func ended(_ h: Harness, _ stream: HTTP2StreamID) -> Bool {
        h.events.contains { if case .data(stream, _, endStream: true) = $0 { true } else { false } }
            || h.events.contains { if case .response(stream, _, endStream: true) = $0 { true } else { false } }
    }

    static func wasReset(_ h: Harness, _ stream: HTTP2StreamID) -> Bool {
        h.events.contains { if case .reset(stream, _) = $0 { true } else { false } }
    }

    @Test func aStreamBecomesAnHTTP11ExchangeAndItsResponseComesBackOnTheStream() throws {
        let h = try Harness.translating()
        let stream = try h.request("/one?q=1")
        #expect(h.legs.count == 1)
        let head = try #require(h.legs.first?.heads.first)
        #expect(head.method == "GET" && head.target.description == "/one?q=1")
        // The origin is named in Host, as it would be by a direct client.
        #expect(head.headers.first(name: "Host") == "origin.test")
        try Self.respond(h, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: yes\r\n\r\nhello")
        #expect(h.status(of: stream) == 200 && h.body(of: stream) == "hello")
        #expect(Self.ended(h, stream) && !Self.wasReset(h, stream))
        #expect(h.legs[0].exchangesEnded.map(\.requestEnded) == [true])
    }

    @Test func aKeptAliveLegCarriesTheNextStreamAndOneTheUpstreamClosesDoesNot() throws {
        let h = try Harness.translating()
        _ = try h.request("/a")
        try Self.respond(h, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na")
        let second = try h.request("/b")
        #expect(h.legs.count == 1 && h.legs[0].heads.map(\.target.description) == ["/a", "/b"])
        try Self.respond(h, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb")
        #expect(h.body(of: second) == "b")
        #expect(h.legs[0].closed)
        let third = try h.request("/c")
        #expect(h.legs.count == 2 && h.legs[1].heads.map(\.target.description) == ["/c"])
        try Self.respond(h, leg: 1, "HTTP/1.1 204 No Content\r\n\r\n")
        #expect(h.status(of: third) == 204 && Self.ended(h, third))
    }

    @Test func aRequestBodyAndItsTrailersGoToTheLeg() throws {
        let h = try Harness.translating()
        let stream = try h.request("/upload", method: "POST", endStream: false)
        try h.host.run { try h.client.sendData(Array("hello ".utf8), on: stream) }
        h.exchange()
        try h.host.run { try h.client.sendData(Array("world".utf8), on: stream) }
        h.exchange()
        #expect(String(decoding: h.legs[0].body, as: UTF8.self) == "hello world")
        #expect(h.legs[0].requestEnds == 0)
        var fields = HTTPHeaders()
        fields.add(name: "x-checksum", value: "abc")
        try h.host.run { try h.client.sendTrailers(fields, on: stream) }
        h.exchange()
        #expect(h.legs[0].requestEnds == 1)
        try Self.respond(h, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(h.status(of: stream) == 201 && Self.ended(h, stream))
    }

    @Test func aLegThatFailsBeforeAnsweringGetsTheStreamA502AndTheNextStreamANewLeg() throws {
        let h = try Harness.translating()
        let stream = try h.request("/x")
        Self.upstreamEvent(h) { h.legs[0].fail("the upstream origin.test:443 reset the connection before responding") }
        #expect(h.status(of: stream) == 502)
        #expect(h.body(of: stream).contains("reset the connection before responding"))
        let next = try h.request("/y")
        #expect(h.legs.count == 2)
        try Self.respond(h, leg: 1, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(h.status(of: next) == 200 && h.body(of: next) == "ok")
    }

    @Test func aResponseFramedByTheCloseEndsTheStreamWhole() throws {
        let h = try Harness.translating()
        let stream = try h.request("/stream")
        try Self.respond(h, "HTTP/1.1 200 OK\r\n\r\nfirst part, ")
        try Self.respond(h, "second part")
        #expect(!Self.ended(h, stream))
        try Self.upstreamEvent(h) { try h.legs[0].endOfStream() }
        #expect(h.body(of: stream) == "first part, second part")
        #expect(Self.ended(h, stream) && !Self.wasReset(h, stream))
        #expect(h.legs[0].closed)
    }

    @Test func aResponseCutShortResetsTheStreamInsteadOfEndingIt() throws {
        let h = try Harness.translating()
        let stream = try h.request("/big")
        try Self.respond(h, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
        Self.upstreamEvent(h) { h.legs[0].fail("the upstream origin.test:443 closed the connection before the response was complete") }
        #expect(h.status(of: stream) == 200 && h.body(of: stream) == "only this")
        #expect(Self.wasReset(h, stream) && !Self.ended(h, stream))
    }

    @Test func anEarlyResponseEndsTheStreamAndTheLegIsNotReused() throws {
        let h = try Harness.translating()
        let stream = try h.request("/upload", method: "POST", endStream: false)
        try h.host.run { try h.client.sendData(Array("part".utf8), on: stream) }
        h.exchange()
        try Self.respond(h, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n")
        #expect(h.status(of: stream) == 413)
        #expect(h.legs[0].exchangesEnded.map(\.requestEnded) == [false])
        #expect(h.legs[0].closed)
        // The rest of the body goes nowhere, and the next stream gets a new leg.
        try h.host.run { try h.client.sendData(Array("more".utf8), on: stream, endStream: true) }
        h.exchange()
        #expect(String(decoding: h.legs[0].body, as: UTF8.self) == "part")
        _ = try h.request("/next")
        #expect(h.legs.count == 2)
    }

    @Test func atMostSixLegsOpenAndTheSeventhStreamWaitsForAFreeOne() throws {
        let h = try Harness.translating()
        var streams: [HTTP2StreamID] = []
        for index in 0..<7 { streams.append(try h.request("/\(index)")) }
        #expect(h.legs.count == HTTP1UpstreamPool.maxConnections)
        #expect(h.legs.map(\.heads.count) == [1, 1, 1, 1, 1, 1])
        try Self.respond(h, leg: 2, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(h.legs.count == 6 && h.legs[2].heads.map(\.target.description) == ["/2", "/6"])
        try Self.respond(h, leg: 2, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nlast!")
        #expect(h.body(of: streams[6]) == "last!")
    }

    @Test func anUpstreamThatSwitchesProtocolsGetsTheStreamA502() throws {
        let h = try Harness.translating()
        let stream = try h.request("/ws")
        try Self.respond(h, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        #expect(h.status(of: stream) == 502)
        #expect(h.body(of: stream).contains("switched protocols"))
        #expect(h.legs[0].closed)
    }

    @Test func interimResponsesReachTheStreamBeforeTheFinalOne() throws {
        let h = try Harness.translating()
        let stream = try h.request("/slow")
        try Self.respond(h, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
        let statuses = h.events.compactMap { event -> Int? in
            if case .response(stream, let head, _) = event { return head.status }
            return nil
        }
        #expect(statuses == [103, 200])
        #expect(h.body(of: stream) == "done")
    }
}
