import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

/// Runs one scenario with a real client command and judges it from what the
/// proxy and the origin observed of its connections, together with its exit status.
///
/// The direct row runs the command without a proxy (`{proxy}` empty, no proxy
/// variable set) and is judged by the origin alone: a request that arrived is an
/// ACCEPT; a handshake the client broke off, or a close after it without a
/// request, a refusal of the genuine server; no connection at all means the
/// command never reached the origin, an ERROR, never a refusal.
///
/// The proxy's record decides: a request through an intercepted connection
/// (`intercepted`) or to the origin behind `passthrough` is an ACCEPT, whatever the
/// command's exit status (the secret has left); an alert or a broken-off
/// handshake is a refusal in the handshake, a silent close after it a refusal
/// after it. The exit status must agree with a refusal: a command that exits 0
/// without having sent its request through the proxy is an ERROR.
///
/// A rotation row runs the same way against the rotation's own origin: `{url}`, `{port}`
/// and `{resolve}` name it, `{ca}` is the device's store for that rotation (the new root
/// instead of the old for `root-migration-new-store`), and `{pin}` stays the pin of the
/// world's original leaf, as an app shipped before the change has it. A refusal is an OUTAGE.
struct ExternalScenarioRunner {
    let harness: Harness
    let command: ClientCommand
    let proxyCAPath: String
    /// The world's public roots and the proxy CA in one bundle (`{device-ca}`).
    let deviceCAPath: String
    let timeout: TimeInterval

