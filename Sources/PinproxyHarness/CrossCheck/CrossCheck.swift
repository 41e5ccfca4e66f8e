import Foundation
import PinproxyPinning

/// What the real library did in one row of a cross-check.
public struct RealLibraryResult: Sendable, Encodable {
    /// `ACCEPT`, `REJECT` or `ERROR`.
    public var actual: String
    public var refusedAt: DecisionPoint?
    public var reason: String
    public var proxyObserved: String?
    public var clientExitStatus: Int32?
    public var clientOutput: String?

    /// The real library's row as `check --client` judged it.
    init(_ row: ScenarioResult) {
        actual = row.actual
        refusedAt = row.refusedAt
        reason = row.reason
        proxyObserved = row.proxyObserved
        clientExitStatus = row.clientExitStatus
        clientOutput = row.clientOutput
    }

    /// `ACCEPT`, `REJECT (handshake)`, `REJECT (after handshake)`.
    public var verdictText: String { CrossCheck.verdictText(actual, refusedAt) }
}

/// `check --cross-check`: every row run by the built-in emulation and by the real library,
/// side by side.
public enum CrossCheck {
    /// What a row marked as a disagreement shows in place of its result.
    public static let mismatchMark = "EMULATION≠REAL"

    /// `ACCEPT`, `REJECT (handshake)`, `REJECT (after handshake)`: a verdict and its moment.
    public static func verdictText(_ actual: String, _ refusedAt: DecisionPoint?) -> String {
        switch refusedAt {
        case .handshake?: return actual + " (handshake)"
        case .afterHandshake?: return actual + " (after handshake)"
        case nil: return actual
        }
    }

    /// One row from the emulation's run and the real library's. The emulation's row keeps its
    /// verdict and reason and gains the real one. They agree when both accepted, or both
    /// refused at the same moment (a moment the harness could not tell is no disagreement):
    /// the row then passes or fails on the emulation's verdict, which is the library's.
    /// Otherwise the row fails as ``mismatchMark``. A row either side could not judge is an
    /// ERROR: nothing was compared.
    static func merge(emulated: ScenarioResult, real: ScenarioResult, library: String) -> ScenarioResult {
        var row = emulated
        row.real = RealLibraryResult(real)
        row.clientExitStatus = nil
        guard emulated.status != .error else { return row }
        guard real.status != .error else {
            row.status = .error
            row.reason = "\(library) could not be judged: \(real.reason) (the emulation said \(emulated.verdictText): \(emulated.reason))"
            return row
        }
        let sameMoment = emulated.refusedAt == nil || real.refusedAt == nil || emulated.refusedAt == real.refusedAt
        let agree = emulated.actual == real.actual && sameMoment
        row.emulationMatchesReal = agree
        if !agree {
            row.status = .fail
            row.reason = "\(mismatchMark): the emulation says \(emulated.verdictText), \(library) \(real.verdictText) — emulation: \(emulated.reason)"
        }
        return row
    }
}

extension ScenarioResult {
    /// The emulation's verdict and its moment, as the cross-check table shows it.
    public var verdictText: String { CrossCheck.verdictText(actual, refusedAt) }
}

extension Harness {
    /// Runs every scenario with the built-in `emulation` and, right after it, with the `real`
    /// library configured from the same policy; each row shows both verdicts. A row where
    /// they differ fails (``CrossCheck/mismatchMark``), so the report's exit status is 1.
    /// When no real library runs the policy here, the emulation runs alone and the first
    /// note says why. `kinds`: the rows to run (`check --scenarios`), as
    /// ``check(_:named:deviceTrust:selected:kinds:announce:)`` takes them. `timeout`: seconds
    /// each run of the real library may take. `announce` gets the notes that concern every row
    /// before the first row runs (that no real library runs here, what the library's version
    /// reads otherwise, that nothing is pinned for the host); the report carries them too.
    public func crossCheck(_ emulation: any PinningPolicy, real: RealLibraryAvailability, named name: String? = nil,
                           deviceTrust: DeviceTrust = .both, selected: [String]? = nil, kinds: ScenarioSelection = .attacks,
                           timeout: TimeInterval = 60,
                           announce: (String) -> Void = { _ in }) throws -> CheckReport {
        let runner: any RealLibraryRunner
        switch real {
        case .unavailable(let why):
            let note = "cross-check: \(why)"
            announce(note)
            var report = try check(emulation, named: name, deviceTrust: deviceTrust, selected: selected, kinds: kinds, announce: announce)
            report.notes.insert(note, at: 0)
            return report
        case .available(let available):
            runner = available
        }
        let (compared, platformNote) = runner.emulation(of: emulation)
        let started = Date()
        var (scenarios, notes) = try self.scenarios(deviceTrust: deviceTrust, selected: selected, kinds: kinds)
        var upfront = (platformNote.map { [$0] } ?? []) + runner.notes
        upfront += PolicyCoverage.notes(compared, world: world)
        upfront.forEach(announce)
        notes.insert(contentsOf: upfront, at: 0)
        var realRunners: [Bool: ExternalScenarioRunner] = [:]
        for trusts in Set(scenarios.map { $0.deviceTrustsProxyCA ?? false }) {
            realRunners[trusts] = try externalRunner(try runner.command(deviceTrustsProxyCA: trusts, in: self), timeout: timeout)
        }
        let run = UUID().uuidString.prefix(8).lowercased()
        // An interruption kills the real client: the row it was running is no finding.
        let results = try rows(scenarios, keepingTheRowInterrupted: false) { index, scenario in
            let marker = "\(run)-\(index + 1)-\(scenario.name)-\(scenario.deviceTrustsProxyCA == true ? "ca" : "noca")"
            let emulated = ScenarioRunner(harness: self).run(scenario, policy: compared, marker: marker)
            let realRow = try realRunners[scenario.deviceTrustsProxyCA ?? false]!.run(scenario)
            return CrossCheck.merge(emulated: emulated, real: realRow, library: runner.name)
        }
        var report = CheckReport(
            policy: name ?? "\(compared.family) (\(compared.profile))", family: compared.family.rawValue, profile: compared.profile,
            host: world.host.description, client: "built-in \(compared.family) emulation and \(runner.name)", proxy: proxyDescription,
            http2: http2, results: results, notes: notes, elapsedSeconds: Date().timeIntervalSince(started))
        report.realLibrary = runner.name
        report.pinsNameNoWorldCertificate = PolicyCoverage.pinsNameNoWorldCertificate(compared, world: world.policyWorld)
        return try finish(report, of: scenarios)
    }
}
