import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

/// Runs one scenario with the built-in client and judges it: the client's
/// decision against the expectation, cross-checked with what the proxy and
/// the origin saw of that very connection.
struct ScenarioRunner {
    let harness: Harness

    /// How long the proxy may take to record a connection's outcome after the client is done.
    static let eventTimeout: TimeInterval = 3

    func run(_ scenario: Scenario, policy: any PinningPolicy, marker: String) -> ScenarioResult {
        let started = Date()
        let world = harness.world
        var result = ScenarioResult(
            scenario: scenario.name, deviceTrustsProxyCA: scenario.deviceTrustsProxyCA, expected: scenario.expected,
            actual: "ERROR", status: .error, reason: "", refusedAt: nil, proxyObserved: nil, originReceivedRequest: false,
            modelDependent: false, weaknesses: [], verdict: nil, clientExitStatus: nil, clientOutput: nil, milliseconds: 0,
            clientPort: nil)
        result.kind = scenario.kind
        result.route = scenario.rotation == nil ? nil : scenario.route
        let origin = harness.origin(for: scenario)
        let rotation = scenario.rotation.flatMap { name in world.rotations.first { $0.name == name } }
        let time = harness.instant ?? Date()

        let route: ClientRoute
        if let profile = scenario.profile {
            do { try harness.proxy.use(profile, for: world.host) } catch {
                return finish(&result, error: "cannot select profile \(profile): \(Self.text(of: error))", started: started)
            }
            let address = harness.proxy.address
            route = ClientRoute(host: address.host, port: address.port,
                                connectAuthority: "\(world.host.uriHost):\(origin.port)")
        } else {
            route = ClientRoute(host: OriginServer.address, port: origin.port)
        }
        let store = world.deviceStore(userAnchors: scenario.userAnchors(proxyCA: harness.proxy.caCertificate), rotation: rotation)
        let host = world.host
        let run = BuiltInClient.run(
            route: route, serverName: host.description,
            request: BuiltInClient.request(host: host, port: origin.port, scenario: marker, secret: harness.secret),
            alpn: ClientModel.applicationProtocols(http2: harness.http2)
        ) { chain in
            ClientModel.decide(policy, trust: ServerTrust(presentedChain: chain, host: host, time: time, store: store))
        }
        result.clientPort = run.localPort
        result.applicationProtocol = run.alpn
        if let decision = run.decision {
            result.verdict = decision.verdict
            result.weaknesses = decision.verdict.weaknesses.map(\.name)
            let basic = TrustEvaluator.evaluate(run.presented, policy: .basicX509(platform: .apple), at: time, anchors: .device(store))
            result.modelDependent = VerdictSummary.isModelDependent(decision.verdict, presentedChainIsValid: basic.isValid)
            result.reason = VerdictSummary.reason(decision.verdict)
        }

        let behaviour: ClientBehaviour
        switch run.outcome {
        case .failed(let why):
            let observed = scenario.profile.flatMap { _ in harness.proxy.event(clientPort: run.localPort, since: started, timeout: 0.2) }
            result.proxyObserved = observed.map(ProxyObservation.describe)
            let hint = observed.map { "; the proxy recorded \(ProxyObservation.describe($0))\($0.reason.map { ": \($0)" } ?? "")" } ?? ""
            return finish(&result, error: "the connection failed: \(why)\(hint)", started: started)
        case .responded(let status, let body):
            guard status == 200, body == origin.greeting else {
                return finish(&result, error: "the client accepted, but the answer was HTTP \(status), not the origin's (\(body.prefix(120).trimmingCharacters(in: .whitespacesAndNewlines)))", started: started)
            }
            behaviour = .requested
            result.actual = run.decision?.verdict.decision == .reportOnly ? "REPORT-ONLY" : "ACCEPT"
        case .refusedInHandshake:
            behaviour = .refusedInHandshake
            result.actual = "REJECT"
            result.refusedAt = .handshake
        case .closedAfterHandshake:
            behaviour = .closedAfterHandshake
            result.actual = "REJECT"
            result.refusedAt = .afterHandshake
        }

        // The origin must have the request exactly when the client sent it.
        result.originReceivedRequest = origin.received(scenario: marker)
        if result.originReceivedRequest != (behaviour == .requested) {
            return finish(&result, error: "harness error: the client \(behaviour.text), but the origin \(result.originReceivedRequest ? "received" : "did not receive") its request", started: started)
        }
        if let profile = scenario.profile {
            let event = harness.proxy.event(clientPort: run.localPort, since: started, timeout: Self.eventTimeout)
            result.proxyObserved = event.map(ProxyObservation.describe)
            if let mismatch = ProxyObservation.mismatch(behaviour, event: event, passthrough: profile == .passthrough) {
                return finish(&result, error: "harness error: \(mismatch)", started: started)
            }
        }
        let accepted = behaviour == .requested
        result.status = accepted == (scenario.expected == .accept) ? .pass : .fail
        result.reason = Self.timing(behaviour) + result.reason
        if !accepted && scenario.expected == .accept,
           let outage = Self.outage(rotation: rotation, genuine: world.originChain, at: time, verdict: result.verdict, world: world.policyWorld,
                                    foreignPins: PolicyCoverage.pinsNameNoWorldCertificate(policy, world: world.policyWorld)) {
            result.status = .outage
            result.reason += " — OUTAGE: \(outage)"
        }
        result.milliseconds = Date().timeIntervalSince(started) * 1000
        return result
    }

    /// Why refusing the genuine server is an outage rather than a failure, with the fix: a
    /// rotation (a legitimate change), or a genuine chain that is not valid at the evaluation
    /// time (`check --at` past its leaf's notAfter). Nil: refusing it is the policy's fault.
    /// `verdict`: the built-in client's, to name the pins the rotation broke (``OutageCause``).
    /// `foreignPins`: the policy's pins name no certificate of the world (``OutageCause/foreignPinsFix``).
    static func outage(rotation: Rotation?, genuine chain: [Certificate], at time: Date,
                       verdict: Verdict? = nil, world: PolicyWorld? = nil, foreignPins: Bool = false) -> String? {
        if let rotation, let genuineLeaf = chain.first {
            return OutageCause.text(rotation: rotation, verdict: verdict, world: world ?? PolicyWorld(certificates: [:], origin: ""),
                                    genuineLeaf: genuineLeaf, foreignPins: foreignPins)
        }
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withFullDate]
        if let stale = chain.first(where: { $0.notAfter < time }) {  // valid through its notAfter second (RFC 5280 §4.1.2.5)
            return "the genuine certificate \(stale.subject) expired on \(iso.string(from: stale.notAfter)); every client refuses it: renew it"
        }
        if let early = chain.first(where: { $0.notBefore > time }) {
            return "the genuine certificate \(early.subject) is not valid before \(iso.string(from: early.notBefore)); every client refuses it then"
        }
        return nil
    }

    /// How the client acted, as the start of the reason.
    static func timing(_ behaviour: ClientBehaviour) -> String {
        switch behaviour {
        case .requested: return ""
        case .refusedInHandshake: return "refused in the handshake (alert sent) — "
        case .closedAfterHandshake: return "refused after the handshake (closed without a request) — "
        }
    }

    func finish(_ result: inout ScenarioResult, error: String, started: Date) -> ScenarioResult {
        result.status = .error
        result.actual = "ERROR"
        result.reason = error + (result.reason.isEmpty ? "" : " (the policy said: \(result.reason))")
        result.milliseconds = Date().timeIntervalSince(started) * 1000
        return result
    }

    static func text(of error: any Error) -> String {
        (error as? PinproxyError)?.reason ?? "\(error)"
    }
}
