import Glibc
import PinproxyHTTP1
@testable import PinproxyHTTP2
import Testing

/// Frames on streams the client itself closed, after the session (and
/// nghttp2) forgot those streams: RFC 9113 §5.1 and §5.1.1, as h2spec's
/// http2/5.1/8, 9, 11, 12 and 5.1.1/2 send them.
@Suite("HTTP/2 server session: frames on closed and skipped streams")
struct HTTP2ClosedStreamTests {
    typealias Exchange = HTTP2MalformedInputTests.Exchange

    static let get = HPACK.request(path: "/", extra: [])
    static let data = RawFrame(.data, flags: RawFrame.endStream, stream: 1, payload: Array("late".utf8))

    /// A finished exchange on stream 1: the client's request with END_STREAM,
    /// the whole response with END_STREAM, so the stream is gone.
    static func finishedExchange() throws -> Exchange {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: get))
        try exchange.session.sendResponse(HTTP2ResponseHead(status: 200), on: HTTP2StreamID(1), endStream: true)
        exchange.feed([])
        exchange.output += RawFrame.parse(exchange.session.takeOutput())
        #expect(exchange.session.openStreams.isEmpty)
        #expect(exchange.goAwayCodes.isEmpty)
        return exchange
    }

    @Test("DATA on a stream the client ended, after the exchange finished: connection error STREAM_CLOSED")
    func dataAfterEndStream() throws {
        var exchange = try Self.finishedExchange()
        exchange.send(Self.data)
        #expect(exchange.goAwayCodes == [.streamClosed])
        #expect(exchange.connectionError?.wireCode == .streamClosed)
        #expect(!exchange.session.wantsRead)
    }

    @Test("HEADERS on a stream the client ended, after the exchange finished: connection error STREAM_CLOSED")
    func headersAfterEndStream() throws {
        var exchange = try Self.finishedExchange()
        exchange.send(.headers(stream: 1, block: Self.get))
        #expect(exchange.goAwayCodes == [.streamClosed])
        #expect(exchange.requests == [HTTP2StreamID(1)])
    }

    @Test("DATA and HEADERS after the client's own RST_STREAM: STREAM_CLOSED", arguments: [false, true])
    func framesAfterClientReset(sendHeaders: Bool) throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: Self.get, flags: RawFrame.endHeaders),
                      RawFrame(.rstStream, stream: 1, payload: RawFrame.uint32(HTTP2ErrorCode.cancel.rawValue)))
        #expect(exchange.goAwayCodes.isEmpty)
        exchange.send(sendHeaders ? .headers(stream: 1, block: Self.get) : Self.data)
        #expect(exchange.goAwayCodes == [.streamClosed])
    }

    @Test("the frame before the offending one in the same read is still processed")
    func prefixIsProcessed() throws {
        var exchange = try Self.finishedExchange()
        exchange.send(.headers(stream: 3, block: Self.get), Self.data)
        #expect(exchange.requests == [HTTP2StreamID(1), HTTP2StreamID(3)])
        #expect(exchange.goAwayCodes == [.streamClosed])
    }

    @Test("a frame header split across reads is judged once whole")
    func splitHeader() throws {
        var exchange = try Self.finishedExchange()
        let bytes = Self.data.bytes
        exchange.feed(Array(bytes[..<4]))
        #expect(exchange.goAwayCodes.isEmpty)
        exchange.feed(Array(bytes[4...]))
        #expect(exchange.goAwayCodes == [.streamClosed])
    }

    @Test("HEADERS on an identifier the client skipped: connection error PROTOCOL_ERROR")
    func lowerStreamAfterHigher() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 5, block: Self.get))
        exchange.send(.headers(stream: 3, block: Self.get))
        #expect(exchange.goAwayCodes == [.protocolError])
        #expect(exchange.requests == [HTTP2StreamID(5)])
    }

    @Test("a client whose first stream is 3 (OkHttp keeps 1 for an upgrade) is served; stream 1 after it is PROTOCOL_ERROR")
    func firstStreamThree() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 3, block: Self.get))
        #expect(exchange.goAwayCodes.isEmpty && exchange.requests == [HTTP2StreamID(3)])
        exchange.send(.headers(stream: 1, block: Self.get))
        #expect(exchange.goAwayCodes == [.protocolError])
    }

    @Test("trailers on an older open stream after a newer one opened are accepted")
    func trailersOnOlderOpenStream() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: HPACK.request(path: "/up", extra: []), flags: RawFrame.endHeaders),
                      .headers(stream: 3, block: Self.get),
                      RawFrame(.data, stream: 1, payload: Array("body".utf8)),
                      .headers(stream: 1, block: HPACK.literal("x-trailer", "1")))
        #expect(exchange.goAwayCodes.isEmpty && exchange.resetCodes(1).isEmpty)
        #expect(exchange.session.wantsRead)
    }

    @Test("frames in flight on a stream this side reset are ignored, as RFC 9113 §5.1 asks")
    func framesAfterServerReset() throws {
        var exchange = try Exchange()
        exchange.send(.headers(stream: 1, block: Self.get, flags: RawFrame.endHeaders))
        try exchange.session.reset(HTTP2StreamID(1), code: .cancel)
        exchange.feed([])
        exchange.send(RawFrame(.data, stream: 1, payload: Array("in flight".utf8)), Self.data)
        #expect(exchange.goAwayCodes.isEmpty)
        #expect(exchange.session.wantsRead)
    }

    @Test("a client that ends many streams is judged only on the recent ones: memory stays bounded")
    func boundedRecord() throws {
        var frames = HTTP2InboundFrames()
        var bytes = RawFrame.preface
        for stream in stride(from: UInt32(1), through: 999, by: 2) {
            bytes += RawFrame.headers(stream: stream, block: Self.get).bytes
        }
        #expect(bytes.withUnsafeBytes { frames.scan($0) } == nil)
        #expect(frames.recordedStreams <= HTTP2InboundFrames.endedCapacity)
        let recent = RawFrame(.data, stream: 999, payload: [1]).bytes
        #expect(recent.withUnsafeBytes { frames.scan($0) }?.error.wireCode == .streamClosed)
    }
}

