import Foundation
import PinproxyPinning

/// The outcome of one scenario: what was expected, what the client did, and why.
public struct ScenarioResult: Sendable, Encodable {
    public enum Status: String, Sendable, Encodable {
        /// The client did what a correct policy does.
        case pass = "PASS"
        /// The policy accepted an attack or refused the genuine server.
        case fail = "FAIL"
        /// The harness could not reach a trustworthy verdict (a connection failed,
        /// or the proxy's observation contradicts the client): neither pass nor fail.
        case error = "ERROR"
        /// The proxy cannot mount this scenario here (the `misissued` attack of a daemon without
        /// a second CA): not run, so neither pass nor fail; the reason says why.
        case skipped = "SKIPPED"
        /// The policy refused a legitimate change of the genuine chain (a rotation row),
        /// or the genuine chain itself for want of a renewal: the app goes offline. Not a
        /// security failure; it fails the run only when asked (`check --fail-on-outage`).
        case outage = "OUTAGE"
    }

    /// `direct`, `passthrough`, the attack profile, or the rotation.
    public var scenario: String
    /// `attack` (with the direct and passthrough baselines) or `rotation`.
    public var kind: ScenarioKind = .attack
    /// A rotation row's way to the origin: `direct` or `passthrough`; nil in attack rows.
    public var route: String? = nil
    /// Nil in real-client mode, where the command's own flags decide what it trusts.
    public var deviceTrustsProxyCA: Bool?
    public var expected: Expectation
    /// `ACCEPT`, `REJECT`, `REPORT-ONLY` (the client went on), or `ERROR`.
    public var actual: String
    public var status: Status
    /// Which step decided, which pin matched where, the weakness reproduced; or what went wrong.
    public var reason: String
    /// Where the client refused, when it did.
    public var refusedAt: DecisionPoint?
    /// What the proxy recorded for the connection (`intercepted`, `client-alert (bad_certificate)`, ...).
    public var proxyObserved: String?
    /// Whether the origin received the client's request.
    public var originReceivedRequest: Bool
    /// The verdict depends on the documented built-chain model (see docs/policies.md).
    public var modelDependent: Bool
    /// Names of the weaknesses the verdict reproduces (`CVE-2016-2402`, ...).
    public var weaknesses: [String]
    /// The policy's full verdict, when the client received a chain.
    public var verdict: Verdict?
    /// Real-client mode: the command's exit status and its output (trimmed).
    public var clientExitStatus: Int32?
    public var clientOutput: String?
    public var milliseconds: Double
    /// The client's local port, by which the proxy's records name the connection.
    public var clientPort: Int?
    /// The protocol the built-in client's server chose by ALPN (`h2`, `http/1.1`; JSON
    /// `protocol`): the origin's in the direct and passthrough rows, the proxy's otherwise.
    /// Nil when none was chosen, or the handshake failed before the choice (TLS 1.2) or in
    /// real-client mode.
    public var applicationProtocol: String? = nil
    /// `check --cross-check`: what the real library did in the same row.
    public var real: RealLibraryResult? = nil
    /// `check --cross-check`: whether the emulation and the real library reached the same
    /// verdict at the same moment; nil when the row was not compared.
    public var emulationMatchesReal: Bool? = nil

    /// "yes" / "no" ("-" in real-client mode), as the table shows the device-trust column.
    public var deviceTrustText: String { deviceTrustsProxyCA.map { $0 ? "yes" : "no" } ?? "-" }

    /// `forge, proxy CA installed`: the scenario and its device-trust setting, for test names;
    /// `re-key, passthrough` for a rotation row.
    public var title: String {
        if let route { return "\(scenario), \(route)" }
        guard let trusts = deviceTrustsProxyCA else { return scenario }
        return "\(scenario), proxy CA \(trusts ? "installed" : "not installed")"
    }

    private enum CodingKeys: String, CodingKey {
        case scenario, kind, route, deviceTrustsProxyCA, expected, actual, status, reason, refusedAt, proxyObserved
        case originReceivedRequest, modelDependent, weaknesses, verdict, clientExitStatus, clientOutput, milliseconds
        case applicationProtocol = "protocol"
        case real, emulationMatchesReal
    }
}

