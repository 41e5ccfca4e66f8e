import Foundation
import Logging
import PinproxyCertificates
import PinproxyHTTP1

/// Raw bytes both ways between the client and one upstream, until either
/// side ends: a passthrough host, a CONNECT that carries no TLS, or a
/// connection after `101 Switching Protocols`.
///
/// A side stops being read while the other side's output is congested.
/// With an idle timeout, a tunnel whose ends both went quiet is closed
/// (nothing else would end it); an upgraded connection has none.
final class TunnelLayer: ConnectionLayer {
    private unowned let host: any LayerHost
    private let record: ConnectionRecord
    private let logger: Logger
    private let idleTimeout: TimeInterval?
    /// Whether shutdown's drain ends the tunnel at once (passthrough, raw
    /// CONNECT) or leaves it to the forced close (an upgraded exchange).
    private let endsOnDrain: Bool
    private let timer: DeadlineTimer
    private var upstream: Upstream?
    private var relaying = false
    /// Where the tunnel goes, for its log lines.
    private var name = ""

    init(host: any LayerHost, record: ConnectionRecord, logger: Logger, idleTimeout: TimeInterval?, endsOnDrain: Bool) {
        self.host = host
        self.record = record
        self.logger = logger
        self.idleTimeout = idleTimeout
        self.endsOnDrain = endsOnDrain
        self.timer = DeadlineTimer(queue: host.client.queue)
    }

    /// Connects to `host:port`, then sends `initial` and relays.
    func connect(to target: HostName, port: Int, initial: ArraySlice<UInt8>) {
        name = "\(target.uriHost):\(port)"
        host.client.pauseReading()
        pendingInitial = initial
        pendingTarget = (target, port)
        do {
            upstream = try host.openUpstream(UpstreamTarget(host: target, port: port, tls: false, serverName: target))
        } catch {
            host.client.queue.later { [weak self] in self?.connectFailed(error) }
        }
    }

    private var pendingInitial: ArraySlice<UInt8> = []
    private var pendingTarget: (host: HostName, port: Int)?

    /// Relays over an upstream already connected (after `101 Switching Protocols`).
    func relay(_ up: Upstream) {
        upstream = up
        startRelaying()
    }

    private func connectFailed(_ failure: UpstreamFailure) {
        guard let target = pendingTarget else { return }
        pendingTarget = nil
        if let own = failure.selfAddressed { record.recordSelfAddressed(own, host: target.host, port: target.port) }
        logger.notice("\(record.peer): tunnel to \(name) failed: \(failure.reason)")
        // A plain HTTP request after CONNECT can still be answered in its own
        // protocol; anything else (a ClientHello, bytes unknown) is just closed.
        if Self.startsLikeHTTPRequest(pendingInitial) {
            host.client.send(HTTP1Response.error(status: failure.status, reason: "the tunnel to \(name) failed: \(failure.reason)"))
            host.client.closeAfterSending(lingering: Transport.unwantedInputLinger)
        } else {
            host.client.close()
        }
        host.finish()
    }

    /// Whether `bytes` begin as an HTTP/1 request line does: an upper-case method, then a space.
    static func startsLikeHTTPRequest(_ bytes: ArraySlice<UInt8>) -> Bool {
        var letters = 0
        for byte in bytes.prefix(24) {
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { letters += 1; continue }
            return byte == UInt8(ascii: " ") && letters > 0
        }
        return false
    }

    private func startRelaying() {
        guard let up = upstream else { return host.finish() }
        relaying = true
        if !pendingInitial.isEmpty || pendingTarget != nil { up.send(pendingInitial) }
        pendingInitial = []
        pendingTarget = nil
        armIdleTimer()
        host.client.start()
        up.start()
        host.client.resumeReading()
        up.resumeReading()
    }

    private func armIdleTimer() {
        guard let idle = idleTimeout else { return }
        timer.arm(idle) { [weak self] in
            guard let self else { return }
            self.logger.info("\(self.record.peer): tunnel to \(self.name) idle for \(TimeoutText.seconds(idle)); closing it")
            self.upstream?.close()
            self.host.finish()
        }
    }

    private func closeBoth() {
        guard relaying else { return }
        relaying = false
        host.client.closeAfterSending()
        upstream?.closeAfterSending()
        upstream = nil
        host.finish()
    }

    func clientData(_ bytes: ArraySlice<UInt8>) {
        guard relaying, let up = upstream else { return }
        armIdleTimer()
        up.send(bytes)
        if up.outputIsCongested { host.client.pauseReading() }
    }

    func clientEnded(_ end: TransportEnd) {
        if relaying { closeBoth() } else { host.finish() }
    }

    func clientDrained() {
        if relaying { upstream?.resumeReading() }
    }

    func upstream(_ up: Upstream, _ event: UpstreamEvent) {
        guard up === upstream else { return }
        switch event {
        case .ready:
            startRelaying()
        case .failed(let failure):
            upstream = nil
            connectFailed(failure)
        case .data(let bytes):
            guard relaying else { return }
            armIdleTimer()
            host.client.send(bytes)
            if host.client.outputIsCongested { up.pauseReading() }
        case .ended:
            closeBoth()
        case .drained:
            if relaying { host.client.resumeReading() }
        }
    }

    func drain() {
        if endsOnDrain { host.finish() }
    }

    func interrupt() {}

    func close() {
        timer.cancel()
        upstream?.close()
        upstream = nil
    }
}
