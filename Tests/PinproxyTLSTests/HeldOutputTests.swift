import Foundation
import Glibc
import Testing
@testable import PinproxyTLS

/// The engine's output over a real socket: every record OpenSSL seals waits
/// in the output buffer, in order, until the owner sends it, so that a
/// turn's records leave in few system calls (large records sent one by one
/// as they were sealed cost more on the real CPU than the copy they saved).
@Suite struct HeldOutputTests {
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

    @Test func fullRecordsWaitForTheOwnersSend() throws {
        let (pair, sender, receiver) = try MemoryPair.establishedOverSocket()
        defer { close(sender); close(receiver) }
        let body = [UInt8](repeating: 5, count: 3 * 16_384)
        _ = pair.writeAll(body, on: pair.server)
        // Three full records and their overhead, none of it sent yet.
        #expect(pair.server.pendingOutput > body.count)
        #expect(drainSocket(receiver).isEmpty)
        let sent = pair.server.withPendingOutput { bytes in
            max(send(sender, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)), 0)
        }
        #expect(sent > body.count)
        pair.client.feed(drainSocket(receiver))
        #expect(pair.readAvailable(on: pair.client).bytes == body)
    }

    @Test func aLargeBodyThroughAFullSocketArrivesWholeAndInOrder() throws {
        let (pair, sender, receiver) = try MemoryPair.establishedOverSocket()
        defer { close(sender); close(receiver) }
        _ = pair.writeAll(Array("head".utf8), on: pair.server)
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

    @Test func aSocketThatFailedLeavesTheOutputToTheOwnersSend() throws {
        let (pair, sender, receiver) = try MemoryPair.establishedOverSocket()
        defer { close(sender) }
        close(receiver)
        _ = pair.writeAll([UInt8](repeating: 1, count: 20_000), on: pair.server)
        // Nothing is lost silently: the owner's own send meets the failure and reports it.
        #expect(pair.server.pendingOutput > 20_000)
        let n = pair.server.withPendingOutput { bytes in
            send(sender, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        #expect(n < 0 && errno == EPIPE)
    }
}
