import Foundation
import PinproxyCertificates
import PinproxyProxy

/// Runs one scenario with a real client command and judges it from what the
/// proxy and the origin observed of its connections, together with its exit status.
///
/// The proxy's record decides: a request through an intercepted connection
/// (`intercepted`) or to the origin behind `passthrough` is an ACCEPT, whatever the
/// command's exit status (the secret has left); an alert or a broken-off
/// handshake is a refusal in the handshake, a silent close after it a refusal
/// after it. The exit status must agree with a refusal: a command that exits 0
/// without having sent its request through the proxy is an ERROR.
struct ExternalScenarioRunner {
    let harness: Harness
    let command: ClientCommand
    let proxyCAPath: String
    let timeout: TimeInterval

    func run(_ scenario: Scenario) -> ScenarioResult {
        let started = Date()
        let world = harness.world
        var result = ScenarioResult(
            scenario: scenario.name, deviceTrustsProxyCA: nil, expected: scenario.expected, actual: "ERROR", status: .error,
            reason: "", refusedAt: nil, proxyObserved: nil, originReceivedRequest: false, modelDependent: false, weaknesses: [],
            verdict: nil, clientExitStatus: nil, clientOutput: nil, milliseconds: 0, clientPort: nil)
        let runner = ScenarioRunner(harness: harness)
        guard let profile = scenario.profile else {
            return runner.finish(&result, error: "an external client runs through the proxy only", started: started)
        }
        do { try harness.proxy.use(profile, for: world.host) } catch {
            return runner.finish(&result, error: "cannot select profile \(profile): \(ScenarioRunner.text(of: error))", started: started)
        }
        let proxyURL = "http://\(harness.proxy.address)"
        let port = harness.origin.port
        let pin = world.leaf.spkiPin
        let values = [
            "{url}": "https://\(world.host.uriHost):\(port)/account", "{host}": world.host.description, "{port}": "\(port)",
            "{proxy}": proxyURL, "{ca}": world.systemStorePath, "{proxy-ca}": proxyCAPath,
            "{pin}": pin.curl, "{pin-base64}": pin.base64,
        ]
        let firstRequest = harness.origin.nextSequence
        let process: ChildProcess.Result
        do {
            process = try ChildProcess.run(shell: command.filled(values), environment: ClientCommand.environment(proxy: proxyURL), timeout: timeout)
        } catch {
            return runner.finish(&result, error: ScenarioRunner.text(of: error), started: started)
        }
        result.clientExitStatus = process.status
        result.clientOutput = String(process.output.suffix(2000))
        let host = world.host.description
        // The proxy records a refusal a moment after the client is gone.
        let events = harness.proxy.waitFor(timeout: 1) { () -> [TLSOutcomeEvent]? in
            let found = harness.proxy.events(host: host, since: started)
            return found.isEmpty ? nil : found
        } ?? []
        result.proxyObserved = events.isEmpty ? nil : events.map(ProxyObservation.describe).joined(separator: ", ")
        result.originReceivedRequest = harness.origin.requests.contains { $0.sequence >= firstRequest }
        let lines = process.output.split(separator: "\n")
        // The line that says what went wrong: curl's "curl: (60) ...", an exception's last line.
        let telling = lines.first { $0.contains("curl: (") || $0.contains("rror") || $0.contains("xception") } ?? lines.last
        let lastLine = telling.map { String($0.prefix(200)) } ?? "no output"
        let exitText = process.timedOut ? "timed out after \(Int(timeout)) s" : "exit \(process.status)"
        if events.isEmpty {
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
            if process.status == 0 && !process.timedOut {
                return runner.finish(&result, error: "the command exited 0 but sent no request through the proxy (the proxy recorded \(result.proxyObserved ?? "nothing"))", started: started)
            }
            result.actual = "REJECT"
            if events.contains(where: { ProxyObservation.definiteRefusals.contains($0.kind) }) {
                result.refusedAt = .handshake
            } else if events.contains(where: { ProxyObservation.suspectedRefusals.contains($0.kind) }) {
                result.refusedAt = .afterHandshake
            }
            let how = result.refusedAt.map { $0 == .handshake ? "refused in the handshake" : "refused after the handshake" } ?? "no request"
            result.reason = "\(how): \(process.timedOut ? exitText + "; " : "")\(lastLine)"
        }
        result.status = accepted == (scenario.expected == .accept) ? .pass : .fail
        result.milliseconds = Date().timeIntervalSince(started) * 1000
        return result
    }
}
