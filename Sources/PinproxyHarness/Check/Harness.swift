import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

/// A world, its genuine origin and a proxy, ready to check policies through live TLS.
///
/// ```swift
/// let harness = try Harness.start(host: "api.example.com")
/// defer { harness.stop() }
/// let policy = try harness.loadPolicy(contentsOf: "okhttp.json")
/// let report = try harness.check(policy)
/// ```
public final class Harness: Sendable {
    public let world: HarnessWorld
    public let origin: OriginServer
    public let proxy: any ProxyUnderTest
    /// One origin per rotation of the world's chain, by rotation name, each serving the
    /// rotated chain on its own port (the proxy's `passthrough` reaches it by that port).
    let rotationOrigins: [String: OriginServer]
    /// The instant every policy evaluates at (`check --at`); nil: the time of each evaluation.
    public let instant: Date?

    /// What setting up changed, for every report: the world adopted the proxy's misissuing CA,
    /// leftovers of a killed check were removed from the daemon.
    /// Notes from setting the world up, each with the profile it concerns (nil: every run).
    private let setupNotes: [(profile: String?, text: String)]
    /// The fake secret every accepted request carries, as an interceptor would read it.
    public let secret: String
    /// Whether the built-in client offers `h2` (the emulated libraries do) besides `http/1.1`.
    public let http2: Bool
    /// The process groups of the external clients running now.
    let runningClients = Locked<Set<pid_t>>([])
    private let interrupted = Locked(false)
    /// Held while stopping, so a second ``stop()`` waits for the first and then does nothing.
    private let stopped = Locked(false)
    /// Told before each row runs: its number from 1, how many rows, and the row (``onRowStarting(_:)``).
    private let rowStarting = Locked<(@Sendable (Int, Int, Scenario) -> Void)?>(nil)

    /// Checks through `proxy` in `world`. When the proxy's `misissued` CA is not the world's
    /// misissuer (a running daemon holds its own key), the world adopts that CA's certificate:
    /// the device trusts it and `world:misissuer` names it, so the row means what it says.
    /// `http2`: the built-in client offers `h2, http/1.1` by ALPN, else `http/1.1` alone
    /// (whether the proxy relays HTTP/2 is its own setting: ``InProcessProxy/init(world:http2:authority:logger:)``).
    /// `instant`: evaluate every policy at that time instead of now (`check --at`; the world
    /// and an in-process proxy should issue their certificates around it too).
    public init(world: HarnessWorld, proxy: any ProxyUnderTest, http2: Bool = true, instant: Date? = nil) throws {
        var world = world
        var notes: [(profile: String?, text: String)] = []
        if let daemonCA = proxy.misissuingCertificate, daemonCA != world.misissuer {
            world = try world.adopting(misissuer: daemonCA)
            notes.append((AttackProfile.misissued.name, "world:misissuer is the proxy's misissuing CA (\(daemonCA.subject)), which the device trusts as a public CA"))
        }
        notes += proxy.setupNotes.map { (nil, $0) }
        setupNotes = notes
        self.world = world
        let origin = try OriginServer(host: world.host, chain: world.originChain, key: world.originKey)
        self.origin = origin
        self.proxy = proxy
        self.secret = "fake-secret-\(UUID().uuidString.prefix(8).lowercased())"
        self.http2 = http2
        self.instant = instant
        var rotationOrigins: [String: OriginServer] = [:]
        do {
            for rotation in world.rotations {
                rotationOrigins[rotation.name] = try OriginServer(host: world.host, chain: rotation.chain, key: rotation.key)
            }
            // Clients name the world's host; the proxy connects to the origin's address, never asking DNS.
            try proxy.resolve(world.host, to: OriginServer.address)
        } catch {
            origin.stop()
            rotationOrigins.values.forEach { $0.stop() }
            throw error
        }
        self.rotationOrigins = rotationOrigins
    }

    /// The default world host: under a public suffix, as TrustKit requires of a pinned domain.
    public static let defaultHost = "api.example.com"

