import PinproxyCertificates

/// What one blocking read of a ``BlockingTransport`` got.
public enum BlockingRead: Sendable, Equatable {
    /// This many bytes were read.
    case bytes(Int)
    /// The peer closed its side (TCP FIN).
    case endOfStream
    /// Nothing came within the transport's timeout.
    case timedOut
    /// The transport failed; the system's words for why.
    case failed(String)
}

/// What a ``TLSBlockingStream`` carries its bytes over: a connected socket whose reads and
/// writes block up to a timeout (the harness's loopback sockets). The engine itself knows
/// no socket; this is the seam where one is plugged in.
public protocol BlockingTransport: AnyObject {
    /// Reads into `buffer`, waiting up to the transport's timeout.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> BlockingRead
    /// Sends every byte of `bytes`; nil once they are sent, else why not (`.timedOut` or `.failed`).
    func sendAll(_ bytes: UnsafeRawBufferPointer) -> BlockingRead?
}

/// Why a blocking TLS operation failed.
public struct TLSStreamError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, by the layer that failed.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The transport's timeout passed with nothing to read or no room to write.
        public static let timedOut = Kind("timed-out")
        /// The peer closed the connection before the operation finished.
        public static let closed = Kind("closed")
        /// The transport failed (see ``TLSStreamError/reason``).
        public static let transport = Kind("transport")
        /// TLS failed (see ``TLSStreamError/failure``).
        public static let tls = Kind("tls")
    }

    public var kind: Kind
    /// Plain words: the system's for a transport failure, the engine's for a TLS one.
    public var reason: String
    /// The engine's failure, when ``kind`` is `tls`.
    public var failure: TLSFailure?

    public init(_ kind: Kind, _ reason: String, failure: TLSFailure? = nil) {
        self.kind = kind
        self.reason = reason
        self.failure = failure
    }

    public var description: String { reason }
}

/// A ``TLSConnection`` driven over a ``BlockingTransport``: each call blocks until it is done,
/// the peer closes, or the transport times out. For the harness's one-connection-per-thread
/// clients and origin and for `pin --connect`, where a straight line reads better than events;
/// the engine, its contexts and their checks are the proxy's own, not a second TLS stack.
public final class TLSBlockingStream: @unchecked Sendable {
    // Sendable: driven by one thread at a time (a connection's own), as its engine is;
    // handing it to the thread that serves the connection is the only crossing.
    public let connection: TLSConnection
    private let transport: any BlockingTransport

    public init(_ connection: TLSConnection, over transport: any BlockingTransport) {
        self.connection = connection
        self.transport = transport
    }

    /// Runs the handshake to its end, sending each flight as it is made.
    public func handshake() throws(TLSStreamError) {
        while true {
            let result = connection.handshake()
            // The flight, or the alert of a failure: out before waiting. A failure's own
            // reason says more than an alert the peer did not take.
            if let error = flush(), !result.isFailure { throw error }
            switch result {
            case .complete:
                return
            case .wantRead:
                try receive()
            case .wantWrite:
                continue
            case .closed:
                throw TLSStreamError(.closed, "the peer closed the connection during the TLS handshake")
            case .clientHello:
                throw TLSStreamError(.tls, "the handshake paused at the ClientHello, which a blocking stream does not answer",
                                     failure: TLSFailure(kind: .other, reason: "paused at the ClientHello"))
            case .failed(let failure):
                throw Self.error(failure)
            }
        }
    }

    /// Up to `maxBytes` decrypted bytes; empty at the end of the stream (close_notify or not).
    public func read(maxBytes: Int = 16_384) throws(TLSStreamError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        while true {
            let result = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            switch result {
            case .bytes(let n):
                return Array(buffer.prefix(n))
            case .wantRead:
                if let error = flush() { throw error }
                try receive()
            case .wantWrite:
                if let error = flush() { throw error }
            case .closed:
                return []
            case .failed(let failure):
                throw Self.error(failure)
            }
        }
    }

    /// Reads until the peer closes, at most `limit` bytes.
    public func readToEnd(limit: Int = 1 << 20) throws(TLSStreamError) -> [UInt8] {
        var all: [UInt8] = []
        while all.count < limit {
            let chunk = try read()
            if chunk.isEmpty { break }
            all += chunk
        }
        return all
    }

    /// Encrypts and sends every byte of `bytes`.
    public func write(_ bytes: [UInt8]) throws(TLSStreamError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes[offset...].withUnsafeBytes { connection.write($0) }
            switch result {
            case .bytes(let n):
                offset += n
            case .wantRead:
                if let error = flush() { throw error }
                try receive()
            case .wantWrite:
                break
            case .closed:
                throw TLSStreamError(.closed, "the peer closed the connection")
            case .failed(let failure):
                throw Self.error(failure)
            }
            if let error = flush() { throw error }
        }
    }

    /// Sends close_notify (once; the peer's is not awaited), best effort.
    public func shutdown() {
        connection.shutdown()
        _ = flush()
    }

    /// One blocking read from the transport into the engine's input.
    private func receive() throws(TLSStreamError) {
        var received = BlockingRead.timedOut
        _ = connection.receive(maxBytes: 16 * 1024 + 512) { space in
            received = transport.receive(into: space)
            if case .bytes(let n) = received { return n }
            return 0
        }
        switch received {
        case .bytes: return
        case .endOfStream: connection.feedEndOfInput()
        case .timedOut: throw TLSStreamError(.timedOut, "timed out waiting for the peer")
        case .failed(let why): throw TLSStreamError(.transport, why)
        }
    }

    /// Sends everything the engine has for the peer; the error when that failed.
    private func flush() -> TLSStreamError? {
        var failure: BlockingRead?
        while connection.pendingOutput > 0 && failure == nil {
            _ = connection.withPendingOutput { bytes in
                failure = transport.sendAll(bytes)
                return failure == nil ? bytes.count : 0
            }
        }
        switch failure {
        case .timedOut?: return TLSStreamError(.timedOut, "timed out sending to the peer")
        case .failed(let why)?: return TLSStreamError(.transport, why)
        default: return nil
        }
    }

    private static func error(_ failure: TLSFailure) -> TLSStreamError {
        TLSStreamError(failure.kind == .transport ? .transport : .tls, failure.reason, failure: failure)
    }
}

private extension TLSHandshakeResult {
    var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}
