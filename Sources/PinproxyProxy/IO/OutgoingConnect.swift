import Dispatch
import Foundation
import PinproxyCertificates

/// Opening an outgoing connection: the name looked up off the loop, the
/// non-blocking connect started, its timeout, and the completion told
/// exactly once, by whichever ends it first (the socket turning writable,
/// a failed lookup or connect, or the timeout).
///
/// Owned by its transport while the transport is ``Transport/Phase/connecting``;
/// the transport reports the writable socket with ``socketWritable(_:)``.
final class OutgoingConnect {
    private var completion: ((PinproxyError?) -> Void)?
    /// The connect's time limit, cancelled once finished.
    private var limit: LoopTimer?

    private init(completion: @escaping (PinproxyError?) -> Void) {
        self.completion = completion
    }

    /// Whether the completion has not run yet.
    var isPending: Bool { completion != nil }

    /// Tells the completion, once: nil for connected, else why not.
    func finish(_ error: PinproxyError?) {
        guard let handler = completion else { return }
        completion = nil
        limit?.cancel()
        limit = nil
        handler(error)
    }

    /// A transport connecting to `host:port` (see ``Transport/connecting(host:port:queue:timeout:completion:)``).
    static func start(host: String, port: Int, queue: DispatchQueue, timeout: TimeInterval,
                      completion: @escaping (PinproxyError?) -> Void) throws -> Transport {
        assertOnQueue(queue)
        let connect = OutgoingConnect(completion: completion)
        // A DNS lookup can take seconds; on a loop it would stall every
        // connection sharing it. Names are resolved on the global pool while
        // the transport already exists around a dual-stack socket.
        let lookup = Socket.needsLookup(host) ? Socket.dualStackSocket() : nil
        let transport = Transport(descriptor: try lookup ?? Socket.startConnect(host: host, port: port), queue: queue)
        transport.phase = .connecting
        transport.connect = connect
        if lookup != nil {
            let loopWork = Confined(transport)
            let loop = transport.loop
            DispatchQueue.global().async {
                let resolved = Socket.resolveForDualStack(host: host, port: port)
                let outcome = Confined(resolved)
                loop.execute { pending(on: loopWork.value)?.resolved(outcome.value, for: loopWork.value) }
            }
        } else {
            transport.resumeWrite()
        }
        // Holds the transport until the limit or the connect's end cancels it;
        // a weak reference would give it a side table (see ``OwnerLink``).
        connect.limit = queue.later(after: timeout) {
            guard let connect = pending(on: transport) else { return }
            connect.finish(PinproxyError(.socket, "connecting to \(host):\(port) timed out after \(TimeoutText.seconds(timeout))"))
        }
        return transport
    }

    /// `transport`'s socket became writable while connecting: the connect
    /// finished, one way or the other.
    func socketWritable(_ transport: Transport) {
        transport.suspendWrite()
        let error = Socket.pendingError(transport.descriptor)
        transport.phase = .plain
        finish(error.map { PinproxyError(.socket, $0.description) })
    }

    /// The connect `transport` still waits on, if any.
    private static func pending(on transport: Transport) -> OutgoingConnect? {
        guard transport.phase == .connecting, !transport.isClosed, let connect = transport.connect, connect.isPending else { return nil }
        return connect
    }

    private func resolved(_ resolved: Result<sockaddr_in6, PinproxyError>, for transport: Transport) {
        switch resolved {
        case .success(let address):
            guard let failure = Socket.startConnect(transport.descriptor, to: address) else {
                transport.resumeWrite()
                return
            }
            finish(PinproxyError(.socket, failure.description))
        case .failure(let failure):
            finish(failure)
        }
    }
}