    /// Generates a world for `host` and starts its origin and an in-process proxy; with
    /// `http2` the client offers `h2` and the proxy relays it, without it both keep to HTTP/1.1.
    /// With `instant` (`check --at`) the world and the proxy issue their certificates around it
    /// and every policy evaluates at it.
    public static func start(host: String = defaultHost, http2: Bool = true, at instant: Date? = nil) throws -> Harness {
        let world = try HarnessWorld.generate(host: try HostName(validating: host), now: instant ?? Date())
        do {
            return try Harness(world: world, proxy: try InProcessProxy(world: world, http2: http2, instant: instant),
                               http2: http2, instant: instant)
        } catch {
            world.removeFiles()
            throw error
        }
    }

    /// Reads a policy file in which `world:leaf`, `world:intermediate`, `world:root`
    /// and `world:misissuer` name this world's certificates.
    public func loadPolicy(contentsOf path: String) throws -> any PinningPolicy {
        try PolicyFile.load(contentsOf: path, world: world.policyWorld)
    }

    /// The scenarios of the `kinds` asked for (the attack rows unless told; `check --scenarios`
    /// defaults to all): every profile the proxy knows and every rotation of the world (or the
    /// `selected` names), and notes on what cannot run here.
    public func scenarios(deviceTrust: DeviceTrust = .both, selected: [String]? = nil,
                          kinds: ScenarioSelection = .attacks) throws -> (scenarios: [Scenario], notes: [String]) {
        // A daemon's rotate-… profiles show its team's own CA; the world rotates its own chain.
        let known = try proxy.profiles().filter { !$0.profile.isRotation }
        if let selected {
            let names = [Scenario.directName] + known.map(\.profile.name) + Rotation.names
            if let unknown = selected.first(where: { !names.contains($0) }) {
                throw PinproxyError(.invalidArgument, "--profiles names '\(unknown)'\(NearestName.hint(for: unknown, among: names)), which is neither a profile nor a scenario; known: \(names.joined(separator: ", "))")
            }
            // A name of the kind left out would silently run nothing for it (an empty check passes).
            if let excluded = selected.first(where: { !kinds.includes(Rotation.names.contains($0) ? .rotation : .attack) }) {
                let kind = Rotation.names.contains(excluded) ? "a rotation" : "an attack row"
                throw PinproxyError(.invalidArgument, "--profiles names '\(excluded)', \(kind), which --scenarios \(kinds.rawValue) leaves out; drop it or give --scenarios all")
            }
        }
        // Notes only about what this run was asked for: a profile left out needs no word.
        func wanted(_ profile: String?) -> Bool { profile.map { name in selected?.contains(name) ?? true } ?? true }
        // A profile the proxy cannot mount is a SKIPPED row with its reason (``skippedRows``), not a note.
        let notes = setupNotes.filter { wanted($0.profile) }.map(\.text)
        let usable = known.filter { $0.unavailable == nil }.map(\.profile)
        var scenarios = kinds.includes(.attack) ? Scenario.matrix(profiles: usable, selected: selected, deviceTrust: deviceTrust) : []
        var allNotes = kinds.includes(.attack) ? notes : []
        if kinds.includes(.rotation) {
            scenarios += Scenario.rotationRows(world.rotations.map(\.name), selected: selected)
            if world.rotations.isEmpty && (selected?.contains { Rotation.names.contains($0) } ?? true) {
                allNotes.append("no rotation rows: rotating the chain takes its CA keys, which only a generated world has (\(world.source) brings the leaf's key alone)")
            }
        }
        return (scenarios, allNotes)
    }