/// An idle session gives nghttp2's outbound frame buffer back to the system
/// (``NGHTTP2Memory``) and works on afterwards.
@Suite("HTTP/2 session: idle memory")
struct HTTP2IdleMemoryTests {
    /// One GET and its response with a body, between a client and a server session in memory.
    static func exchange(_ client: HTTP2Session, _ server: HTTP2Session, path: String) throws -> [UInt8] {
        let stream = try client.sendRequest(get(path), endStream: true)
        var body: [UInt8] = []
        var answered = false
        for _ in 0..<8 {
            server.receive(client.takeOutput())
            for case .request(let id, _, _) in server.takeEvents() where !answered {
                answered = true
                try server.sendResponse(HTTP2ResponseHead(status: 200), on: id, endStream: false)
                try server.sendData(Array(repeating: 0x61, count: 20_000), on: id, endStream: true)
            }
            client.receive(server.takeOutput())
            for case .data(let id, let bytes, _) in client.takeEvents() where id == stream {
                body += bytes
                client.consume(bytes.count, on: id)
            }
        }
        return body
    }

    @Test("the frame buffer is released once idle, not twice, and the session goes on with fresh pages")
    func releaseAndReuse() throws {
        let client = try HTTP2Session(role: .client)
        let server = try HTTP2Session(role: .server)
        #expect(try Self.exchange(client, server, path: "/a").count == 20_000)
        #expect(server.memory.frameBufferCount == 1 && client.memory.frameBufferCount == 1)
        // Resident while in use; given back (not resident, mincore) once released.
        func residentPages(_ session: HTTP2Session) -> Int {
            var vector = [UInt8](repeating: 0, count: NGHTTP2Memory.frameBufferAllocation / 4096)
            return session.memory.frameBufferAddresses.reduce(0) { total, address in
                guard mincore(address, NGHTTP2Memory.frameBufferAllocation, &vector) == 0 else { return total }
                return total + vector.filter { $0 & 1 == 1 }.count
            }
        }
        #expect(residentPages(server) > 0)
        #expect(server.releaseIdleMemory())
        #expect(residentPages(server) == 0, "released pages are no longer resident")
        #expect(!server.releaseIdleMemory(), "nothing was written since the last release")
        #expect(client.releaseIdleMemory())
        // The released pages read back as zeros; every byte that goes out is written first.
        #expect(try Self.exchange(client, server, path: "/b") == Array(repeating: 0x61, count: 20_000))
        #expect(server.releaseIdleMemory())
    }

    @Test("the frame buffer is a mapping of its own, unmapped when the session goes, not heap memory")
    func frameBufferOutsideTheHeap() throws {
        // Heap memory freed stays mapped in the allocator's arena; only a
        // mapping of its own is gone (mincore: ENOMEM for unmapped pages).
        // Tests running beside this one map frame buffers too, and one may
        // take an address the moment it is unmapped: a few tries, of which
        // one must find every address unmapped (heap memory never would be).
        var vector = [UInt8](repeating: 0, count: NGHTTP2Memory.frameBufferAllocation / 4096)
        var stillMapped: [UnsafeMutableRawPointer] = []
        for _ in 0..<5 {
            var addresses: [UnsafeMutableRawPointer] = []
            do {
                let client = try HTTP2Session(role: .client)
                let server = try HTTP2Session(role: .server)
                #expect(try Self.exchange(client, server, path: "/a").count == 20_000)
                addresses = client.memory.frameBufferAddresses + server.memory.frameBufferAddresses
                #expect(addresses.count == 2)
                for address in addresses { #expect(Int(bitPattern: address) % 4096 == 0) }
            }
            stillMapped = addresses.filter { address in
                errno = 0
                return !(mincore(address, NGHTTP2Memory.frameBufferAllocation, &vector) == -1 && errno == ENOMEM)
            }
            if stillMapped.isEmpty { break }
        }
        #expect(stillMapped.isEmpty, "frame buffers still mapped after their sessions went, in every try: \(stillMapped)")
    }

    @Test("nothing is released while output waits")
    func notWhileWriting() throws {
        let client = try HTTP2Session(role: .client)
        _ = try client.sendRequest(get("/"), endStream: true)
        #expect(client.wantsWrite)
        #expect(!client.releaseIdleMemory())
        _ = client.takeOutput()
        #expect(client.releaseIdleMemory())
    }
}
