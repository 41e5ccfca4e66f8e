import Foundation
import PinproxyCertificates
import PinproxyPinning
import PinproxyProxy

/// Where a check's table, notes and messages go: the terminal for `pinproxy check`, a buffer
/// in a test.
public struct CheckOutput: Sendable {
    /// Writes to standard output (the table and its notes).
    public var write: @Sendable (String) -> Void
    /// Writes to standard error (waiting for a daemon, interruptions).
    public var writeError: @Sendable (String) -> Void
    /// Whether the table's RESULT column is coloured.
    public var colour: Bool
    /// Shows which row runs now, each call replacing the last (an empty string clears it);
    /// nil shows nothing.
    public var progress: (@Sendable (String) -> Void)?

    public init(colour: Bool = false, write: @escaping @Sendable (String) -> Void,
                writeError: @escaping @Sendable (String) -> Void, progress: (@Sendable (String) -> Void)? = nil) {
        self.write = write
        self.writeError = writeError
        self.colour = colour
        self.progress = progress
    }

    /// Standard output and standard error, colour when standard output is a terminal; when
    /// standard error is one, a line there names the row running now (rewritten in place and
    /// cleared before the table), so that a slow check does not look hung. Not in a log.
    public static var terminal: CheckOutput {
        let standardError: @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
        var progress: (@Sendable (String) -> Void)?
        if isatty(STDERR_FILENO) == 1 {
            progress = { text in standardError(CheckOutput.statusLine(text)) }
        }
        return CheckOutput(colour: isatty(STDOUT_FILENO) == 1,
                           write: { FileHandle.standardOutput.write(Data($0.utf8)) },
                           writeError: standardError, progress: progress)
    }

    /// `text` as a line that replaces the one the cursor is on: carriage return, erase the line,
    /// the text cut to fit 100 columns (a wrapped line would not be replaced).
    static func statusLine(_ text: String) -> String {
        "\r\u{1B}[K" + (text.count > 99 ? String(text.prefix(98)) + "…" : text)
    }
}

/// One `pinproxy check` from start to end: the world (generated or loaded), the proxy (in
/// process, or a daemon once no other check uses it), the rows, the table, the report files,
/// and what an interruption does. The CLI parses its flags into ``CheckOptions`` and calls
/// ``run(handlingSignals:)``; a test calls the same.
///
/// ```swift
/// let session = CheckSession(CheckOptions(subject: .policy(path: "okhttp.json", deviceTrust: .both)))
/// let status = try session.run()   // 0, 1, 3 or 130
/// ```
public final class CheckSession: Sendable {
    public let options: CheckOptions
    private let output: CheckOutput
    /// The running harness, for ``interrupt()``; whether an interruption came before it started.
    private let state = Locked<(harness: Harness?, interruptedEarly: Bool)>((nil, false))

    public init(_ options: CheckOptions, output: CheckOutput = .terminal) {
        self.options = options
        self.output = output
    }

