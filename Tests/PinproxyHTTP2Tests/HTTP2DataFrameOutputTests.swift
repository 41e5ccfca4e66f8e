import PinproxyHTTP1
@testable import PinproxyHTTP2
import Testing

/// DATA frames are written by the session itself, payload straight from the
/// arrays ``HTTP2Session/sendData(_:on:endStream:)`` was given: every byte,
/// in order, in frames no larger than the peer allows, and an output that
/// stops near its limit.
@Suite("HTTP/2 DATA frames written from the queued body")
struct HTTP2DataFrameOutputTests {
    /// A pair whose SETTINGS have crossed, the server allowing 1 MiB per
    /// stream and per connection, and one request open with a body to send.
    private func openUpload() throws -> (SessionPair, HTTP2StreamID) {
        var roomy = HTTP2Limits.default
        roomy.initialStreamWindow = 1024 * 1024
        roomy.connectionWindow = 1024 * 1024
        let pair = try SessionPair(serverLimits: roomy)
        try pair.pump()
        let stream = try pair.client.sendRequest(post("/upload"), endStream: false)
        let head = pair.client.takeOutput()
        #expect(RawFrame.parse(head).contains { $0.kind == .headers })
        return (pair, stream)
    }

    @Test("a body queued in arrays of odd sizes leaves whole and in order, in frames of at most 16 KiB")
    func oddChunks() throws {
        let (pair, stream) = try openUpload()
        let sizes = [1, 7, 16_383, 1, 16_385, 40_000, 3, 65_536, 2]
        var body: [UInt8] = []
        for (index, size) in sizes.enumerated() {
            let chunk = pattern(size, seed: index + 1)
            body += chunk
            try pair.client.sendData(chunk, on: stream, endStream: index == sizes.count - 1)
        }
        #expect(pair.client.bufferedBytes(on: stream) == body.count)
        var frames: [RawFrame] = []
        var written = 0
        while pair.client.wantsWrite {
            let output = pair.client.takeOutput(limit: 20_000)
            #expect(!output.isEmpty)
            frames += RawFrame.parse(output)
            for case .dataWritten(let id, let count) in pair.client.takeEvents() where id == stream { written += count }
        }
        let data = frames.filter { $0.kind == .data && $0.stream == UInt32(stream.rawValue) }
        #expect(data.allSatisfy { $0.payload.count <= 16_384 })
        #expect(data.map(\.payload.count).reduce(0, +) == body.count)
        let same = data.flatMap(\.payload) == body
        #expect(same, "the DATA payloads are not the body as queued")
        #expect(data.last?.flags == RawFrame.endStream)
        #expect(data.dropLast().allSatisfy { $0.flags == 0 })
        #expect(written == body.count)
        #expect(pair.client.bufferedBytes(on: stream) == 0)
    }

    @Test("one output stops at its limit (a frame past it at most), though the windows allow far more")
    func outputStopsAtItsLimit() throws {
        let (pair, stream) = try openUpload()
        let body = pattern(600_000, seed: 9)
        try pair.client.sendData(body, on: stream, endStream: true)
        var received: [UInt8] = []
        var outputs = 0
        while pair.client.wantsWrite {
            let output = pair.client.takeOutput(limit: 64 * 1024)
            outputs += 1
            #expect(output.count <= 64 * 1024 + 16_384 + 9, "output \(outputs) has \(output.count) bytes")
            if pair.client.wantsWrite { #expect(output.count >= 64 * 1024, "output \(outputs) stopped early") }
            received += RawFrame.parse(output).filter { $0.kind == .data }.flatMap(\.payload)
        }
        #expect(outputs >= 600_000 / (80 * 1024))
        #expect(received == body)
    }

    @Test("a full DATA frame fills one TLS record with its header: 64 KiB of output is four whole records")
    func fullFramesFillWholeRecords() throws {
        let (pair, stream) = try openUpload()
        let body = pattern(300_000, seed: 5)
        try pair.client.sendData(body, on: stream, endStream: true)
        var received: [UInt8] = []
        var outputs: [[UInt8]] = []
        while pair.client.wantsWrite { outputs.append(pair.client.takeOutput(limit: 64 * 1024)) }
        for output in outputs {
            let data = RawFrame.parse(output).filter { $0.kind == .data }
            received += data.flatMap(\.payload)
            // Every frame but the body's last carries 16 KiB less its 9-byte header.
            for frame in data where frame.flags == 0 { #expect(frame.payload.count == 16_384 - 9) }
        }
        #expect(received == body)
        // Outputs before the last: exactly 4 × 16 KiB, what SSL_write seals as four full records.
        for output in outputs.dropLast() { #expect(output.count == 64 * 1024) }
        // 19 frames: four outputs of four, then one of three.
        #expect(outputs.count == 5)
    }

    @Test("a body reset halfway is dropped: no DATA frame for it follows the RST_STREAM")
    func resetDropsQueuedBody() throws {
        let (pair, stream) = try openUpload()
        try pair.client.sendData(pattern(100_000, seed: 3), on: stream)
        let first = RawFrame.parse(pair.client.takeOutput(limit: 20_000))
        #expect(first.contains { $0.kind == .data })
        try pair.client.reset(stream, code: .cancel)
        #expect(pair.client.bufferedBytes(on: stream) == 0)
        let rest = RawFrame.parse(pair.client.takeOutput())
        #expect(rest.contains { $0.kind == .rstStream && $0.stream == UInt32(stream.rawValue) })
        #expect(!rest.contains { $0.kind == .data })
    }

    @Test("the queued body hands out exactly what was asked, across array boundaries")
    func outgoingBodyTakes() {
        var body = HTTP2OutgoingBody()
        body.append([1, 2, 3])
        body.append([])
        body.append([4])
        body.append([5, 6, 7, 8, 9])
        #expect(body.count == 9)
        var out: [UInt8] = [0]
        #expect(body.take(2, into: &out) == 2)
        #expect(out == [0, 1, 2])
        #expect(body.take(3, into: &out) == 3)
        #expect(out == [0, 1, 2, 3, 4, 5])
        #expect(body.count == 4)
        body.append([10])
        #expect(body.take(100, into: &out) == 5)
        #expect(out == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        #expect(body.isEmpty)
        #expect(body.take(1, into: &out) == 0)
        // Many small arrays, taken a few bytes at a time: the front is
        // dropped as it goes and nothing is lost or repeated.
        var expected: [UInt8] = []
        for index in 0..<200 {
            let chunk = pattern(index % 5 + 1, seed: index)
            expected += chunk
            body.append(chunk)
        }
        var taken: [UInt8] = []
        while !body.isEmpty { body.take(3, into: &taken) }
        #expect(taken == expected)
        body.append([1])
        body.removeAll()
        #expect(body.isEmpty && body.count == 0)
    }
}
