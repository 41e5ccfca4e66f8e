internal import COpenSSL
import Foundation
import Glibc
import Testing
@testable import PinproxyTLS

/// The server engine reading a real socket itself (``TLSDirectSocket/readDirectly(_:empty:)``):
/// records land in OpenSSL's buffer by `read(2)`, a short read means "empty
/// until told otherwise", and the socket's end or failure reaches the caller.
@Suite struct DirectSocketReadTests {
    /// An established pair whose server then reads `fds.0`; the test writes
    /// the client's records into `fds.1`.
    private func established() throws -> (pair: MemoryPair, reader: Int32, writer: Int32) {
        let (pair, reader, writer) = try MemoryPair.establishedOverSocket()
        pair.server.directSocket.readDirectly(reader, empty: false)
        return (pair, reader, writer)
    }

    /// Writes all of `bytes` to a blocking socket.
    private func send(_ bytes: [UInt8], to socket: Int32) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(socket, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            offset += n
        }
    }

    /// Reads until `count` bytes came or the engine stops; whenever the engine found the socket
    /// empty, waits (up to 10 s) until it is readable and announces it, as the event loop would —
    /// a writer on a busy machine may pause for a while between its writes.
    private func readAll(_ engine: TLSConnection, from socket: Int32, expecting count: Int) -> (bytes: [UInt8], last: TLSIOResult) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var last = TLSIOResult.wantRead
        while bytes.count < count {
            last = buffer.withUnsafeMutableBytes { engine.read(into: $0) }
            if case .bytes(let n) = last {
                bytes += buffer[0..<n]
                continue
            }
            guard last == .wantRead else { break }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 10_000) > 0 else { break }
            engine.directSocket.becameReadable()
        }
        return (bytes, last)
    }

    @Test func aLargeBodyArrivesByteExactAcrossManyReads() throws {
        let (pair, reader, writer) = try established()
        defer { close(reader); close(writer) }
        let body = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        _ = pair.writeAll(body, on: pair.client)
        let records = pair.client.takeOutput()
        // The writer runs beside the reader: the socket's buffer holds less
        // than the body, so the reads see it in many pieces, some cut mid-record.
        let writing = Thread { self.send(records, to: writer) }
        writing.start()
        let read = readAll(pair.server, from: reader, expecting: body.count)
        #expect(read.bytes.count == body.count)
        #expect(read.bytes == body)
    }

    @Test func aShortReadMeansEmptyUntilTheSocketIsAnnouncedAgain() throws {
        let (pair, reader, writer) = try established()
        defer { close(reader); close(writer) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        _ = pair.writeAll(Array("first".utf8), on: pair.client)
        send(pair.client.takeOutput(), to: writer)
        #expect(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) } == .bytes(5))
        #expect(pair.server.directSocket.input == .empty)
        // Bytes that arrive now are not read until the socket is announced
        // readable: no read(2) is spent on a socket known to be empty.
        _ = pair.writeAll(Array("second".utf8), on: pair.client)
        send(pair.client.takeOutput(), to: writer)
        #expect(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) } == .wantRead)
        pair.server.directSocket.becameReadable()
        #expect(pair.server.directSocket.input == .readable)
        #expect(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) } == .bytes(6))
        #expect(Array(buffer[0..<6]) == Array("second".utf8))
    }

    @Test func bytesFedBeforeTheSocketAreReadFirst() throws {
        let (pair, reader, writer) = try established()
        defer { close(reader); close(writer) }
        _ = pair.writeAll(Array("fed".utf8), on: pair.client)
        pair.server.feed(pair.client.takeOutput())
        _ = pair.writeAll(Array("socket".utf8), on: pair.client)
        send(pair.client.takeOutput(), to: writer)
        let read = readAll(pair.server, from: reader, expecting: 9)
        #expect(read.bytes == Array("fedsocket".utf8))
    }

    @Test func theSocketsEndInTheMiddleOfARecordIsNotData() throws {
        let (pair, reader, writer) = try established()
        defer { close(reader) }
        _ = pair.writeAll([UInt8](repeating: 7, count: 2000), on: pair.client)
        let record = pair.client.takeOutput()
        send(Array(record[0..<1000]), to: writer)
        close(writer)
        let read = readAll(pair.server, from: reader, expecting: 1)
        #expect(read.bytes.isEmpty)
        #expect(read.last == .closed)
        #expect(pair.server.directSocket.input == .ended)
        #expect(pair.server.isAtEndOfInput)
    }

    @Test func theSocketsEndAfterWholeRecordsDeliversThemFirst() throws {
        let (pair, reader, writer) = try established()
        defer { close(reader) }
        let body = [UInt8](repeating: 9, count: 40_000)
        _ = pair.writeAll(body, on: pair.client)
        send(pair.client.takeOutput(), to: writer)
        close(writer)
        let read = readAll(pair.server, from: reader, expecting: body.count + 1)
        #expect(read.bytes == body)
        #expect(read.last == .closed)
    }

    @Test func aFailedReadIsReportedWithItsErrno() throws {
        let pair = try MemoryPair()
        let (client, server) = pair.handshake()
        try #require(client.isDone && server.isDone, "\(client) \(server)")
        // read(2) on a directory fails with EISDIR.
        let directory = open("/", O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        defer { close(directory) }
        pair.server.directSocket.readDirectly(directory, empty: false)
        var buffer = [UInt8](repeating: 0, count: 64)
        let result = buffer.withUnsafeMutableBytes { pair.server.read(into: $0) }
        #expect(result != .wantRead)
        #expect(pair.server.directSocket.input == .failed(EISDIR))
    }
}

extension MemoryPair {
    /// A pair whose handshake is done, with a socket pair for its server
    /// engine: `local` (non-blocking) for the engine, `remote` for the test.
    static func establishedOverSocket() throws -> (pair: MemoryPair, local: Int32, remote: Int32) {
        let pair = try MemoryPair()
        let (client, server) = pair.handshake()
        try #require(client.isDone && server.isDone, "\(client) \(server)")
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (pair, fds[0], fds[1])
    }
}