    /// Runs every scenario of `kinds` for `policy` with the built-in client. `announce` gets the
    /// notes that concern every row (the policy pins nothing for the world's host) before the
    /// first row runs; the report carries them too.
    public func check(_ policy: any PinningPolicy, named name: String? = nil, deviceTrust: DeviceTrust = .both,
                      selected: [String]? = nil, kinds: ScenarioSelection = .attacks,
                      announce: (String) -> Void = { _ in }) throws -> CheckReport {
        let started = Date()
        var (scenarios, notes) = try self.scenarios(deviceTrust: deviceTrust, selected: selected, kinds: kinds)
        let upfront = PolicyCoverage.notes(policy, world: world)
        upfront.forEach(announce)
        notes.insert(contentsOf: upfront, at: 0)
        try checkDaemonReachesOrigin(scenarios: scenarios)
        // Markers are unique per run: the origin keeps every request it answered.
        let run = UUID().uuidString.prefix(8).lowercased()
        // The built-in client is not stopped by an interruption: the row it was running is a finding.
        let results = try rows(scenarios, keepingTheRowInterrupted: true) { index, scenario in
            ScenarioRunner(harness: self).run(scenario, policy: policy, marker: "\(run)-\(index + 1)-\(scenario.name)-\(scenario.deviceTrustsProxyCA == true ? "ca" : "noca")")
        }
        let matrix = isInterrupted || !kinds.includes(.attack) ? results : Self.merging(results, try skippedRows(deviceTrust: deviceTrust, selected: selected))
        var report = CheckReport(
            policy: name ?? "\(policy.family) (\(policy.profile))", family: policy.family.rawValue, profile: policy.profile,
            host: world.host.description, client: "built-in \(policy.family) emulation", proxy: proxyDescription,
            http2: http2, results: matrix, notes: notes, elapsedSeconds: Date().timeIntervalSince(started))
        report.pinsNameNoWorldCertificate = PolicyCoverage.pinsNameNoWorldCertificate(policy, world: world.policyWorld)
        return try finish(report, of: scenarios)
    }

