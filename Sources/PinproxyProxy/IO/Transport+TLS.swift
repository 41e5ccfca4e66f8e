import Foundation
import PinproxyTLS

/// Starting and leaving TLS: the ``TLSPump`` that joins the engine to this
/// socket carries the session from here on.
extension Transport {
    /// Begins a TLS handshake over this socket. `initial` holds bytes already
    /// read from the socket that belong to the handshake.
    func startTLS(_ connection: TLSConnection, initial: ArraySlice<UInt8> = [],
                  handler: @escaping (TLSHandshakeResult) -> Void) {
        assertOnQueue(queue)
        let pump = TLSPump(engine: connection, descriptor: descriptor, initial: initial, handler: handler)
        self.pump = pump
        phase = .handshaking
        started = true
        readingPaused = false
        resumeRead()
        pump.driveHandshake(self)
    }

    /// Continues a handshake paused at the ClientHello.
    func continueHandshake() {
        assertOnQueue(queue)
        guard phase == .handshaking, !isClosed, let pump else { return }
        pump.driveHandshake(self)
    }

    /// Gives up a TLS handshake that has not sent anything yet and returns
    /// every byte fed to it, so the connection can be tunnelled raw instead.
    func abandonTLS() -> [UInt8] {
        assertOnQueue(queue)
        let bytes = pump?.abandon() ?? []
        pump = nil
        phase = .plain
        return bytes
    }

    /// Called by the loop at the end of a batch (see ``TLSPump/sendSoon(_:)``).
    func sendScheduledOutput() {
        guard let pump else { return }
        if isClosed { pump.sendScheduled = false } else { pump.sendScheduledOutput(self) }
    }
}