    /// Runs the check and returns its exit status: 0 every scenario passed, 1 the policy
    /// accepted an attack or refused the genuine server, 3 the harness could not judge a
    /// scenario, 130 interrupted (the rows finished so far printed, no report file written).
    /// Throws ``PinproxyError`` for what the user must fix (exit status 2).
    ///
    /// With `handlingSignals`, SIGINT and SIGTERM interrupt the check (``interrupt()``) and a
    /// second one exits at once, deleting the world's files first; while waiting for a daemon
    /// they delete the world's files and exit 130, nothing of the daemon's having changed yet. The default action would leave a
    /// daemon's rules and resolve map changed and the world's files behind.
    public func run(handlingSignals: Bool = true) throws -> Int32 {
        let setupStarted = Date()
        let command: ClientCommand?
        let policyPath: String?
        switch options.subject {
        case .client(let text, _): (command, policyPath) = (try ClientCommand(text), nil)
        case .policy(let path, _), .crossCheck(let path, _, _, _): (command, policyPath) = (nil, path)
        }
        // One handler from here to the end: a signal while the harness is set up (the daemon's
        // resolve map already changed) is held for it, which then stops before its first row.
        let signals = handlingSignals ? SignalInterruption { [self] number in
            guard interrupt() else { return }
            // The second signal: out at once, but not leaving the world's keys and certificates behind.
            state.withLock { $0.harness }?.world.removeFiles()
            output.progress?("")
            output.writeError("pinproxy: interrupted again; exiting at once\n")
            Glibc.exit(128 + number)
        } : nil
        defer { signals?.end() }
        let harness = try startHarness(signals: signals)
        let loaded: (any PinningPolicy)?
        do { loaded = try policyPath.map { try harness.loadPolicy(contentsOf: $0) } } catch {
            harness.stop()
            throw error
        }
        defer { harness.stop() }
        let early = state.withLock { state in
            state.harness = harness
            return state.interruptedEarly
        }
        if early { harness.interrupt() }
        // Whether a progress line shows now: cleared (once) before anything else is written —
        // the table, a note, an interruption, an error.
        let showing = Locked(false)
        if let progress = output.progress {
            harness.onRowStarting { number, count, scenario in
                showing.withLock { $0 = true }
                progress("pinproxy check: row \(number) of \(count): \(scenario.label)…")
            }
        }
        let clearProgress = { [output] in
            if showing.withLock({ shown in defer { shown = false }; return shown }) { output.progress?("") }
        }
        let setup = Date().timeIntervalSince(setupStarted)
        // Notes said before the rows run, so that what follows is read in their light.
        var printedNotes: [String] = []
        var report: CheckReport
        do {
            switch options.subject {
            case .client(_, let timeout):
                report = try harness.check(client: command!, selected: options.selected, kinds: options.kinds, timeout: timeout)
            case .policy(let path, let deviceTrust):
                report = try harness.check(loaded!, named: path, deviceTrust: deviceTrust, selected: options.selected, kinds: options.kinds) { note in
                    clearProgress()
                    output.write("note: \(note)\n")
                    printedNotes.append(note)
                }
                clearProgress()
                report.timeline = try timeline(loaded!, path: path, deviceTrust: deviceTrust, report: report, world: harness.world)
            case .crossCheck(let path, let deviceTrust, let timeout, let cacheDirectory):
                // The first cross-check of an OkHttp policy compiles its Java client: seconds.
                if let progress = output.progress, loaded!.family == .okhttp {
                    showing.withLock { $0 = true }
                    progress("pinproxy check: preparing real OkHttp (its Java client is compiled on first use)…")
                }
                let real = RealLibraries.runner(for: loaded!, cacheDirectory: cacheDirectory)
                report = try harness.crossCheck(loaded!, real: real, named: path, deviceTrust: deviceTrust, selected: options.selected,
                                                kinds: options.kinds, timeout: timeout) { note in
                    clearProgress()
                    output.write("note: \(note)\n")
                    printedNotes.append(note)
                }
            }
            clearProgress()
            report.failsOnOutage = options.failsOnOutage
            for file in options.reports { try file.write(report) }
        } catch let interruption as CheckInterrupted {
            clearProgress()
            harness.stop()
            // The rows finished so far are findings; the summary says the matrix is incomplete.
            output.write(TableReport.text(interruption.partial, colour: output.colour, printedNotes: printedNotes, verbose: options.verbose) + "\n")
            output.writeError("pinproxy: interrupted" + (options.daemon != nil ? "; the daemon's rules and resolve map are restored" : "") + "\n")
            return 130
        } catch {
            clearProgress()
            throw error
        }
        output.write(TableReport.text(report, colour: output.colour, printedNotes: printedNotes, verbose: options.verbose) + "\n")
        output.write(String(format: "(world, origin and proxy set up in %.2f s)", setup) + "\n")
        return report.exitStatus
    }

    /// The policy's timeline line (``PolicyTimeline``): its pin expiry dates and, with the
    /// in-process proxy and a generated world, the first one on which a row changes, found by
    /// the same check in a fresh world on that day. Nil when the policy has no dates.
    private func timeline(_ policy: any PinningPolicy, path: String, deviceTrust: DeviceTrust, report: CheckReport,
                          world: HarnessWorld) throws -> String? {
        let recheck: ((Date) throws -> CheckReport)?
        if options.daemon == nil && options.origin == nil {
            let options = self.options
            recheck = { later in
                let again = try Harness.start(host: world.host.description, http2: options.http2, at: later)
                defer { again.stop() }
                return try again.check(try again.loadPolicy(contentsOf: path), named: path, deviceTrust: deviceTrust,
                                       selected: options.selected, kinds: options.kinds)
            }
        } else {
            recheck = nil
        }
        return try PolicyTimeline.line(policy: policy, report: report, instant: options.instant ?? Date(),
                                       genuineLeaf: options.origin == nil ? nil : world.leaf, recheck: recheck)
    }

