import Foundation
import Testing
@testable import PinproxyProxy

/// The transport's output queue on its own, in memory (and over a socket
/// pair for its writes): byte counts, partial drops, the gathering of small
/// chunks into one write, corking and the congestion hysteresis.
@Suite struct OutputQueueTests {
    /// Scratch space of its own, standing in for the event loop's.
    final class Scratch: ScratchSpace {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var uses = 0
        func withScratch<Result>(_ byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
            uses += 1
            return buffer.withUnsafeMutableBytes { body(UnsafeMutableRawBufferPointer(rebasing: $0[0..<min(byteCount, $0.count)])) }
        }
    }

    private func bytes(_ count: Int, from start: UInt8 = 0) -> [UInt8] {
        (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) }
    }

    /// The queue and its writes, handed to a thread of their own.
    final class Writer: @unchecked Sendable {
        // Sendable: the test thread touches `queue` only before starting the thread and after `done` signalled.
        var queue = OutputQueue()
        let scratch = Scratch()
        var stopped: IOOutcome?
        let done = DispatchSemaphore(value: 0)

        /// `queue.write(to: fd)` on another thread; false when it has not returned within
        /// `seconds` (a queue that never empties would spin: a failure, not a hung run).
        func write(to fd: Int32, within seconds: Double = 20) -> Bool {
            Thread { [self] in
                stopped = queue.write(to: Descriptor(fd), in: scratch)
                done.signal()
            }.start()
            return done.wait(timeout: .now() + seconds) == .success
        }
    }

    private func next(_ queue: OutputQueue, _ scratch: Scratch = Scratch()) -> [UInt8] {
        queue.withNext(in: scratch) { Array($0) }
    }

    @Test func dropTakesWholeChunksThenTheFrontOfTheNext() {
        var queue = OutputQueue()
        queue.append(bytes(10)[...])
        queue.append(bytes(20, from: 100)[...])
        queue.append(bytes(30, from: 200)[...])
        #expect(queue.byteCount == 60)
        queue.drop(15)  // the first chunk and 5 bytes of the second
        #expect(queue.byteCount == 45)
        #expect(queue.chunks.count == 2)
        #expect(Array(queue.chunks[0]) == Array(bytes(20, from: 100)[5...]))
        queue.drop(15)  // exactly the rest of the second
        #expect(queue.chunks.count == 1)
        #expect(Array(queue.chunks[0]) == bytes(30, from: 200))
        queue.drop(30)
        #expect(queue.isEmpty)
        #expect(queue.byteCount == 0)
    }

    @Test func smallLeadingChunksAreGatheredIntoOneWrite() {
        var queue = OutputQueue()
        let head = bytes(200), body = bytes(1_000, from: 7), tail = bytes(OutputQueue.coalesceLimit, from: 9)
        queue.append(head[...])
        queue.append(body[...])
        queue.append(tail[...])  // would pass the limit: stays for the next write
        let scratch = Scratch()
        #expect(next(queue, scratch) == head + body)
        #expect(scratch.uses == 1)
        // A write that took only part of it: the retry starts where it stopped.
        queue.drop(150)
        #expect(next(queue) == Array(head[150...]) + body)
        queue.drop(50 + 1_000)
        #expect(next(queue) == tail)
    }

    @Test func aLargeFirstChunkIsWrittenAsItIsWithoutScratch() {
        var queue = OutputQueue()
        let large = bytes(OutputQueue.coalesceLimit - 10), small = bytes(20)
        queue.append(large[...])
        queue.append(small[...])
        let scratch = Scratch()
        #expect(next(queue, scratch) == large)
        #expect(scratch.uses == 0)
    }

    @Test func corkingNestsAndOnlyTheLastUncorkReleases() {
        var queue = OutputQueue()
        queue.cork()
        queue.cork()
        var released = queue.uncork()
        #expect(!released)
        #expect(queue.corkDepth == 1)
        released = queue.uncork()
        #expect(released)
        #expect(queue.corkDepth == 0)
    }

    @Test func congestionIsReportedAboveHighWaterAndDrainedOnceBelowHalf() {
        var queue = OutputQueue()
        let chunk = bytes(64 * 1024)
        for _ in 0..<4 { queue.append(chunk[...]) }  // exactly the high-water mark: not above
        var congested = queue.isCongested
        var drained = queue.takeDrained()
        #expect(!congested)
        #expect(!drained)  // never reported congested: nothing to announce
        queue.append(chunk[...])
        congested = queue.isCongested
        #expect(congested)
        queue.drop(2 * chunk.count)  // 192 KiB left: above half
        drained = queue.takeDrained()
        #expect(!drained)
        queue.drop(chunk.count)  // 128 KiB: half
        drained = queue.takeDrained()
        #expect(drained)
        drained = queue.takeDrained()
        #expect(!drained)  // once
    }

    @Test func writesToASocketUntilItRefusesAndKeepsTheRest() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        Socket.setNonBlocking(Descriptor(fds[0]))
        let writer = Writer()
        writer.queue.append(bytes(100)[...])
        writer.queue.append(bytes(50, from: 3)[...])
        try #require(writer.write(to: fds[0]), "the write never returned")
        #expect(writer.stopped == nil)
        #expect(writer.queue.isEmpty)
        var received = [UInt8](repeating: 0, count: 200)
        #expect(read(fds[1], &received, 200) == 150)
        #expect(Array(received[0..<150]) == bytes(100) + bytes(50, from: 3))
        // Nobody reads the other end: the socket fills, the rest stays queued.
        let big = bytes(4 * 1024 * 1024)
        writer.queue.append(big[...])
        try #require(writer.write(to: fds[0]), "the write never returned")
        #expect(writer.stopped == .wouldBlock)
        #expect(writer.queue.byteCount > 0 && writer.queue.byteCount < big.count)
        #expect(Array(writer.queue.chunks[0]) == Array(big[(big.count - writer.queue.byteCount)...]))
    }
}
