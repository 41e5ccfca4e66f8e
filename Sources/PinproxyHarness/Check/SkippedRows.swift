import Foundation

extension ScenarioResult {
    /// A row the proxy cannot run here, with the reason.
    static func skipped(_ scenario: Scenario, because reason: String) -> ScenarioResult {
        ScenarioResult(
            scenario: scenario.name, deviceTrustsProxyCA: scenario.deviceTrustsProxyCA, expected: scenario.expected,
            actual: "-", status: .skipped, reason: reason, refusedAt: nil, proxyObserved: nil, originReceivedRequest: false,
            modelDependent: false, weaknesses: [], verdict: nil, clientExitStatus: nil, clientOutput: nil, milliseconds: 0,
            clientPort: nil)
    }
}

extension Harness {
    /// SKIPPED rows for the profiles the proxy knows but cannot mount here (the `misissued`
    /// attack of a daemon without a second CA), one per device-trust setting as a row that
    /// runs would have (`deviceTrust` nil: one row, an external client's flags decide).
    /// Rows, not notes: a CI report then counts them (`skipped=` in JUnit).
    func skippedRows(deviceTrust: DeviceTrust?, selected: [String]?) throws -> [ScenarioResult] {
        try proxy.profiles().flatMap { entry -> [ScenarioResult] in
            guard let why = entry.unavailable else { return [] }
            return Scenario.matrix(profiles: [entry.profile], selected: selected, deviceTrust: deviceTrust)
                .filter { $0.profile != nil }
                .map { ScenarioResult.skipped($0, because: why) }
        }
    }

    /// `results` and `skipped` in the matrix's order (each group keeps its own order); the
    /// rotation rows, which no profile's absence skips, stay after the attacks as they ran.
    static func merging(_ results: [ScenarioResult], _ skipped: [ScenarioResult]) -> [ScenarioResult] {
        let attacks = results.filter { $0.kind == .attack }
        return (attacks + skipped).enumerated().sorted { a, b in
            a.element.scenario != b.element.scenario
                ? Scenario.precedes(a.element.scenario, b.element.scenario)
                : a.offset < b.offset
        }.map(\.element) + results.filter { $0.kind != .attack }
    }
}
