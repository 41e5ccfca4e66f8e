import Foundation
import Glibc
import Testing
@testable import PinproxyTLS

/// The server engine sending large records to a real socket as they are
/// sealed (``TLSDirectSocket/sendLargeRecords(_:)``): what the socket
/// does not take stays in the output buffer, in order, and small records
/// still wait there to leave together.
@Suite struct DirectSocketSendTests {
    private func established() throws -> (pair: MemoryPair, sender: Int32, receiver: Int32) {
        let (pair, sender, receiver) = try MemoryPair.establishedOverSocket()
        pair.server.directSocket.sendLargeRecords(sender)
        return (pair, sender, receiver)
    }

    /// Everything readable on `socket` now (non-blocking).
    private func drainSocket(_ socket: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard n > 0 else { return bytes }
            bytes += buffer[0..<n]
        }
    }

    @Test func aLargeBodyThroughAFullSocketArrivesWholeAndInOrder() throws {
        let (pair, sender, receiver) = try established()
        defer { close(sender); close(receiver) }
        // A prefix that is small waits in the buffer; the large records
        // after it must queue behind it, not overtake it.
        _ = pair.writeAll(Array("head".utf8), on: pair.server)
        #expect(pair.server.pendingOutput > 0)
        let body = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) }
        _ = pair.writeAll(body, on: pair.server)
        // The socket's buffer is far smaller than the body: sends are partial
        // or refused, and the rest waits in the engine.
        var network: [UInt8] = []
        var rounds = 0
        while pair.server.pendingOutput > 0 && rounds < 100_000 {
            rounds += 1
            _ = pair.server.withPendingOutput { bytes in
                let n = send(sender, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                return max(n, 0)
            }
            network += drainSocket(receiver)
        }
        network += drainSocket(receiver)
        pair.client.feed(network)
        let read = pair.readAvailable(on: pair.client)
        #expect(read.bytes.count == 4 + body.count)
        #expect(read.bytes == Array("head".utf8) + body)
    }

    @Test func largeRecordsLeaveAtOnceAndSmallOnesWait() throws {
        let (pair, sender, receiver) = try established()
        defer { close(sender); close(receiver) }
        let body = [UInt8](repeating: 5, count: 3 * 16_384)
        _ = pair.writeAll(body, on: pair.server)
        // Full records went to the socket as they were sealed.
        #expect(pair.server.pendingOutput == 0)
        _ = pair.writeAll(Array("tail".utf8), on: pair.server)
        #expect(pair.server.pendingOutput > 0)
        var network = drainSocket(receiver)
        network += pair.server.takeOutput()
        pair.client.feed(network)
        #expect(pair.readAvailable(on: pair.client).bytes == body + Array("tail".utf8))
    }

    @Test func aSocketThatFailedKeepsTheRecordForTheOwnersSend() throws {
        let (pair, sender, receiver) = try established()
        defer { close(sender) }
        close(receiver)
        _ = pair.writeAll([UInt8](repeating: 1, count: 20_000), on: pair.server)
        // The send failed (EPIPE): nothing is lost silently; the owner's own
        // send meets the failure and reports it.
        #expect(pair.server.pendingOutput > 0)
        let n = pair.server.withPendingOutput { bytes in
            send(sender, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        #expect(n < 0 && errno == EPIPE)
    }
}