    /// Throws when the command cannot run at all (the shell found no such program, or
    /// could not execute it): an input error, not a row.
    func run(_ scenario: Scenario) throws -> ScenarioResult {
        let started = Date()
        let world = harness.world
        var result = ScenarioResult(
            scenario: scenario.name, deviceTrustsProxyCA: nil, expected: scenario.expected, actual: "ERROR", status: .error,
            reason: "", refusedAt: nil, proxyObserved: nil, originReceivedRequest: false, modelDependent: false, weaknesses: [],
            verdict: nil, clientExitStatus: nil, clientOutput: nil, milliseconds: 0, clientPort: nil)
        result.kind = scenario.kind
        result.route = scenario.rotation == nil ? nil : scenario.route
        let origin = harness.origin(for: scenario)
        let rotation = scenario.rotation.flatMap { name in world.rotations.first { $0.name == name } }
        let runner = ScenarioRunner(harness: harness)
        if let profile = scenario.profile {
            do { try harness.proxy.use(profile, for: world.host) } catch {
                return runner.finish(&result, error: "cannot select profile \(profile): \(ScenarioRunner.text(of: error))", started: started)
            }
        }
        // The direct row runs without a proxy: {proxy} is empty and no proxy variable is set.
        let proxyURL = scenario.profile == nil ? "" : "http://\(harness.proxy.address)"
        let firstRequest = origin.nextSequence
        let firstConnection = origin.connectionCount
        let process: ChildProcess.Result
        do {
            process = try ChildProcess.run(shell: command.filled(try values(proxy: proxyURL, origin: origin, rotation: rotation)),
                                           environment: ClientCommand.environment(proxy: proxyURL.isEmpty ? nil : proxyURL), timeout: timeout,
                                           running: harness.runningClients)
        } catch {
            return runner.finish(&result, error: ScenarioRunner.text(of: error), started: started)
        }
        result.clientExitStatus = process.status
        result.clientOutput = String(process.output.suffix(2000))
        result.originReceivedRequest = origin.requests.contains { $0.sequence >= firstRequest }
        // The shell's 127 (not found) and 126 (not executable), with nothing seen of the client anywhere.
        if [126, 127].contains(process.status) && !process.timedOut && origin.connectionCount == firstConnection
            && harness.proxy.events(host: world.host.description, since: started).isEmpty {
            let shell = process.output.split(separator: "\n").last.map(String.init) ?? "exit \(process.status)"
            throw PinproxyError(.invalidArgument, "--client cannot run: \(shell)")
        }
        let lines = process.output.split(separator: "\n")
        // The line that says what went wrong: curl's "curl: (60) ...", an exception's last line.
        let telling = lines.first { $0.contains("curl: (") || $0.contains("rror") || $0.contains("xception") } ?? lines.last
        let lastLine = telling.map { String($0.prefix(200)) } ?? "no output"
        let exitText = process.timedOut ? "timed out after \(ChildProcess.secondsText(timeout))" : "exit \(process.status)"
        guard let profile = scenario.profile else {
            return outage(judgeDirect(&result, origin: origin, process: process, firstConnection: firstConnection, lastLine: lastLine,
                                      exitText: exitText, started: started), rotation: rotation)
        }
        let host = world.host.description
        // The proxy records a refusal a moment after the client is gone. A client that timed out was
        // killed: its connections, if it had any, closed then; a short look keeps the deadline close.
        let events = harness.proxy.waitFor(timeout: process.timedOut ? ChildProcess.killGrace : 1) { () -> [TLSOutcomeEvent]? in
            let found = harness.proxy.events(host: host, since: started)
            return found.isEmpty ? nil : found
        } ?? []
        result.proxyObserved = events.isEmpty ? nil : events.map(ProxyObservation.describe).joined(separator: ", ")
        if events.isEmpty {
            if process.timedOut {
                return runner.finish(&result, error: "the client \(exitText) (--client-timeout; SIGTERM, then SIGKILL) without reaching the proxy (\(lastLine))", started: started)
            }
            return runner.finish(&result, error: "the client never reached the proxy (\(exitText): \(lastLine)); does it honour HTTPS_PROXY or {proxy}?", started: started)
        }
        let accepted: Bool
        if profile == .passthrough {
            accepted = result.originReceivedRequest
        } else {
            accepted = events.contains { $0.kind == .intercepted }
            if accepted && !result.originReceivedRequest {
                return runner.finish(&result, error: "harness error: the proxy recorded a request that never reached the origin", started: started)
            }
        }
        if accepted {
            result.actual = "ACCEPT"
            result.reason = "the client sent its request through the proxy" + (process.status == 0 ? "" : " (\(lastLine))")
        } else {
            if let failure = events.first(where: { $0.kind == .upstreamVerificationFailed || $0.kind == .upstreamFailed }) {
                return runner.finish(&result, error: "harness error: \(ProxyObservation.upstreamHint(failure))", started: started)
            }
            if process.status == 0 && !process.timedOut {
                return runner.finish(&result, error: "the command exited 0 but sent no request through the proxy (the proxy recorded \(result.proxyObserved ?? "nothing"))", started: started)
            }
            result.actual = "REJECT"
            if profile == .passthrough {
                // The proxy only tunnelled: the origin saw how the client ended its handshake.
                result.refusedAt = Self.refusal(in: origin.handshakes(from: firstConnection, timeout: 2))
            } else if events.contains(where: { ProxyObservation.definiteRefusals.contains($0.kind) }) {
                result.refusedAt = .handshake
            } else if events.contains(where: { ProxyObservation.suspectedRefusals.contains($0.kind) }) {
                result.refusedAt = .afterHandshake
            }
            let how = result.refusedAt.map { $0 == .handshake ? "refused in the handshake" : "refused after the handshake" } ?? "no request"
            result.reason = "\(how): \(process.timedOut ? exitText + "; " : "")\(lastLine)"
        }
        result.status = accepted == (scenario.expected == .accept) ? .pass : .fail
        result.milliseconds = Date().timeIntervalSince(started) * 1000
        return outage(result, rotation: rotation)
    }

    /// `result`, as an OUTAGE when it refused what must be accepted for a reason that is no
    /// fault of the policy's (see ``ScenarioRunner/outage(rotation:genuine:at:)``).
    private func outage(_ result: ScenarioResult, rotation: Rotation?) -> ScenarioResult {
        guard result.status == .fail, result.expected == .accept,
              let why = ScenarioRunner.outage(rotation: rotation, genuine: harness.world.originChain, at: harness.instant ?? Date()) else { return result }
        var changed = result
        changed.status = .outage
        changed.reason += " — OUTAGE: \(why)"
        return changed
    }