    /// Runs `row` for each scenario until the check is interrupted. The row running when it was
    /// is kept only with `keepingTheRowInterrupted`: an external client is killed by the
    /// interruption, and what that leaves is no finding about the client.
    func rows(_ scenarios: [Scenario], keepingTheRowInterrupted: Bool,
                      _ row: (Int, Scenario) throws -> ScenarioResult) throws -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        let starting = rowStarting.withLock { $0 }
        for (index, scenario) in scenarios.enumerated() {
            if isInterrupted { break }
            starting?(index + 1, scenarios.count, scenario)
            let result = try row(index, scenario)
            if isInterrupted && !keepingTheRowInterrupted { break }
            results.append(result)
        }
        return results
    }

    /// `report`, or when the check was interrupted, ``CheckInterrupted`` carrying it as the
    /// rows finished so far out of `scenarios`.
    func finish(_ report: CheckReport, of scenarios: [Scenario]) throws -> CheckReport {
        guard isInterrupted else { return report }
        var partial = report
        partial.plannedScenarios = scenarios.count
        throw CheckInterrupted(partial: partial)
    }

    /// Runs `client` once per scenario (direct, then every profile, or the `selected` ones) instead of
    /// the built-in client. The direct row needs a command that names `{resolve}` or `{address}`:
    /// the harness never asks DNS for the world's host.
    public func check(client: ClientCommand, named name: String? = nil, selected: [String]? = nil,
                      kinds: ScenarioSelection = .attacks, timeout: TimeInterval = 20) throws -> CheckReport {
        let started = Date()
        var (scenarios, notes) = try self.scenarios(deviceTrust: .both, selected: selected, kinds: kinds)
        var seen = Set<String>()
        scenarios = scenarios.filter { seen.insert("\($0.name) \($0.route)").inserted }.map { scenario in
            var external = scenario
            external.deviceTrustsProxyCA = nil
            return external
        }
        if !client.reachesOriginDirectly && scenarios.contains(where: { $0.profile == nil }) {
            if selected != nil {
                throw PinproxyError(.invalidArgument, "the direct row needs a command that names {resolve} or {address}: the world's origin is at \(OriginServer.address), not where DNS may send \(world.host) (curl: add --resolve {resolve})")
            }
            scenarios.removeAll { $0.profile == nil }
            notes.append("no direct row: the command names neither {resolve} nor {address}, so without the proxy it could reach \(world.host) only through DNS, which the harness does not control (curl: add --resolve {resolve})")
        }
        if !client.namesWorldRoots {
            notes.append("the command names neither {ca} nor {device-ca}: the world's public roots are in no trust store it is given, so a client that verifies refuses the genuine origin as well (curl: add --cacert {ca})")
        }
        try checkDaemonReachesOrigin(scenarios: scenarios)
        let runner = try externalRunner(client, timeout: timeout)
        let results = try rows(scenarios, keepingTheRowInterrupted: false) { _, scenario in try runner.run(scenario) }
        let all = isInterrupted || !kinds.includes(.attack) ? results : Self.merging(results, try skippedRows(deviceTrust: nil, selected: selected))
        return try finish(CheckReport(
            policy: name ?? client.template, family: "external", profile: "command", host: world.host.description,
            client: client.template, proxy: proxyDescription, http2: http2, results: all, notes: notes,
            elapsedSeconds: Date().timeIntervalSince(started)), of: scenarios)
    }

    /// Runs `client` per scenario, with the world's `{proxy-ca}` and `{device-ca}` written for it.
    func externalRunner(_ client: ClientCommand, timeout: TimeInterval) throws -> ExternalScenarioRunner {
        let proxyCA = try world.write(proxy.caCertificate, as: "proxy-ca.pem")
        // Every public root of the device's store ({ca}, the second public CA of ca-switch among
        // them) and the proxy CA.
        let deviceCA = try world.writeBundle(world.deviceStore(userAnchors: []).systemAnchors + [proxy.caCertificate], as: "device-ca.pem")
        return ExternalScenarioRunner(harness: self, command: client, proxyCAPath: proxyCA, deviceCAPath: deviceCA, timeout: timeout)
    }

    /// Runs one scenario for `policy` with the built-in client.
    public func run(_ scenario: Scenario, policy: any PinningPolicy) -> ScenarioResult {
        ScenarioRunner(harness: self).run(scenario, policy: policy, marker: "\(UUID().uuidString.prefix(8).lowercased())-\(scenario.name)")
    }

    /// The origin a scenario reaches: the rotation's, or the genuine origin.
    func origin(for scenario: Scenario) -> OriginServer {
        scenario.rotation.flatMap { rotationOrigins[$0] } ?? origin
    }

    /// What the proxy recorded of the request of the scenario's client, when it saw one:
    /// the URL and the secret it carried, as an interceptor reads them.
    public func interceptedRequest(of result: ScenarioResult) -> (url: String, authorization: String?)? {
        guard let port = result.clientPort, let flow = proxy.flows(clientPort: port).first else { return nil }
        let authorization = flow.request.headers.first { $0.name.lowercased() == "authorization" }?.value
        return (flow.request.url, authorization)
    }

    /// `in-process 127.0.0.1:40123` or the daemon's address.
    public var proxyDescription: String {
        "\(proxy.kind) \(proxy.address)"
    }

    /// Stops a check running on another thread (a signal handler's call): ends the external
    /// client running now, and the check throws ``CheckInterrupted``, with the rows finished so
    /// far, before its next scenario instead of returning a report. Returns whether the check
    /// had been interrupted already.
    @discardableResult
    public func interrupt() -> Bool {
        let before = interrupted.withLock { state in
            defer { state = true }
            return state
        }
        for group in runningClients.withLock({ $0 }) { kill(-group, SIGKILL) }
        return before
    }

    private var isInterrupted: Bool { interrupted.withLock { $0 } }

    /// Calls `report` before each row of the checks that follow, with the row's number from 1,
    /// the number of rows and the row: what `pinproxy check` shows on a terminal while a slow
    /// row (a real client, a JVM) runs.
    public func onRowStarting(_ report: @escaping @Sendable (_ number: Int, _ count: Int, _ scenario: Scenario) -> Void) {
        rowStarting.withLock { $0 = report }
    }

    /// Stops the origin and the proxy (restoring a daemon's rules and resolve map) and deletes
    /// the world's files; the first call does it, later ones return once it is done.
    public func stop() {
        stopped.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            for group in runningClients.withLock({ $0 }) { kill(-group, SIGKILL) }
            proxy.close()
            origin.stop()
            rotationOrigins.values.forEach { $0.stop() }
            world.removeFiles()
        }
    }
}

/// Thrown by a check that ``Harness/interrupt()`` stopped.
public struct CheckInterrupted: Error, CustomStringConvertible {
    /// The rows finished before the interruption, with ``CheckReport/plannedScenarios`` set.
    public let partial: CheckReport

    public var description: String { "the check was interrupted after \(partial.results.count) of \(partial.plannedScenarios ?? 0) scenarios" }
}
