import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy

/// The proxy started inside the harness: a ``ProxyDaemon`` on an ephemeral
/// loopback port, with its control API on another, a fresh CA of its own,
/// trusting the world's root upstream, routing the world's host to the origin,
/// and mounting `misissued` with the world's misissuing CA. With `http2` it
/// relays HTTP/2 when the client and the origin both offer it (`serve --http2 on`).
/// With an instant (`check --at`) its CA is made, its leaves forged and the origin's chain
/// verified as at that instant.
public final class InProcessProxy: ProxyUnderTest {
    public let daemon: ProxyDaemon
    public let address: ListenAddress
    public var kind: String { "in-process" }
    /// Nothing: the proxy is new.
    public var setupNotes: [String] { [] }
    public var caCertificate: Certificate { daemon.server.authority.certificate }
    public var misissuingCertificate: Certificate? { world.misissuingAuthority?.certificate }
    /// Where the control API listens.
    public var adminAddress: ListenAddress? { daemon.adminAddress }
    private let world: HarnessWorld

    /// Starts a proxy for `world`; `authority` defaults to a CA generated in memory (at `instant`).
    public init(world: HarnessWorld, http2: Bool = true, authority: CertificateAuthority? = nil, logger: Logger? = nil,
                instant: Date? = nil) throws {
        var configuration = ProxyConfiguration()
        configuration.http2 = http2
        configuration.fixedTime = instant
        configuration.listen = ListenAddress(host: "127.0.0.1", port: 0)
        configuration.upstreamTrust = .file(world.rootPath)
        try configuration.upstreamAddresses.set(world.host.description, to: OriginServer.address)
        configuration.eventLoops = 1
        // The device trusts this CA as a public one: the `misissued` attack signs with it.
        configuration.misissuingAuthority = world.misissuingAuthority
        var options = CertificateAuthority.Options()
        options.commonName = "pinproxy harness proxy CA - DO NOT TRUST"
        let ca = try authority ?? CertificateAuthority.create(options, now: instant ?? Date())
        let quiet = logger ?? Logger(label: "pinproxy.harness") { _ in SwiftLogNoOpLogHandler() }
        daemon = try ProxyDaemon(configuration: configuration, authority: ca,
                                 adminAddress: ListenAddress(host: "127.0.0.1", port: 0), logger: quiet)
        address = try daemon.start()
        self.world = world
    }

    public func profiles() throws -> [ProfileAvailability] {
        let configuration = daemon.server.configuration
        return configuration.catalog.profiles.map { profile in
            ProfileAvailability(profile: profile, unavailable: configuration.catalog.strategy(for: profile)?.unavailability(in: configuration))
        }
    }

    public func use(_ profile: AttackProfile, for host: HostName) throws {
        let pattern = try HostPattern(parsing: host.description)
        try daemon.server.updateRules(InterceptionRules(
            defaultProfile: .forge, rules: [InterceptionRules.Rule(pattern: pattern, profile: profile)]))
    }

    public func resolve(_ host: HostName, to address: String) throws {
        try daemon.server.configuration.upstreamAddresses.set(host.description, to: address)
    }

    public func event(clientPort: Int, since: Date, timeout: TimeInterval) -> TLSOutcomeEvent? {
        let recent = daemon.server.recorder.recent
        return waitFor(timeout: timeout) {
            recent.events.first { $0.time >= since && port(ofAddress: $0.clientAddress) == clientPort }
        }
    }

    public func events(host: String, since: Date) -> [TLSOutcomeEvent] {
        daemon.server.recorder.recent.events.filter { $0.host == host && $0.time >= since }.reversed()
    }

    public func flows(clientPort: Int) -> [Flow] {
        daemon.server.recorder.recent.flows.filter { port(ofAddress: $0.clientAddress) == clientPort }
    }

    public func close() { daemon.stop() }
}
