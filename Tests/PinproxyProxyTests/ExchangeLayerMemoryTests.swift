import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import Testing
@testable import PinproxyProxy

/// The HTTP/1 exchange layer driven in memory: the client's bytes go in, a
/// leg the test plays answers, and what the client receives is checked. No
/// socket is opened; every call runs on the connection's queue.
@Suite struct ExchangeLayerMemoryTests {
    static let origin = UpstreamTarget(host: try! HostName(validating: "origin.test"), port: 443, tls: true, serverName: try! HostName(validating: "origin.test"))

    /// A reverse-mode layer for ``origin`` whose legs are ``MemoryLeg``s.
    final class Harness {
        let host = MemoryHost()
        let layer: HTTP1ExchangeLayer
        var legs: [MemoryLeg] { host.opened.compactMap { $0 as? MemoryLeg } }

        init(legs make: Bool = true) throws {
            let services = try MemoryServices.make()
            let record = ConnectionRecord(peer: "127.0.0.1:1", recorder: services.recorder)
            layer = HTTP1ExchangeLayer(host: host, services: services, record: record, kind: .origin(origin), clientTLS: nil)
            host.layer = layer
            if make { host.makeLeg = { target, owner, _ in MemoryLeg(target: target, owner: owner) } }
            host.run { layer.start() }
        }

        func client(_ text: String) { host.run { layer.clientData(Array(text.utf8)[...]) } }
        func upstream(_ text: String, leg index: Int = 0) throws { try host.run { try legs[index].respond(text) } }
        var received: String { host.run { host.memory.text } }
    }

    @Test func aRequestGoesToTheLegAndItsResponseToTheClient() throws {
        let h = try Harness()
        h.client("GET /a?b=1 HTTP/1.1\r\nHost: proxy.test\r\nAccept: */*\r\n\r\n")
        let leg = try #require(h.legs.first)
        #expect(leg.heads.map(\.method) == ["GET"])
        #expect(leg.heads.first?.target.path == "/a?b=1")
        #expect(leg.requestEnds == 1)
        try h.upstream("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Origin: yes\r\n\r\nhello")
        #expect(h.received.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(h.received.contains("X-Origin: yes\r\n"))
        #expect(h.received.hasSuffix("\r\n\r\nhello"))
        #expect(leg.exchangesEnded.count == 1 && leg.exchangesEnded[0].keepAlive && leg.exchangesEnded[0].requestEnded)
        // Kept alive: the next request goes on the same leg.
        h.client("GET /second HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        #expect(h.legs.count == 1)
        #expect(leg.heads.map(\.target.path) == ["/a?b=1", "/second"])
        try h.upstream("HTTP/1.1 204 No Content\r\n\r\n")
        #expect(h.received.contains("HTTP/1.1 204 No Content\r\n"))
        #expect(!h.host.finished)
    }

    @Test func aResponseCutShortByTheLegClosesTheClientInsteadOfCompletingIt() throws {
        let h = try Harness()
        h.client("GET / HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        try h.upstream("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        h.host.run { h.legs[0].fail("the upstream reset the connection") }
        #expect(h.received.hasSuffix("\r\n\r\nhalf"))  // no 502 after a head went out
        #expect(h.host.run { h.host.memory.closed })
        #expect(h.host.finished)
    }

    @Test func aBodyGoesToTheLegAsItArrives() throws {
        let h = try Harness()
        h.client("POST /upload HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 11\r\n\r\nhello")
        let leg = try #require(h.legs.first)
        #expect(leg.body == Array("hello".utf8))
        #expect(leg.requestEnds == 0)
        h.client(" world")
        #expect(leg.body == Array("hello world".utf8))
        #expect(leg.requestEnds == 1)
        // While the leg is backed up, the client is not read.
        h.host.run { leg.backedUp = true; h.layer.updateReading() }
        #expect(!h.host.run { h.host.memory.reading })
    }

    @Test func anEarlyResponseEndsTheExchangeAndTheClientConnection() throws {
        let h = try Harness()
        h.client("POST /big HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 1000\r\n\r\n0123")
        let leg = try #require(h.legs.first)
        try h.upstream("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n\r\ntoo big\n")
        #expect(h.received.hasPrefix("HTTP/1.1 413 Content Too Large\r\n"))
        // The client is told at once that the connection ends after this response.
        #expect(h.received.lowercased().contains("connection: close\r\n"))
        #expect(h.received.hasSuffix("too big\n"))
        #expect(leg.exchangesEnded.count == 1 && !leg.exchangesEnded[0].requestEnded)
        // The rest of the body may still be arriving: closed gently, after lingering.
        #expect(h.host.finished)
        #expect(h.host.run { h.host.memory.closedAfterSending } == .some(Transport.unwantedInputLinger))
        #expect(h.host.released.isEmpty)
    }

    @Test func aBodyFramedByTheCloseReachesTheClientWhole() throws {
        let h = try Harness()
        h.client("GET /stream HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        try h.upstream("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc")
        try h.upstream("def")
        #expect(h.received.hasPrefix("HTTP/1.1 200 OK\r\n"))
        // Re-framed for the client, whose connection outlives the upstream's.
        #expect(h.received.lowercased().contains("transfer-encoding: chunked\r\n"))
        #expect(!h.received.hasSuffix("0\r\n\r\n"))
        try h.host.run { try h.legs[0].endOfStream() }
        #expect(h.received.hasSuffix("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"))
        #expect(h.legs[0].exchangesEnded.count == 1 && !h.legs[0].exchangesEnded[0].keepAlive)
        #expect(!h.host.run { h.host.memory.closed })
        #expect(!h.host.finished)
        // The next request needs another leg.
        h.client("GET /next HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        #expect(h.legs.count == 2)
    }

    @Test func aLegThatFailsBeforeAnsweringGetsTheClientA502() throws {
        let h = try Harness()
        h.client("GET / HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        h.host.run { h.legs[0].fail("the upstream origin.test:443 reset the connection before responding") }
        #expect(h.received.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(h.received.contains("the upstream origin.test:443 reset the connection before responding"))
        #expect(h.host.finished)
    }

    @Test func aLegThatCannotBeOpenedGetsTheClientA502() throws {
        let h = try Harness(legs: false)
        h.client("GET / HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        h.host.run {}  // the failure is reported on the queue, after the request's turn
        #expect(h.received.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(h.received.contains("cannot connect to origin.test:443"))
    }

    @Test func interimResponsesAreRelayedOnlyWhenTheClientAskedForThem() throws {
        let h = try Harness()
        h.client("POST /e HTTP/1.1\r\nHost: proxy.test\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        try h.upstream("HTTP/1.1 100 Continue\r\n\r\n")
        #expect(h.received == "HTTP/1.1 100 Continue\r\n\r\n")
        h.client("ok")
        try h.upstream("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(h.received.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
        h.client("GET / HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        let before = h.received.count
        try h.upstream("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(String(h.received.dropFirst(before)).hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test func aCongestedClientStopsTheLegsResponses() throws {
        let h = try Harness()
        h.client("GET / HTTP/1.1\r\nHost: proxy.test\r\n\r\n")
        h.host.run { h.host.memory.congested = true }
        try h.upstream("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
        #expect(!h.legs[0].readingResponses)
        h.host.run { h.host.memory.congested = false; h.layer.clientDrained() }
        #expect(h.legs[0].readingResponses)
    }
}
