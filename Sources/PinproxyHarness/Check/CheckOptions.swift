import Foundation
import PinproxyCertificates

/// What one `pinproxy check` run is asked to do: the CLI's flags, parsed and validated, as
/// values a test can build too.
public struct CheckOptions: Sendable {
    /// What is judged in every scenario.
    public enum Subject: Sendable {
        /// A policy file, judged by the built-in client, with or without the proxy CA on the device.
        case policy(path: String, deviceTrust: DeviceTrust)
        /// A client command run with /bin/sh per scenario (``ClientCommand``), each run limited to `timeout` seconds.
        case client(command: String, timeout: TimeInterval)
        /// A policy file judged by the built-in client and, beside it, by the real library it names
        /// where one runs here (``RealLibraries``), each of that library's runs limited to `timeout`
        /// seconds; the compiled OkHttp client is cached in `cacheDirectory` (nil: ``RealLibraries/defaultCacheDirectory(environment:)``).
        case crossCheck(path: String, deviceTrust: DeviceTrust, timeout: TimeInterval, cacheDirectory: String?)
    }

    /// A running `pinproxy serve` to check through instead of an in-process proxy.
    public struct Daemon: Sendable {
        /// The proxy's address (`http://HOST:PORT` or `HOST:PORT`).
        public var proxy: String
        /// Its control API's address.
        public var admin: String
        /// Seconds to wait while another check uses the daemon (0: refuse at once).
        public var wait: TimeInterval
        /// The file holding the control API's bearer token; nil: `$PINPROXY_ADMIN_TOKEN`, if set.
        public var tokenFile: String?

        public init(proxy: String, admin: String, wait: TimeInterval = ControlAPIProxy.defaultWait, tokenFile: String? = nil) {
            self.proxy = proxy
            self.admin = admin
            self.wait = wait
            self.tokenFile = tokenFile
        }
    }

    public var subject: Subject
    /// The world's host; nil: ``Harness/defaultHost``, or the first name of `originChain`'s leaf.
    public var host: String?
    /// A chain (PEM, leaf first) and its leaf's key to serve as the genuine origin; nil: a generated world.
    public var origin: (chainPath: String, keyPath: String)?
    public var daemon: Daemon?
    /// The scenarios to run by name; nil: all of them.
    public var selected: [String]?
    /// Whether the built-in client offers h2 and the in-process proxy relays it.
    public var http2: Bool
    /// The report files to write once every scenario has run.
    public var reports: [ReportFile]
    /// Whether the table prints every reason in full below it (``TableReport``); otherwise only
    /// those of rows that did not pass and whose gist did not fit.
    public var verbose: Bool
    /// The kinds of rows to run (`--scenarios`): attacks, rotations or both.
    public var kinds: ScenarioSelection = .all
    /// Whether an OUTAGE row fails the run (`--fail-on-outage`).
    public var failsOnOutage = false
    /// The instant to check at (`--at`): the world and the in-process proxy issue their
    /// certificates around it and the policy's dates apply there; nil: now.
    public var instant: Date? = nil

    public init(subject: Subject, host: String? = nil, origin: (chainPath: String, keyPath: String)? = nil,
                daemon: Daemon? = nil, selected: [String]? = nil, http2: Bool = true, reports: [ReportFile] = [],
                verbose: Bool = false) {
        self.verbose = verbose
        self.subject = subject
        self.host = host
        self.origin = origin
        self.daemon = daemon
        self.selected = selected
        self.http2 = http2
        self.reports = reports
    }

    /// The days `--at` accepts: X.509 dates end with 9999, and the world's root, issued on
    /// the day, lasts ten years.
    public static let instantRange = "1900-01-01 to 9989-12-31"

    /// `2027-03-01` → midday UTC of that day (the instant `--at` checks at), or nil: not a day
    /// of the calendar (`2027-02-30`, which the parser alone would roll over to March) or
    /// outside ``instantRange``.
    public static func instant(_ text: String) -> Date? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withFullDate]
        guard text.count == 10, let day = format.date(from: text), format.string(from: day) == text,
              text >= "1900-01-01", text <= "9989-12-31" else { return nil }
        return day.addingTimeInterval(12 * 3_600)
    }

    /// `"direct, forge,"` → `["direct", "forge"]`: how `--profiles` names the scenarios.
    public static func selection(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