    /// Where a client refused the genuine origin, from how the origin's handshakes with it ended.
    static func refusal(in handshakes: [OriginServer.Handshake]) -> DecisionPoint? {
        if handshakes.contains(.failed) { return .handshake }
        if handshakes.contains(.completed) { return .afterHandshake }
        return nil
    }

    /// The placeholders' values for one run; `proxy` is empty in the direct row. `origin` is the
    /// scenario's; a `rotation` that changes the device's store writes that store's files.
    func values(proxy: String, origin: OriginServer, rotation: Rotation? = nil) throws -> [String: String] {
        let world = harness.world
        let port = origin.port
        let pin = world.leaf.spkiPin
        var store = world.systemStorePath
        var device = deviceCAPath
        if let rotation, rotation.replacementRoot != nil {
            let anchors = world.deviceStore(userAnchors: [], rotation: rotation).systemAnchors
            store = try world.writeBundle(anchors, as: "\(rotation.name)-system-store.pem")
            device = try world.writeBundle(anchors + [harness.proxy.caCertificate], as: "\(rotation.name)-device-ca.pem")
        }
        return [
            "{url}": "https://\(world.host.uriHost):\(port)/account", "{host}": world.host.description, "{port}": "\(port)",
            "{proxy}": proxy, "{ca}": store, "{proxy-ca}": proxyCAPath, "{device-ca}": device,
            "{pin}": pin.curl, "{pin-base64}": pin.base64,
            "{address}": OriginServer.address, "{resolve}": "\(world.host.description):\(port):\(OriginServer.address)",
        ]
    }

    /// The direct row, from the origin's record: a request, a broken-off handshake, a silent close, or nothing.
    private func judgeDirect(_ result: inout ScenarioResult, origin: OriginServer, process: ChildProcess.Result, firstConnection: Int,
                             lastLine: String, exitText: String, started: Date) -> ScenarioResult {
        let runner = ScenarioRunner(harness: harness)
        let host = harness.world.host
        if !harness.proxy.events(host: host.description, since: started).isEmpty {
            return runner.finish(&result, error: "the client went through the proxy in the direct row; it must connect straight to the origin when {proxy} is empty and no proxy variable is set", started: started)
        }
        if result.originReceivedRequest {
            result.actual = "ACCEPT"
            result.reason = "the origin answered the client's request" + (process.status == 0 ? "" : " (\(lastLine))")
        } else {
            let handshakes = origin.handshakes(from: firstConnection, timeout: 2)
            if handshakes.isEmpty && process.timedOut {
                return runner.finish(&result, error: "the client \(exitText) (--client-timeout; SIGTERM, then SIGKILL) without reaching the origin (\(lastLine))", started: started)
            }
            if handshakes.isEmpty {
                return runner.finish(&result, error: "the client never reached the origin (\(exitText): \(lastLine)); the world's origin is at \(OriginServer.address), whatever DNS says of \(host): connect to {address} or use curl's --resolve {resolve}", started: started)
            }
            if process.status == 0 && !process.timedOut {
                return runner.finish(&result, error: "the command exited 0 but sent no request to the origin", started: started)
            }
            result.actual = "REJECT"
            result.refusedAt = Self.refusal(in: handshakes)
            let how = result.refusedAt.map { $0 == .handshake ? "refused the genuine origin in the handshake" : "refused the genuine origin after the handshake" } ?? "no request"
            result.reason = "\(how): \(process.timedOut ? exitText + "; " : "")\(lastLine)"
        }
        result.status = result.actual == result.expected.rawValue ? .pass : .fail
        result.milliseconds = Date().timeIntervalSince(started) * 1000
        return result
    }
}