/// Everything one `check` run found.
public struct CheckReport: Sendable, Encodable {
    /// The policy file (or a description of the policy).
    public var policy: String
    public var family: String
    public var profile: String
    public var host: String
    /// `built-in` or the external command.
    public var client: String
    /// `in-process` or the daemon's address.
    public var proxy: String
    /// Whether the built-in client offered `h2` and an in-process proxy relayed it
    /// (`check --http2`); a daemon relays HTTP/2 as its own `serve --http2` says.
    public var http2: Bool
    public var results: [ScenarioResult]
    /// Things a reader should know that are not rows (a profile the proxy cannot mount here).
    public var notes: [String]
    public var elapsedSeconds: Double
    /// Set when the check was interrupted (``CheckInterrupted``): how many scenarios it was to
    /// run; ``results`` then holds the rows finished before the interruption. Nil for a whole run.
    public var plannedScenarios: Int? = nil
    /// `check --cross-check`: the real library run beside the emulation; nil when none ran.
    public var realLibrary: String? = nil

    /// Whether an OUTAGE row fails the run (`check --fail-on-outage`); by default outages are
    /// reported and the exit status keeps to the attacks.
    public var failsOnOutage = false
    /// One line on the policy's dates (`check --at`, pin expiry), when it has any.
    public var timeline: String? = nil
    /// Whether the policy's pins and certificates name no certificate of the world
    /// (``PolicyCoverage/pinsNameNoWorldCertificate(_:world:)``; the notes say so at the top).
    public var pinsNameNoWorldCertificate = false

    public var passed: Int { results.filter { $0.status == .pass }.count }
    public var failed: Int { results.filter { $0.status == .fail }.count }
    public var errors: Int { results.filter { $0.status == .error }.count }
    public var skipped: Int { results.filter { $0.status == .skipped }.count }
    public var outages: Int { results.filter { $0.status == .outage }.count }
    /// Rows where the emulation and the real library disagree (each one also counts as failed).
    public var disagreements: Int { results.filter { $0.emulationMatchesReal == false }.count }

    /// 0 when every row passed (outages too, unless ``failsOnOutage``); 1 when a policy
    /// accepted an attack or refused the genuine server, or with ``failsOnOutage`` refused a
    /// legitimate change, or the emulation and the real library disagree on a row; 3 when no
    /// row failed but the harness could not judge some.
    public var exitStatus: Int32 {
        if failed > 0 || (failsOnOutage && outages > 0) { return 1 }
        if errors > 0 { return 3 }
        return 0
    }

    /// "24 scenarios: 22 passed, 2 failed, 0 errors in 0.84 s" ("…, 2 outages, …" when the
    /// report has rotation rows or outages; ", 2 skipped" when some were); "INTERRUPTED after 2
    /// of 24 scenarios: 2 passed, …" for an interrupted check.
    public var summary: String {
        let rows = plannedScenarios.map { "INTERRUPTED after \(results.count) of \($0) scenario\($0 == 1 ? "" : "s")" }
            ?? "\(results.count) scenario\(results.count == 1 ? "" : "s")"
        let skippedText = skipped > 0 ? ", \(skipped) skipped" : ""
        let compared = results.filter { $0.emulationMatchesReal != nil }.count
        let agreement = realLibrary.map { "; the emulation and \($0) agree on \(compared - disagreements) of \(results.count) rows" } ?? ""
        let outagesText = results.contains { $0.kind == .rotation || $0.status == .outage } ? ", \(outages) outage\(outages == 1 ? "" : "s")" : ""
        return "\(rows): \(passed) passed, \(failed) failed\(outagesText), \(errors) error\(errors == 1 ? "" : "s")\(skippedText)\(agreement) in \(String(format: "%.2f", elapsedSeconds)) s"
    }

