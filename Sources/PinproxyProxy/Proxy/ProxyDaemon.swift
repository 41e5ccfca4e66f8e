import Dispatch
import Foundation
import Logging
import PinproxyCertificates

/// The daemon `pinproxy serve` runs: the proxy, its control API and its
/// capture files, started and stopped together.
public final class ProxyDaemon: Sendable {
    public let server: ProxyServer
    public let admin: AdminServer?
    private let recorder: CaptureRecorder
    private let logger: Logger

    public init(configuration: ProxyConfiguration, authority: CertificateAuthority,
                adminAddress: ListenAddress? = nil, adminToken: AdminToken? = nil, harPath: String? = nil, eventsPath: String? = nil,
                keepsRecentFlows: Bool = true, logger: Logger = Logger(label: "pinproxy")) throws {
        var sinks: [any CaptureSink] = []
        if let harPath { sinks.append(try HARWriter(path: harPath)) }
        if let eventsPath { sinks.append(try JSONLinesWriter(path: eventsPath)) }
        recorder = CaptureRecorder(sinks: sinks, bodyCaptureLimit: configuration.bodyCaptureLimit,
                                   keepsRecentFlows: keepsRecentFlows || adminAddress != nil, logger: logger)
        server = try ProxyServer(configuration: configuration, authority: authority, recorder: recorder, logger: logger)
        if let adminAddress {
            try Self.checkAdmin(adminAddress, token: adminToken)
            admin = AdminServer(address: adminAddress, token: adminToken, proxy: server, logger: logger)
        } else {
            admin = nil
        }
        self.logger = logger
    }

    /// Refuses a control API beyond loopback without a token: anyone who reaches the port could
    /// read captured secrets and switch the attacks.
    public static func checkAdmin(_ address: ListenAddress, token: AdminToken?) throws {
        guard address.isLoopback || token != nil else {
            throw PinproxyError(.invalidArgument, "the control API listens beyond loopback (\(address)) only with a bearer token: give --admin-token-file FILE or set \(AdminToken.environmentVariable)")
        }
    }

    /// Starts the proxy (and the control API); returns the proxy's address.
    public func start() throws -> ListenAddress {
        let address = try server.start()
        try admin?.start()
        // Requests through the proxy to the control API are refused.
        if let adminAddress = admin?.address { server.ownAddresses.add(adminAddress, role: .controlAPI) }
        return address
    }

    public var adminAddress: ListenAddress? { admin?.address }

    public var modeDescription: String {
        switch server.configuration.mode {
        case .forward: return "forward proxy"
        case .reverse(let scheme, let host, let port): return "reverse proxy for \(scheme)://\(host.uriHost):\(port)"
        }
    }

    /// Stops accepting, drains, closes the control API and flushes the capture files.
    public func stop() {
        server.stop()
        admin?.stop()
        recorder.close()
    }
}

/// SIGINT and SIGTERM, caught from the moment this is made: made before the ready line, so
/// that a supervisor's signal sent right after it is not lost (a ``SignalRelay``: its handler
/// is in place when init returns).
public final class TerminationSignal: @unchecked Sendable {
    // Sendable: the semaphore and relay are set in init and never replaced (the relay runs for
    // the life of the process); `signals` and `onRepeat` are locked.
    private let semaphore = DispatchSemaphore(value: 0)
    private let signals = Locked((count: 0, onRepeat: nil as (@Sendable () -> Void)?))
    private let relay: SignalRelay

    public init() throws(PinproxyError) {
        let semaphore = self.semaphore
        let signals = self.signals
        relay = try SignalRelay { _ in
            let repeated = signals.withLock { s -> (@Sendable () -> Void)? in
                s.count += 1
                return s.count == 1 ? nil : s.onRepeat
            }
            if let repeated { repeated() } else { semaphore.signal() }
        }
    }

    /// Blocks until one of the signals arrived (at any time since init).
    public func wait() {
        semaphore.wait()
    }

    /// Runs `action` for every signal after the first (a second Ctrl-C during the drain).
    public func onRepeat(_ action: @escaping @Sendable () -> Void) {
        signals.withLock { $0.onRepeat = action }
    }
}