    /// Stops the check as SIGINT does: the external client running now ends, and ``run(handlingSignals:)``
    /// returns 130 before the next scenario (at once when the harness is not up yet). Returns
    /// whether the check had been interrupted already.
    @discardableResult
    public func interrupt() -> Bool {
        let harness = state.withLock { state -> Harness? in
            if state.harness == nil { state.interruptedEarly = true }
            return state.harness
        }
        return harness?.interrupt() ?? false
    }

    private func startHarness(signals: SignalInterruption?) throws -> Harness {
        let hostName: HostName?
        do { hostName = try options.host.map { try HostName(validating: $0) } } catch let error as PinproxyError {
            throw PinproxyError(error.code, "--host: \(error.reason)")
        }
        if options.instant != nil && options.daemon != nil {
            throw PinproxyError(.invalidArgument, "--at needs the in-process proxy: a daemon forges its leaves at its own time; leave out --proxy/--admin")
        }
        let now = options.instant ?? Date()
        let world: HarnessWorld
        if let origin = options.origin {
            world = try HarnessWorld.load(chainPath: origin.chainPath, keyPath: origin.keyPath, host: hostName, now: now)
        } else {
            world = try HarnessWorld.generate(host: hostName ?? HostName(validating: Harness.defaultHost), now: now)
        }
        var daemon: ControlAPIProxy?
        do {
            if let settings = options.daemon {
                daemon = try waitForDaemon(settings, world: world, signals: signals)
                return try Harness(world: world, proxy: daemon!, http2: options.http2)
            }
            return try Harness(world: world, proxy: try InProcessProxy(world: world, http2: options.http2, instant: options.instant),
                               http2: options.http2, instant: options.instant)
        } catch {
            daemon?.close()
            world.removeFiles()
            throw error
        }
    }

    /// The daemon, once no other check uses it; says on standard error when it waits, and for
    /// how long at most.
    /// While it waits, a signal deletes the world's files and exits 130: nothing of the
    /// daemon's has changed yet, and the wait may be long (`--daemon-wait`).
    private func waitForDaemon(_ settings: CheckOptions.Daemon, world: HarnessWorld, signals: SignalInterruption?) throws -> ControlAPIProxy {
        let output = self.output
        let wait = settings.wait
        let token = try AdminToken.load(file: settings.tokenFile)
        let waiting: @Sendable (Int32) -> Void = { _ in
            world.removeFiles()
            output.writeError("pinproxy: interrupted while waiting for the daemon\n")
            Glibc.exit(130)
        }
        return try SignalInterruption.meanwhile(signals, waiting) {
            try ControlAPIProxy(proxy: settings.proxy, admin: settings.admin, token: token, wait: wait) { holder in
                guard wait > 0 else { return }
                output.writeError("pinproxy: \(holder) is using the daemon at \(settings.admin); waiting up to \(Int(wait.rounded(.up))) s for it to finish (--daemon-wait)\n")
            }
        }
    }
}

/// SIGINT and SIGTERM handled on a Dispatch queue instead of by their default action, until
/// ``end()`` (a ``SignalRelay``; the default action stays when it cannot be set up). One for the
/// whole check, so that no signal falls between two handlers; a stretch of it may handle them
/// its own way (``meanwhile(_:_:_:)``).
private final class SignalInterruption: Sendable {
    private let relay: SignalRelay?
    private let instead: Locked<(@Sendable (Int32) -> Void)?>

    /// Runs `handler` with the signal's number on each SIGINT or SIGTERM.
    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        let instead = Locked<(@Sendable (Int32) -> Void)?>(nil)
        self.instead = instead
        relay = try? SignalRelay { number in
            if let other = instead.withLock({ $0 }) { other(number) } else { handler(number) }
        }
    }

    /// Runs `body` with signals going to `handler` instead, then back to the usual one.
    static func meanwhile<T>(_ signals: SignalInterruption?, _ handler: @escaping @Sendable (Int32) -> Void,
                             _ body: () throws -> T) throws -> T {
        guard let signals else { return try body() }
        signals.instead.withLock { $0 = handler }
        defer { signals.instead.withLock { $0 = nil } }
        return try body()
    }

    /// Back to the default actions.
    func end() { relay?.end() }
}
