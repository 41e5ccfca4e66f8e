import ArgumentParser
import Foundation
import PinproxyCertificates
import PinproxyHarness

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a pinning policy through live TLS: the genuine server, every attack, and the certificate changes it must survive.",
        discussion: """
            Builds a world on loopback (a public root and intermediate as the device's system store, the \
            genuine HTTPS origin for the host, a misissuing CA the device also trusts) and a proxy, then \
            connects through the proxy once per scenario — direct, passthrough and every attack profile the \
            proxy knows, with the proxy CA installed on the device and without it — applying the policy to \
            what was received, at the moment the client library decides. In the policy file, world:leaf, \
            world:intermediate, world:root and world:misissuer stand for those certificates (or their pins). \
            Exit status: 0 every scenario passed (OUTAGE rows too, unless --fail-on-outage), 1 the policy \
            accepted an attack or refused the genuine server (or, with --fail-on-outage, refused a \
            rotation), 2 usage or input error, 3 the harness could not judge a scenario, 130 interrupted \
            (SIGINT or SIGTERM: a daemon's rules and resolve map are put back first, the rows finished \
            so far are printed under "INTERRUPTED after N of M scenarios", and no report file is written).

            Rotations (--scenarios rotations or all, the default): the legitimate changes of the genuine \
            chain a real PKI makes — renewal (same key), re-key, new-intermediate (same root), \
            intermediate-reissue (same key), root-migration (a new root cross-signed by the old; the device \
            trusts the old), root-migration-new-store (the device trusts only the new root) and ca-switch (a \
            second public CA the device trusts) — each served by the world's genuine origin, directly and \
            through passthrough, in a block of its own after the attacks. A good policy accepts them all; a \
            refusal is an OUTAGE row (not a FAIL) whose reason names the pin or rule that broke and the fix. \
            Backup pins name world:next-intermediate, world:new-root and world:second-ca. Outages do not \
            fail the run unless --fail-on-outage is given; JUnit puts the rotations in a test suite of their \
            own. --profiles narrows both kinds by name (direct,re-key). A world around --origin-chain has no \
            rotations (it lacks the CA keys). With --client, {pin} stays the original leaf's pin.

            At another date (--at YYYY-MM-DD): the world and the in-process proxy issue their certificates \
            around that day and the policy's own dates apply (TrustKit's TSKExpirationDate, an Android \
            pin-set's expiration: after them the domain is unpinned). A "timeline:" line lists the pin \
            expiry dates and the first date a row changes (the check run again on that day). With \
            --origin-chain, your chain keeps its dates: past its leaf's notAfter the genuine server is an \
            OUTAGE for everyone. Not with --proxy/--admin (a daemon forges at its own time).

            The table fits 100 columns, the rotation rows in a block of their own: each row's reason is shown by its gist; below the table come \
            the reasons in full of the rows that did not pass (every one with --verbose), then each \
            accepted attack with the flaw it implies, and the counts. A profile the proxy cannot mount \
            here is a SKIPPED row (JUnit <skipped/>). While the rows run, a terminal shows on standard \
            error which one runs now (row N of M), cleared before the table; a log gets none of it.

            HTTP/2: the built-in client offers h2 and http/1.1 by ALPN, as the libraries it emulates do, \
            and speaks HTTP/2 when the proxy (or the origin, direct) chooses h2; the origin serves both, \
            and the in-process proxy relays HTTP/2 (serve --http2 on). The protocol does not move a \
            verdict: every decision is taken before the first request. --http2 off keeps the built-in \
            client and the in-process proxy to HTTP/1.1 (a --client command offers what its own flags \
            say). Through a daemon (--proxy/--admin) the daemon's own \
            serve --http2 decides whether it relays HTTP/2; --http2 then sets only what the built-in \
            client offers. The JSON report names each row's protocol ("protocol": "h2").

            Real clients: --client 'COMMAND' runs COMMAND with /bin/sh once per scenario, with HTTPS_PROXY \
            and HTTP_PROXY set to the proxy, and judges it by what the proxy and the origin saw of its \
            connections together with its exit status. Placeholders, filled in shell-quoted:
              {url}         https://HOST:PORT/account on the world's origin
              {host} {port} the world's host and the origin's port
              {proxy}       the proxy's http://127.0.0.1:PORT (empty in the direct row)
              {ca}          the device's system store: the world's public roots (PEM)
              {proxy-ca}    the proxy CA (PEM), for a device that installed it
              {device-ca}   {ca} plus {proxy-ca}: a device with the proxy CA
              {pin}         the genuine leaf's SPKI pin, sha256//..., for --pinnedpubkey
              {pin-base64}  the same pin, bare base64
              {resolve}     HOST:PORT:127.0.0.1, for curl's --resolve
              {address}     127.0.0.1, the address the world's host stands for
            The harness never asks DNS for the world's host, so the direct row (no proxy, the \
            origin's own record decides) runs only for a command that names {resolve} or {address}. Example, curl \
            with the genuine leaf's pin, as the value of --client:
              curl -sS --resolve {resolve} --cacert {ca} --pinnedpubkey {pin} {url}
            With --proxy/--admin, start the daemon with --upstream-insecure (the world's root is new on \
            every run) or, with --origin-chain, --upstream-ca naming its root; a daemon that cannot \
            verify or reach the world's origin is found by one connection before the first row, and \
            the check stops there (exit 2) saying so. The world's misissuer is \
            then the daemon's --misissuing-ca (GET /misissuing-ca.pem): the device trusts it and \
            world:misissuer names it; a daemon without one skips the misissued rows (SKIPPED). \
            The check's rule on the daemon shows "owner": "pinproxy check pid N" in GET /rules; \
            what a check killed outright (SIGKILL) left there, the next check removes first. Checks \
            against one daemon take turns (two parallel CI jobs sharing it): a check started while \
            another uses the daemon says so on stderr and waits for it to finish, up to --daemon-wait \
            seconds (default 300; 0 refuses at once), then exits 2 naming the check in the way. A \
            daemon whose control API listens beyond loopback (a container) wants its bearer token: \
            --admin-token-file FILE or $PINPROXY_ADMIN_TOKEN.

            Cross-check: --cross-check (with --policy) runs each row twice, the built-in emulation and then the real \
            library the policy names, configured from the same file and judged as --client judges a command: for \
            okhttp (profile cleaned-chain), OkHttp on the JVM — a small Java client compiled on first use against \
            Debian's libokhttp-java (with openjdk-17-jdk-headless) and cached in $XDG_CACHE_HOME/pinproxy, else \
            ~/.cache/pinproxy; for curl, the machine's curl with the policy's --pinnedpubkey, --insecure and --cacert. \
            The table shows both verdicts with the moment of each refusal; a row where they differ is marked \
            EMULATION≠REAL and fails the run (exit 1). Where no real library runs the policy here (Apple's families, \
            Android, the presented-chain profile, or the packages missing) a note says so and the emulation runs \
            alone. --client-timeout limits each run of the real library (default 60).

            Examples:
              pinproxy check --policy docs/examples/okhttp.json --junit report.xml
              pinproxy check --policy docs/examples/curl.json --cross-check
              pinproxy check --policy okhttp.json --origin-chain chain.pem \\
                  --origin-key key.pem
              pinproxy check --proxy http://127.0.0.1:8080 --admin http://127.0.0.1:8081 \\
                  --policy okhttp.json --profiles direct,forge,misissued
              pinproxy check --policy docs/examples/okhttp-intermediate.json \\
                  --scenarios rotations
              pinproxy check --policy docs/examples/trustkit-expiring.json \\
                  --at 2027-03-02
            """
    )

    @Option(help: ArgumentHelp("Policy file (.json, .xml or .plist), judged by the built-in client.", valueName: "file"))
    var policy: String?

    @Option(help: ArgumentHelp("Run this client command per scenario instead (placeholders: \(ClientCommand.placeholders.joined(separator: " "))).", valueName: "command"))
    var client: String?

    @Option(name: .customLong("client-timeout"), help: ArgumentHelp("Seconds each run of --client (default 20) or of the --cross-check library (default 60) may take; then its process group gets SIGTERM and, 0.2 s later, SIGKILL.", valueName: "seconds"))
    var clientTimeout: Double?

    @Flag(name: .customLong("cross-check"), help: "Run the real library the policy names beside the emulation (OkHttp on the JVM, curl) and fail a row where they differ.")
    var crossCheck = false

    @Option(help: ArgumentHelp("The world's host (default \(Harness.defaultHost), or the leaf's first name with --origin-chain).", valueName: "host"))
    var host: String?

    @Option(name: .customLong("device-trusts-proxy-ca"), help: ArgumentHelp("Run with the proxy CA installed on the device: yes, no or both (default both; --policy only).", valueName: "yes|no|both"))
    var deviceTrust: String?

    @Option(name: .customLong("origin-chain"), help: ArgumentHelp("Serve this chain (PEM, leaf first) as the genuine origin, so your real pins apply.", valueName: "file"))
    var originChain: String?

    @Option(name: .customLong("origin-key"), help: ArgumentHelp("The private key of --origin-chain's leaf (PEM).", valueName: "file"))
    var originKey: String?

    @Option(help: ArgumentHelp("Use this running pinproxy serve instead of an in-process proxy (needs --admin).", valueName: "url"))
    var proxy: String?

    @Option(help: ArgumentHelp("The daemon's control API; its rules and resolve map are restored afterwards.", valueName: "url"))
    var admin: String?

    @Option(name: .customLong("admin-token-file"), help: ArgumentHelp("With --admin: the control API's bearer token, the first line of this file (default: $PINPROXY_ADMIN_TOKEN); a daemon whose API listens beyond loopback wants it.", valueName: "file"))
    var adminTokenFile: String?

    @Option(name: .customLong("daemon-wait"), help: ArgumentHelp("With --proxy: seconds to wait while another pinproxy check uses the same daemon (default \(Int(ControlAPIProxy.defaultWait)); 0 refuses at once, exit 2).", valueName: "seconds"))
    var daemonWait: Double?

    @Option(help: ArgumentHelp("Run only these scenarios (comma-separated: direct, passthrough, forge, ...).", valueName: "list"))
    var profiles: String?

    @Option(help: ArgumentHelp("Which rows to run: attacks, rotations or all (default all).", valueName: "attacks|rotations|all"))
    var scenarios: String?

    @Flag(name: .customLong("fail-on-outage"), help: ArgumentHelp("Exit 1 when the policy refuses a legitimate certificate change (an OUTAGE row), as for a failed attack row."))
    var failOnOutage = false

    @Option(help: ArgumentHelp("Check as on this day: certificates issued around it, the policy's own dates applied (in-process proxy only).", valueName: "YYYY-MM-DD"))
    var at: String?

    @Option(help: ArgumentHelp("Offer HTTP/2 (h2) from the built-in client and relay it in the in-process proxy: on or off (default on; a daemon keeps its own serve --http2).", valueName: "on|off"))
    var http2: String?

    @Option(help: ArgumentHelp("Write the report as JSON to this file.", valueName: "file"))
    var json: String?

    @Option(help: ArgumentHelp("Write the report as JUnit XML to this file.", valueName: "file"))
    var junit: String?

    @Option(help: ArgumentHelp("Write the report as Markdown to this file.", valueName: "file"))
    var markdown: String?

    @Flag(help: "Print every row's reason in full below the table (the table shows each reason's gist, in 100 columns).")
    var verbose = false

    func validate() throws {
        try OutputFiles.check([("--json", json), ("--junit", junit), ("--markdown", markdown)])
        if crossCheck && policy == nil {
            throw ValidationError("--cross-check runs the real library a policy file names: give --policy FILE\(client != nil ? ", not --client" : "")")
        }
        if policy == nil && client == nil {
            throw ValidationError("Missing expected argument '--policy <file>' (the built-in client judges it) or '--client <command>' (a real client)")
        }
        if policy != nil && client != nil {
            throw ValidationError("give --policy FILE (the built-in client judges it) or --client 'COMMAND' (a real client), not both")
        }
        if let clientTimeout {
            guard client != nil || crossCheck else { throw ValidationError("--client-timeout applies to --client and --cross-check only") }
            guard clientTimeout > 0 && clientTimeout <= 600 else { throw ValidationError("--client-timeout must be more than 0 and at most 600 seconds") }
        }
        if let deviceTrust {
            guard DeviceTrust(rawValue: deviceTrust) != nil else {
                throw ValidationError("--device-trusts-proxy-ca must be yes, no or both, not '\(deviceTrust)'")
            }
            if client != nil {
                throw ValidationError("--device-trusts-proxy-ca applies to --policy only: with --client the command's own flags decide what it trusts (give it {proxy-ca} for a device that installed the proxy CA)")
            }
        }
        for (flag, path) in [("--json", json), ("--junit", junit), ("--markdown", markdown)] {
            guard let path else { continue }
            // Found now, not after the whole matrix has run.
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                throw ValidationError("\(flag) \(path) is a directory; give a file name for the report")
            }
            let parent = FilePaths.parent(of: path)
            if !parent.isEmpty && !FileManager.default.fileExists(atPath: parent) {
                throw ValidationError("\(flag) \(path): the directory \(parent) does not exist")
            }
        }
        if let http2, !["on", "off"].contains(http2) {
            throw ValidationError("--http2 must be on or off, not '\(http2)'")
        }
        if let scenarios, ScenarioSelection(rawValue: scenarios) == nil {
            let hint = NearestName.suggestion(for: scenarios, among: ["attacks", "rotations", "all"]).map { " (did you mean '\($0)'?)" } ?? ""
            throw ValidationError("--scenarios must be attacks, rotations or all, not '\(scenarios)'\(hint)")
        }
        if let at {
            guard CheckOptions.instant(at) != nil else { throw ValidationError("--at must be a day as YYYY-MM-DD from \(CheckOptions.instantRange), not '\(at)'") }
            if proxy != nil { throw ValidationError("--at needs the in-process proxy: a daemon forges its leaves at its own time; leave out --proxy/--admin") }
        }
        if let profiles, CheckOptions.selection(profiles).isEmpty {
            throw ValidationError("--profiles names no scenario; give a comma-separated list such as direct,passthrough,forge")
        }
        if (originChain == nil) != (originKey == nil) { throw ValidationError("--origin-chain and --origin-key go together") }
        if (proxy == nil) != (admin == nil) { throw ValidationError("--proxy and --admin go together: the harness drives the daemon through its control API") }
        if adminTokenFile != nil && admin == nil { throw ValidationError("--admin-token-file goes with --proxy/--admin: it is the daemon's control API token") }
        if let daemonWait {
            guard proxy != nil else { throw ValidationError("--daemon-wait applies to --proxy/--admin only: an in-process proxy is the check's own") }
            guard daemonWait >= 0 && daemonWait <= 86_400 else { throw ValidationError("--daemon-wait must be from 0 to 86400 seconds") }
        }
    }

    func run() throws {
        let subject: CheckOptions.Subject
        if let client {
            subject = .client(command: client, timeout: clientTimeout ?? 20)
        } else if let policy, crossCheck {
            subject = .crossCheck(path: policy, deviceTrust: deviceTrust.flatMap(DeviceTrust.init) ?? .both,
                                  timeout: clientTimeout ?? 60, cacheDirectory: nil)
        } else if let policy {
            subject = .policy(path: policy, deviceTrust: deviceTrust.flatMap(DeviceTrust.init) ?? .both)
        } else {
            throw CLIError("give --policy FILE or --client 'COMMAND'")
        }
        let reports = [(ReportFormat.json, json), (.junit, junit), (.markdown, markdown)].compactMap { format, path in
            path.map { ReportFile(format, path: $0) }
        }
        var options = CheckOptions(
            subject: subject, host: host, origin: originChain.flatMap { chain in originKey.map { (chain, $0) } },
            daemon: proxy.flatMap { proxy in admin.map { CheckOptions.Daemon(proxy: proxy, admin: $0, wait: daemonWait ?? ControlAPIProxy.defaultWait, tokenFile: adminTokenFile) } },
            selected: profiles.map(CheckOptions.selection), http2: http2 != "off", reports: reports, verbose: verbose)
        options.kinds = scenarios.flatMap(ScenarioSelection.init) ?? .all
        options.failsOnOutage = failOnOutage
        options.instant = at.flatMap(CheckOptions.instant)
        let status = try reportingErrors { try CheckSession(options).run() }
        if status != 0 { throw ExitCode(status) }
    }
}
