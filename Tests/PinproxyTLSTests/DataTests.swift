internal import COpenSSL
import Foundation
import Testing
@testable import PinproxyTLS

/// Application data over an established session: partial records, large
/// writes, the ends of a session, and the explicit results on the way.
@Suite struct DataTests {
    private func established(version: Int32? = nil, chunk: Int = .max) throws -> MemoryPair {
        let pair = try MemoryPair(maxVersion: version, chunk: chunk)
        let (client, server) = pair.handshake()
        try #require(client.isDone && server.isDone, "\(client) \(server)")
        return pair
    }

    @Test(arguments: [TLS1_2_VERSION, TLS1_3_VERSION])
    func bytesCrossBothWays(version: Int32) throws {
        let pair = try established(version: version)
        let request = Array("GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n".utf8)
        #expect(pair.writeAll(request, on: pair.client) == [.bytes(request.count)])
        pair.exchange()
        let read = pair.readAvailable(on: pair.server)
        #expect(read.bytes == request)
        #expect(read.last == .wantRead)
        let response = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
        _ = pair.writeAll(response, on: pair.server)
        pair.exchange()
        #expect(pair.readAvailable(on: pair.client).bytes == response)
    }

    @Test func nothingToReadIsWantRead() throws {
        let pair = try established()
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) } == .wantRead)
        #expect(buffer.withUnsafeMutableBytes { pair.client.read(into: $0) } == .wantRead)
        #expect(!pair.server.hasBufferedInput)
    }

    @Test func aWriteBeforeTheHandshakeStartsItAndWantsRead() throws {
        let pair = try MemoryPair()
        let early = Array("too early".utf8)
        #expect(early.withUnsafeBytes { pair.client.write($0) } == .wantRead)
        #expect(pair.client.pendingOutput > 0)  // the ClientHello it sent meanwhile
        #expect(records(in: pair.client.takeOutput()).first?.type == 22)
        #expect(!pair.client.isHandshakeComplete)
    }

    @Test func aHandshakeFedOneByteAtATimeCompletes() throws {
        let pair = try established(chunk: 1)
        #expect(pair.clientToServer.count > 100 && pair.serverToClient.count > 500)
    }

    @Test(arguments: [TLS1_2_VERSION, TLS1_3_VERSION])
    func aRecordFedOneByteAtATimeIsReadOnlyWhenComplete(version: Int32) throws {
        let pair = try established(version: version)
        let message = Array("one record, fed byte by byte".utf8)
        _ = pair.writeAll(message, on: pair.client)
        let wire = pair.client.takeOutput()
        #expect(records(in: wire).count == 1)
        var buffer = [UInt8](repeating: 0, count: 256)
        for (index, byte) in wire.enumerated() {
            pair.server.feed([byte])
            let result = buffer.withUnsafeMutableBytes { pair.server.read(into: $0) }
            if index < wire.count - 1 {
                #expect(result == .wantRead, "byte \(index) of \(wire.count)")
            } else {
                #expect(result == .bytes(message.count))
                #expect(Array(buffer[0..<message.count]) == message)
            }
        }
    }

    @Test func aLargeWriteIsSplitIntoFullRecords() throws {
        let pair = try established()
        let body = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let results = pair.writeAll(body, on: pair.server)
        // The output buffer never refuses: no WANT_WRITE, every byte taken.
        #expect(!results.contains(.wantWrite))
        #expect(results.reduce(0) { if case .bytes(let n) = $1 { return $0 + n } else { return $0 } } == body.count)
        let wire = pair.server.takeOutput()
        let found = records(in: wire)
        #expect(found.count == 7, "\(found.map(\.length))")  // 6 × 16 KiB + the rest
        #expect(found.allSatisfy { $0.type == 23 && $0.length <= 16_384 + 256 })
        pair.client.feed(wire)
        #expect(pair.readAvailable(on: pair.client).bytes == body)
    }

    @Test func bytesFedInAnyChunksArriveWhole() throws {
        let pair = try established()
        let body = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
        _ = pair.writeAll(body, on: pair.client)
        let wire = pair.client.takeOutput()
        var received: [UInt8] = []
        var offset = 0
        var step = 1
        while offset < wire.count {
            let end = min(wire.count, offset + step)
            // Straight into the input buffer, as the proxy reads a socket.
            let n = pair.server.receive(maxBytes: end - offset) { space in
                let count = min(space.count, end - offset)
                wire[offset..<(offset + count)].withUnsafeBytes { space.copyMemory(from: $0) }
                return count
            }
            offset += n
            received += pair.readAvailable(on: pair.server).bytes
            step = step * 3 + 1
        }
        #expect(received == body)
    }

    @Test(arguments: [true, false])
    func closeNotifyEndsTheSessionForThePeer(clientCloses: Bool) throws {
        let pair = try established()
        let (closer, peer) = clientCloses ? (pair.client, pair.server) : (pair.server, pair.client)
        closer.shutdown()
        #expect(closer.pendingOutput > 0)
        #expect(closer.sentAlert == .closeNotify)
        pair.move(from: closer, to: peer)
        #expect(pair.readAvailable(on: peer).last == .closed)
        #expect(peer.receivedCloseNotify)
        #expect(peer.receivedAlert == nil)
    }

    @Test func bytesBeforeCloseNotifyAreDeliveredFirst() throws {
        let pair = try established()
        _ = pair.writeAll(Array("last words".utf8), on: pair.server)
        pair.server.shutdown()
        pair.exchange()
        let read = pair.readAvailable(on: pair.client)
        #expect(read.bytes == Array("last words".utf8))
        #expect(read.last == .closed)
    }

    @Test func endOfInputWithoutCloseNotifyReadsAsClosed() throws {
        let pair = try established()
        _ = pair.writeAll(Array("no goodbye".utf8), on: pair.client)
        pair.exchange()
        pair.server.feedEndOfInput()
        #expect(pair.server.isAtEndOfInput)
        let read = pair.readAvailable(on: pair.server)
        #expect(read.bytes == Array("no goodbye".utf8))
        #expect(read.last == .closed)
        #expect(!pair.server.receivedCloseNotify)
    }

    @Test func endOfInputInTheMiddleOfARecordIsNotData() throws {
        let pair = try established()
        _ = pair.writeAll(Array("cut short".utf8), on: pair.client)
        let wire = pair.client.takeOutput()
        pair.server.feed(Array(wire.prefix(wire.count - 3)))
        pair.server.feedEndOfInput()
        let read = pair.readAvailable(on: pair.server)
        #expect(read.bytes.isEmpty)
        switch read.last {
        case .closed, .failed: break
        default: Issue.record("a truncated record read as \(read.last)")
        }
    }

    @Test func endOfInputDuringTheHandshakeIsClosed() throws {
        let pair = try MemoryPair()
        _ = pair.client.handshake()
        pair.client.feedEndOfInput()
        #expect(pair.client.handshake() == .closed)
    }

    @Test func notTLSIsNamedSo() throws {
        let pair = try MemoryPair()
        _ = pair.client.handshake()
        pair.client.feed(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        let result = pair.client.handshake()
        #expect(result.failure?.kind == .notTLS, "\(result)")
    }

    @Test func releasedBuffersAreAllocatedAgainOnUse() throws {
        let pair = try established()
        pair.client.releaseBuffers()
        pair.server.releaseBuffers()
        let message = Array("after a rest".utf8)
        _ = pair.writeAll(message, on: pair.client)
        pair.exchange()
        #expect(pair.readAvailable(on: pair.server).bytes == message)
    }
}