    /// For each kind with rows, what failed and what it means: "attacks: 22 rows, every attack
    /// refused and the genuine server accepted" (" (2 skipped: misissued)" when the proxy could not
    /// mount some); "rotations: 14 rows, 2 OUTAGE (re-key): …".
    /// In the terminal and Markdown closing lines, the JSON's `summary` and each JUnit suite's
    /// `summary` property.
    public var kindSummaries: [String] { ScenarioKind.allCases.compactMap(kindSummary) }

    /// The closing line of one kind of rows; nil when none ran.
    public func kindSummary(_ kind: ScenarioKind) -> String? {
        let rows = results.filter { $0.kind == kind }
        guard !rows.isEmpty else { return nil }
        let errors = rows.filter { $0.status == .error }
        let errorText = errors.isEmpty ? "" : "; \(errors.count) not judged (ERROR)"
        switch kind {
        case .attack:
            let failed = Self.names(rows.filter { $0.status == .fail })
            let outages = Self.names(rows.filter { $0.status == .outage })
            var parts: [String] = []
            if !failed.isEmpty { parts.append("FAILED \(failed) — an attacker reads the traffic, or the genuine server is refused") }
            if !outages.isEmpty { parts.append("OUTAGE \(outages) — the genuine chain itself is refused at this date: renew it") }
            let skippedText = Self.skippedText(rows)
            let verdict = parts.isEmpty
                ? "every attack refused and the genuine server accepted\(skippedText)"
                : parts.joined(separator: "; ") + skippedText
            return "attacks: \(rows.count) row\(rows.count == 1 ? "" : "s"), \(verdict)\(errorText)"
        case .rotation:
            let outages = Self.names(rows.filter { $0.status == .outage })
            let verdict = outages.isEmpty
                ? "every legitimate change survived"
                : "OUTAGE \(outages) — the app would refuse these legitimate certificate changes and go offline; "
                    + (failsOnOutage ? "--fail-on-outage fails the run" : "outages do not fail the run (--fail-on-outage makes them)")
            return "rotations: \(rows.count) row\(rows.count == 1 ? "" : "s"), \(verdict)\(errorText)"
        }
    }

    /// " (2 skipped: misissued)" for the SKIPPED rows among `rows`; empty when none is.
    static func skippedText(_ rows: [ScenarioResult]) -> String {
        let skipped = rows.filter { $0.status == .skipped }
        return skipped.isEmpty ? "" : " (\(skipped.count) skipped: \(names(skipped)))"
    }

    /// "re-key, new-intermediate": the distinct scenario names of `rows`, in order.
    private static func names(_ rows: [ScenarioResult]) -> String {
        var seen = Set<String>()
        return rows.map(\.scenario).filter { seen.insert($0).inserted }.joined(separator: ", ")
    }

    private enum CodingKeys: String, CodingKey {
        case policy, family, profile, host, client, proxy, http2, results, notes, elapsedSeconds
        case passed, failed, errors, skipped, outages, exitStatus, plannedScenarios, failsOnOutage, timeline, realLibrary, disagreements
        case summary
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(policy, forKey: .policy)
        try c.encode(family, forKey: .family)
        try c.encode(profile, forKey: .profile)
        try c.encode(host, forKey: .host)
        try c.encode(client, forKey: .client)
        try c.encode(proxy, forKey: .proxy)
        try c.encode(http2, forKey: .http2)
        try c.encode(results, forKey: .results)
        try c.encode(notes, forKey: .notes)
        try c.encode((elapsedSeconds * 1000).rounded() / 1000, forKey: .elapsedSeconds)
        try c.encode(passed, forKey: .passed)
        try c.encode(failed, forKey: .failed)
        try c.encode(errors, forKey: .errors)
        try c.encode(skipped, forKey: .skipped)
        try c.encode(outages, forKey: .outages)
        try c.encode(failsOnOutage, forKey: .failsOnOutage)
        try c.encode(kindSummaries, forKey: .summary)
        try c.encodeIfPresent(timeline, forKey: .timeline)
        try c.encode(exitStatus, forKey: .exitStatus)
        try c.encodeIfPresent(plannedScenarios, forKey: .plannedScenarios)
        if let realLibrary {
            try c.encode(realLibrary, forKey: .realLibrary)
            try c.encode(disagreements, forKey: .disagreements)
        }
    }
}
