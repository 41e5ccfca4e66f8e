import Foundation
import Glibc
import PinproxyBase
import PinproxyHTTP1
import PinproxyHTTP2

/// A cleartext HTTP/2 (h2c, prior knowledge) server on 127.0.0.1 built on a
/// server ``HTTP2Session`` and one blocking socket per connection, served on
/// a thread of its own: enough for real clients (nghttp, curl) to talk to.
///
/// `/bytes/N` answers N pattern bytes (seed 7), streamed as the client's
/// windows allow; `/echo` answers the request body, with a
/// `x-trailers-seen` trailer naming the request's trailers.
final class LoopbackH2Server: @unchecked Sendable {
    // Sendable: the listening descriptor is written once in init; the
    // sessions live on the server thread only; what tests read is behind `record`.
    let port: Int
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    /// What the server saw, for the test thread.
    struct Record: Sendable {
        var requests: [String] = []
        var trailers: [HTTPHeaders] = []
        var closedNormally = 0
        var mostOpenStreams = 0
        var errors: [String] = []
    }
    let record = Locked(Record())

    init(limits: HTTP2Limits = .default) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw PinproxyError(.io, "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else { throw PinproxyError(.io, "bind/listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        let thread = Thread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 { break }
                // A stalled exchange fails the test instead of hanging it.
                var timeout = timeval(tv_sec: 60, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                serve(connection)
                close(connection)
            }
            done.signal()
        }
        thread.start()
    }

    /// Stops accepting and waits for the server thread.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        done.wait()
        close(listener)
    }

    private func serve(_ fd: Int32) {
        guard let session = try? HTTP2Session(role: .server, limits: .default) else { return }
        var app = App(session: session, record: record)
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            app.produce()
            let output = session.takeOutput()
            app.handle(session.takeEvents())
            if !output.isEmpty && !writeAll(fd, output) { return }
            if session.wantsWrite || app.canProduce { continue }
            if session.isFinished { return }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return }
            buffer.withUnsafeBytes { session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            app.handle(session.takeEvents())
        }
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// The server's application: answers requests once their bodies are in.
    private struct App {
        let session: HTTP2Session
        let record: Locked<Record>
        var heads: [HTTP2StreamID: HTTP2RequestHead] = [:]
        var bodies: [HTTP2StreamID: [UInt8]] = [:]
        var trailers: [HTTP2StreamID: HTTPHeaders] = [:]
        /// Downloads still to produce: total size and bytes queued so far.
        var downloads: [HTTP2StreamID: (total: Int, queued: Int)] = [:]

        mutating func handle(_ events: [HTTP2Event]) {
            for event in events {
                switch event {
                case .request(let stream, let head, let endStream):
                    heads[stream] = head
                    record.withLock { $0.requests.append(head.path ?? ""); $0.mostOpenStreams = max($0.mostOpenStreams, session.openStreams.count) }
                    if endStream { respond(stream) }
                case .data(let stream, let bytes, let endStream):
                    bodies[stream, default: []] += bytes
                    session.consume(bytes.count, on: stream)
                    if endStream { respond(stream) }
                case .trailers(let stream, let fields):
                    trailers[stream] = fields
                    record.withLock { $0.trailers.append(fields) }
                    respond(stream)
                case .streamClosed(let stream, let code):
                    downloads[stream] = nil
                    if code == .noError { record.withLock { $0.closedNormally += 1 } }
                case .connectionError(let error):
                    record.withLock { $0.errors.append(error.description) }
                default:
                    break
                }
            }
        }

        mutating func respond(_ stream: HTTP2StreamID) {
            let path = heads[stream]?.path ?? ""
            do {
                if path.hasPrefix("/bytes/"), let size = Int(path.dropFirst("/bytes/".count)) {
                    try session.sendResponse(HTTP2ResponseHead(status: 200, headers: ["content-length": String(size)]), on: stream, endStream: size == 0)
                    if size > 0 { downloads[stream] = (size, 0) }
                } else if path == "/echo" {
                    let body = bodies[stream] ?? []
                    try session.sendResponse(HTTP2ResponseHead(status: 200, headers: ["content-length": String(body.count)]), on: stream, endStream: false)
                    try session.sendData(body, on: stream)
                    let names = trailers[stream]?.fields.map(\.name).joined(separator: ",") ?? ""
                    try session.sendTrailers(["x-trailers-seen": names], on: stream)
                } else {
                    try session.sendResponse(HTTP2ResponseHead(status: 404), on: stream, endStream: true)
                }
            } catch {
                record.withLock { $0.errors.append("\(error)") }
            }
        }

        /// Whether a download can queue more now: its buffer has room and the client's window is open.
        var canProduce: Bool {
            downloads.keys.contains { session.bufferedBytes(on: $0) < 64 * 1024 && session.sendWindow(on: $0) > 0 }
        }

        /// Tops each download up to 64 KiB buffered, 16 KiB at a time.
        mutating func produce() {
            let full = pattern(16 * 1024, seed: 7)
            for (stream, download) in downloads {
                var queued = download.queued
                while queued < download.total && session.bufferedBytes(on: stream) < 64 * 1024 {
                    let count = min(16 * 1024, download.total - queued)
                    // The pattern repeats every 16 KiB, so a download is a function of its size.
                    try? session.sendData(Array(full[0..<count]), on: stream, endStream: queued + count == download.total)
                    queued += count
                }
                downloads[stream] = queued == download.total ? nil : (download.total, queued)
            }
        }
    }
}

/// The bytes `/bytes/N` answers.
func downloadPattern(_ size: Int) -> [UInt8] {
    let block = pattern(16 * 1024, seed: 7)
    var out: [UInt8] = []
    out.reserveCapacity(size)
    while out.count < size { out += block.prefix(size - out.count) }
    return out
}
