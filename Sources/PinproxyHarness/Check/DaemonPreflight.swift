import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

extension Harness {
    /// Before the matrix, through a running daemon: one connection to the world's origin with
    /// the `forge` profile, from a client that accepts any chain. A daemon that cannot verify
    /// the origin (it trusts the system store, and the world's root is new on every run) or
    /// cannot reach it would turn every proxied row into the same ERROR; it is said once here,
    /// with the fix, instead. An in-process proxy trusts the world's root and needs no probe;
    /// a run of the direct row alone never goes through the proxy.
    func checkDaemonReachesOrigin(scenarios: [Scenario]) throws {
        guard proxy is ControlAPIProxy, scenarios.contains(where: { $0.profile != nil }) else { return }
        let started = Date()
        try proxy.use(.forge, for: world.host)
        let anyChain = AFNetworkingPolicy(mode: .none, allowInvalidCertificates: true, validatesDomainName: false,
                                          pinnedCertificates: [], profile: .current)
        let store = world.deviceStore(userAnchors: [])
        let host = world.host
        let address = proxy.address
        let run = BuiltInClient.run(
            route: ClientRoute(host: address.host, port: address.port, connectAuthority: "\(host.uriHost):\(origin.port)"),
            serverName: host.description,
            request: BuiltInClient.request(host: host, port: origin.port, scenario: "preflight", secret: secret),
            alpn: ClientModel.applicationProtocols(http2: http2)
        ) { chain in
            ClientModel.decide(anyChain, trust: ServerTrust(presentedChain: chain, host: host, store: store))
        }
        // A daemon that wants Proxy-Authorization (serve --proxy-auth) refuses every scenario's CONNECT alike.
        if case .failed(let why) = run.outcome, why.contains("answered CONNECT with") && why.contains(" 407") {
            throw PinproxyError(.connect, "the daemon at \(address) wants proxy credentials (\(why.replacingOccurrences(of: "the proxy answered CONNECT with ", with: "").trimmingCharacters(in: ["'"]))): "
                + "check sends none; run the daemon it checks through without --proxy-auth; no scenario was run")
        }
        guard let event = proxy.event(clientPort: run.localPort, since: started, timeout: ScenarioRunner.eventTimeout),
              event.kind == .upstreamVerificationFailed || event.kind == .upstreamFailed else { return }
        throw PinproxyError(.connect, "the daemon at \(address) cannot serve the world's origin: \(ProxyObservation.upstreamHint(event)); no scenario was run")
    }
}
