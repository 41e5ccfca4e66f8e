import Dispatch
import Foundation
import PinproxyCertificates
import PinproxyTLS

/// Where a session's output goes: the client's connection or an upstream's.
protocol ByteOutput: AnyObject {
    func send(_ bytes: [UInt8])
    /// Output beyond the congestion bound waits: stop feeding it.
    var outputIsCongested: Bool { get }
}

/// What a layer does with the client's connection. ``Transport`` is the one
/// the proxy uses; the exchange layers' tests use one in memory, so that a
/// layer is driven without a socket.
protocol ClientSide: ByteOutput {
    /// The connection's queue: every call comes on it.
    var queue: DispatchQueue { get }
    /// Starts reading (a second call does nothing).
    func start()
    func send(_ bytes: ArraySlice<UInt8>)
    func send(_ bytes: [UInt8])
    /// Holds output back until ``uncork()``, so that a batch goes in one write.
    func cork()
    func uncork()
    /// Output beyond the congestion bound waits: stop feeding it.
    var outputIsCongested: Bool { get }
    func pauseReading()
    func resumeReading()
    /// Closes once the output went out; input that still arrives is read
    /// and dropped for at most `lingering` seconds (see ``Transport``).
    func closeAfterSending(lingering: TimeInterval?)
    /// Closes at once.
    func close()
    /// Runs `handler` when the connection has been idle a whole sweep interval
    /// (its TLS buffers went back), to release memory of its own.
    func whenIdle(_ handler: @escaping () -> Void)

    /// Begins the client's TLS handshake; `initial`: bytes already read that belong to it.
    func startTLS(_ connection: TLSConnection, initial: ArraySlice<UInt8>, handler: @escaping (TLSHandshakeResult) -> Void)
    /// Continues a handshake paused at the ClientHello.
    func continueHandshake()
    /// Gives up a handshake that sent nothing yet and returns the bytes fed to it.
    func abandonTLS() -> [UInt8]
    /// The address the client connected to (this end of its socket), nil when there is none.
    var localAddress: HostName? { get }
}

extension ClientSide {
    func closeAfterSending() { closeAfterSending(lingering: nil) }
}

extension ClientSide {
    /// A client side that never idles (an in-memory one) has nothing to release.
    func whenIdle(_ handler: @escaping () -> Void) {}
    /// An in-memory client side has no socket.
    var localAddress: HostName? { nil }
}

extension Transport: ClientSide {
    func whenIdle(_ handler: @escaping () -> Void) { onIdle = handler }
    var localAddress: HostName? {
        guard let local = Socket.localAddress(descriptor) else { return nil }
        let bytes = OwnAddresses.unmapped(local.address)
        return bytes.count == 4 ? .ipv4(bytes) : .ipv6(bytes)
    }
}
extension Upstream: ByteOutput {}
