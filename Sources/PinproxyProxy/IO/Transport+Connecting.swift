import Dispatch
import Foundation
import PinproxyCertificates

/// Opening an outgoing connection: name lookup off the loop, a non-blocking
/// connect, its timeout, and the writability that says it finished.
extension Transport {
    /// Starts connecting to `host:port`; `completion` runs on `queue` once the
    /// socket is connected (nil) or failed. Bytes sent meanwhile are queued
    /// until ``flushQueued()`` or a completed TLS handshake sends them.
    static func connecting(host: String, port: Int, queue: DispatchQueue, timeout: TimeInterval,
                           completion: @escaping (PinproxyError?) -> Void) throws -> Transport {
        assertOnQueue(queue)
        // A DNS lookup can take seconds; on a loop it would stall every
        // connection sharing it. Names are resolved on the global pool while
        // the transport already exists around a dual-stack socket.
        if Socket.needsLookup(host), let descriptor = Socket.dualStackSocket() {
            let transport = Transport(descriptor: descriptor, queue: queue)
            transport.phase = .connecting
            transport.onConnect = completion
            let loopWork = Confined(transport)
            let loop = transport.loop
            DispatchQueue.global().async {
                let resolved = Socket.resolveForDualStack(host: host, port: port)
                let outcome = Confined(resolved)
                loop.execute { loopWork.value.connectResolved(outcome.value) }
            }
            transport.armConnectTimeout(host: host, port: port, timeout: timeout)
            return transport
        }
        let transport = Transport(descriptor: try Socket.startConnect(host: host, port: port), queue: queue)
        transport.phase = .connecting
        transport.onConnect = completion
        transport.resumeWrite()
        transport.armConnectTimeout(host: host, port: port, timeout: timeout)
        return transport
    }

    private func connectResolved(_ resolved: Result<sockaddr_in6, PinproxyError>) {
        guard phase == .connecting, !isClosed, let handler = onConnect else { return }
        let error: PinproxyError
        switch resolved {
        case .success(let address):
            guard let failure = Socket.startConnect(descriptor, to: address) else {
                resumeWrite()
                return
            }
            error = PinproxyError(.socket, failure.description)
        case .failure(let failure):
            error = failure
        }
        onConnect = nil
        handler(error)
    }

    private func armConnectTimeout(host: String, port: Int, timeout: TimeInterval) {
        queue.later(after: timeout) { [weak self] in
            guard let self, self.phase == .connecting, !self.isClosed, let handler = self.onConnect else { return }
            self.onConnect = nil
            handler(PinproxyError(.socket, "connecting to \(host):\(port) timed out after \(TimeoutText.seconds(timeout))"))
        }
    }

    /// The socket became writable while connecting: the connect finished,
    /// one way or the other.
    func finishConnecting() {
        suspendWrite()
        let error = Socket.pendingError(descriptor)
        phase = .plain
        let handler = onConnect
        onConnect = nil
        handler?(error.map { PinproxyError(.socket, $0.description) })
    }
}
