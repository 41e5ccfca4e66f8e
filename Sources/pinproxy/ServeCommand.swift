import ArgumentParser
import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import PinproxyProxy
import PinproxyTLS

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the intercepting proxy daemon.",
        discussion: """
            Creates the CA on first run in the default directory ($PINPROXY_CA_DIR, else ./certs; \
            a --ca-dir elsewhere must hold one already: 'pinproxy ca init --dir DIR'), prints one ready line with the address and the CA's SPKI pin, \
            and serves until SIGINT or SIGTERM. Set SSLKEYLOGFILE to write TLS secrets for Wireshark. \
            Clients use it as their HTTP(S) proxy and trust the CA's certificate (certs/pinproxy-ca.pem; \
            'pinproxy ca show' says how to install it). The control API (--admin) reads events and \
            flows and changes rules at run time: docs/proxy.md. It serves only requests that name \
            it (Host) and refuses writes from web pages (Origin); beyond loopback (a container) it \
            needs a bearer token: --admin-token-file FILE or $PINPROXY_ADMIN_TOKEN, which callers \
            send as Authorization: Bearer TOKEN (pinproxy check reads the same).

            Examples:
              pinproxy serve --admin 127.0.0.1:8081
              curl -x http://127.0.0.1:8080 --cacert certs/pinproxy-ca.pem \\
                  https://example.com/
              pinproxy serve --rule 'api.example.com=stuff' --passthrough '**.apple.com' \\
                  --har flows.har
              pinproxy serve --mode reverse:https://api.example.com:443 \\
                  --listen 127.0.0.1:8443
              openssl rand -hex 32 > admin.token
              pinproxy serve --listen 0.0.0.0:8080 --allow-remote \\
                  --admin 0.0.0.0:8081 --admin-token-file admin.token

            Attack profiles (--attack, --rule, PUT /rules) and the flaw of a client that accepts each \
            (docs/proxy.md has what each one shows):
            """ + "\n" + AttackCatalog.standard.helpLines.map { "  " + $0 }.joined(separator: "\n")
    )

    @OptionGroup var location: CADirectoryOptions

    @Option(help: ArgumentHelp("Address to listen on.", valueName: "host:port"))
    var listen: String = "127.0.0.1:8080"

    @Flag(name: .customLong("allow-remote"), help: "Allow listening on a non-loopback address.")
    var allowRemote = false

    @Option(help: ArgumentHelp("forward, reverse:https://HOST:PORT, or reverse:http://HOST:PORT (TLS in front of a plain-HTTP origin).", valueName: "mode"))
    var mode: String = "forward"

    @Flag(name: .customLong("keep-host-header"), help: "Reverse mode: send the client's Host header to the origin instead of the origin's host:port.")
    var keepHostHeader = false

    @Option(name: .customLong("http2"), help: ArgumentHelp("on (default): an intercepted client that offers h2 speaks HTTP/2, relayed to an h2 upstream, or translated to HTTP/1.1 when the upstream chose it and the client offered h2 only, or the origin is plain http:// (reverse mode); a client offering both gets what the upstream chose. off: HTTP/1.1 only.", valueName: "on|off"))
    var http2: String = "on"

    @Option(name: .customLong("upstream-http2"), help: ArgumentHelp("on (default): a TLS upstream is offered h2 when the client offered it, so the origin's own HTTP/2 is relayed. off: upstreams are offered HTTP/1.1 only, as HAProxy and nginx do, and a client that offers h2 speaks HTTP/2 with the proxy, translated to HTTP/1.1 (an upstream that refuses HTTP/1.1 is still reached over h2).", valueName: "on|off"))
    var upstreamHTTP2: String = "on"

    @Option(name: .customLong("upstream-ca"), help: ArgumentHelp("Verify upstreams against these CA certificates (PEM) instead of the system store.", valueName: "file"))
    var upstreamCA: String?

    @Option(name: .customLong("upstream-client-cert"), help: ArgumentHelp("Present this client certificate (PEM, chain after the leaf) to upstreams that ask for one.", valueName: "file"))
    var upstreamClientCert: String?

    @Option(name: .customLong("upstream-client-key"), help: ArgumentHelp("The client certificate's private key (PEM); default: the certificate file.", valueName: "file"))
    var upstreamClientKey: String?

    @Flag(name: .customLong("upstream-insecure"), help: "Do not verify upstream certificates (tests against broken origins only).")
    var upstreamInsecure = false

    @Option(help: ArgumentHelp("Connect to HOST at this numeric address instead of resolving it (repeatable, as curl's --resolve without the port; PUT /resolve changes it at run time).", valueName: "host:address"))
    var resolve: [String] = []

    @Option(help: ArgumentHelp("Tunnel matching hosts without interception (repeatable): host, *.host, **.host.", valueName: "pattern"))
    var passthrough: [String] = []

    @Option(help: ArgumentHelp("Attack profile for hosts without a rule: \(AttackCatalog.standard.profiles.map(\.name).joined(separator: ", ")) (listed above).", valueName: "profile"))
    var attack: String = AttackProfile.forge.name

    @Option(help: ArgumentHelp("Per-host attack profile (repeatable, first match wins), e.g. '*.example.test=expired'.", valueName: "pattern=profile"))
    var rule: [String] = []

    @Option(name: .customLong("rotation-ca"), help: ArgumentHelp("The CA that issues your staging certificates (a directory made by 'pinproxy ca init' or 'ca import'): enables the rotate-rekey and rotate-new-intermediate profiles; given twice, the second CA enables rotate-ca-switch.", valueName: "dir"))
    var rotationCA: [String] = []

    @Option(name: .customLong("misissuing-ca"), help: ArgumentHelp("A second CA (a directory made by 'pinproxy ca init') that signs the misissued profile's leaves.", valueName: "dir"))
    var misissuingCA: String?

    @Option(name: .customLong("proxy-auth"), help: ArgumentHelp("Require Proxy-Authorization Basic with these credentials.", valueName: "user:pass"))
    var proxyAuth: String?

    @Option(name: .customLong("pid-file"), help: ArgumentHelp("Write the process id here; removed on exit.", valueName: "file"))
    var pidFile: String?

    @Option(help: ArgumentHelp("Serve the control API on this address: loopback, or any other with a bearer token (--admin-token-file).", valueName: "host:port"))
    var admin: String?

    @Option(name: .customLong("admin-token-file"), help: ArgumentHelp("The control API's bearer token: the first line of this file (default: $\(AdminToken.environmentVariable)); required when --admin is not loopback.", valueName: "file"))
    var adminTokenFile: String?

    @Option(help: ArgumentHelp("Write flows as HAR 1.2 to this file (complete and valid after every flow or group of flows).", valueName: "file"))
    var har: String?

    @Option(help: ArgumentHelp("Write TLS outcomes and flows as JSON lines to this file (started afresh, one line per record).", valueName: "file"))
    var events: String?

    @Option(name: .customLong("capture-bodies"), help: ArgumentHelp("Keep up to this many bytes of each body in flows (0: none).", valueName: "bytes"))
    var captureBodies: Int = 0

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp("Seconds a kept-alive client connection may stay idle.", valueName: "seconds"))
    var idleTimeout: Double = 60

    @Option(name: .customLong("handshake-timeout"), help: ArgumentHelp("Seconds a client has to finish its TLS handshake.", valueName: "seconds"))
    var handshakeTimeout: Double = 10

    @Option(name: .customLong("header-timeout"), help: ArgumentHelp("Seconds a client has to send a whole request head.", valueName: "seconds"))
    var headerTimeout: Double = 15

    @Option(name: .customLong("upstream-handshake-timeout"), help: ArgumentHelp("Seconds an upstream has to finish its TLS handshake (the client's clock stops meanwhile).", valueName: "seconds"))
    var upstreamHandshakeTimeout: Double = 10

    @Option(name: .customLong("tunnel-idle-timeout"), help: ArgumentHelp("Seconds a raw tunnel (passthrough, CONNECT without TLS) may pass no bytes either way.", valueName: "seconds"))
    var tunnelIdleTimeout: Double = 300

    @Option(name: .customLong("idle-upstream-timeout"), help: ArgumentHelp("Seconds an idle upstream keep-alive connection is kept for the next client connection to the same upstream (0: every client connection opens its own).", valueName: "seconds"))
    var idleUpstreamTimeout: Double = 30

    @Option(name: .customLong("upstream-hold"), help: ArgumentHelp("Seconds a client connection that sends no request keeps its own upstream connection; then it goes to the idle pool (or closes) and the next request takes or opens one (0: released after each exchange).", valueName: "seconds"))
    var upstreamHold: Double = 3

    @Option(name: .customLong("drain-timeout"), help: ArgumentHelp("Seconds open connections get to finish after SIGINT or SIGTERM; a second signal ends the drain at once.", valueName: "seconds"))
    var drainTimeout: Double = 3

    @Option(help: ArgumentHelp("Event loop threads for proxied connections (default: half the cores, at least one).", valueName: "n"))
    var loops: Int?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("trace, debug, info, notice, warning, error.", valueName: "level"))
    var logLevel: String = "info"

    func validate() throws {
        if upstreamCA != nil && upstreamInsecure { throw ValidationError("--upstream-ca and --upstream-insecure contradict each other") }
        if upstreamClientKey != nil && upstreamClientCert == nil { throw ValidationError("--upstream-client-key needs --upstream-client-cert") }
        guard captureBodies >= 0 else { throw ValidationError("--capture-bodies must be 0 or more") }
        try OutputFiles.check([("--har", har), ("--events", events), ("--pid-file", pidFile)], caDirectory: location.caDirectory)
        if let loops, !(1...256).contains(loops) { throw ValidationError("--loops must be 1–256") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown --log-level '\(logLevel)': use trace, debug, info, notice, warning or error")
        }
        if let admin, let adminAddress = try? ListenAddress(parsing: admin), let listenAddress = try? ListenAddress(parsing: listen),
           adminAddress.port != 0, adminAddress == listenAddress {
            throw ValidationError("--listen and --admin are both \(listenAddress): the proxy and its control API need two ports (e.g. --admin \(listenAddress.host.contains(":") ? "[\(listenAddress.host)]" : listenAddress.host):\(listenAddress.port + 1))")
        }
        if adminTokenFile != nil && admin == nil { throw ValidationError("--admin-token-file needs --admin: the token guards the control API") }
        guard http2 == "on" || http2 == "off" else { throw ValidationError("--http2 must be on or off, not '\(http2)'") }
        guard upstreamHTTP2 == "on" || upstreamHTTP2 == "off" else { throw ValidationError("--upstream-http2 must be on or off, not '\(upstreamHTTP2)'") }
        let timeouts = [("--idle-timeout", idleTimeout), ("--handshake-timeout", handshakeTimeout),
                        ("--header-timeout", headerTimeout), ("--upstream-handshake-timeout", upstreamHandshakeTimeout),
                        ("--tunnel-idle-timeout", tunnelIdleTimeout)]
        for (flag, t) in timeouts where !(t > 0 && t <= 86_400) {
            throw ValidationError("\(flag) must be more than 0 and at most 86400 seconds, not \(Self.plain(t))")
        }
        guard idleUpstreamTimeout >= 0 && idleUpstreamTimeout <= 3_600 else {
            throw ValidationError("--idle-upstream-timeout must be 0–3600 seconds, not \(Self.plain(idleUpstreamTimeout))")
        }
        guard drainTimeout >= 0 && drainTimeout <= 3_600 else {
            throw ValidationError("--drain-timeout must be 0–3600 seconds, not \(Self.plain(drainTimeout))")
        }
        guard upstreamHold >= 0 && upstreamHold <= 86_400 else {
            throw ValidationError("--upstream-hold must be 0–86400 seconds, not \(Self.plain(upstreamHold))")
        }
    }

    /// A number of seconds as it was written: `86401`, `0.5` (no digit grouping, no `.0`).
    static func plain(_ seconds: Double) -> String {
        seconds.isFinite && seconds.rounded() == seconds && abs(seconds) < 1e15 ? String(Int(seconds)) : "\(seconds)"
    }

    func run() throws {
        try reportingErrors {
            let level = Logger.Level(rawValue: logLevel) ?? .info
            LoggingSystem.bootstrap { label in
                // StreamLogHandler's format, at a fraction of its cost per line (a line per flow).
                var handler = LogLineHandler(label: label)
                handler.logLevel = level
                return handler
            }
            let logger = Logger(label: "pinproxy")
            let configuration = try makeConfiguration()
            // The control API's token and address are checked before anything is written.
            let adminAddress = try admin.map { try ListenAddress(parsing: $0) }
            let adminToken = adminAddress == nil ? nil : try AdminToken.load(file: adminTokenFile)
            if let adminAddress { try ProxyDaemon.checkAdmin(adminAddress, token: adminToken) }
            // A bad --upstream-ca fails here, before a CA is created on disk.
            _ = try TLSContext.client(trust: configuration.upstreamTrust, clientCertificate: configuration.upstreamClientCertificate)
            // Both listeners before anything is written: a port in use leaves no new CA behind.
            try configuration.listen.checkCanListen(flag: "--listen")
            try adminAddress?.checkCanListen(flag: "--admin")
            let directory = location.caDirectory
            let ca: CertificateAuthority
            if location.isDefaultLocation {
                let (loaded, created) = try directory.loadOrCreate()
                if created { logger.notice("created a new CA in \(directory.path)") }
                ca = loaded
            } else {
                // A mistyped --ca-dir must not become a new CA that no device trusts.
                do { ca = try directory.load() } catch let error as PinproxyError where error.code == .caMissing {
                    throw PinproxyError(.caMissing, "\(error.reason) (serve creates a CA by itself only in the default directory, $\(CADirectory.environmentVariable) or ./\(CADirectory.defaultPath))")
                }
            }
            // An expired (or not yet valid) CA would fail every handshake; refuse to start instead.
            try ca.checkValidity()
            if let misissuing = configuration.misissuingAuthority, misissuing.certificate.subject == ca.certificate.subject {
                // Nothing tells the two apart in a report, and a device that files CAs by subject
                // hash (Android's user store) keeps only one of them.
                logger.notice("the --misissuing-ca has the same name as the proxy CA (\(ca.certificate.subject)); make it with 'pinproxy ca init --dir \(misissuingCA ?? "DIR") --name \"pinproxy misissuing CA\" --force' to tell them apart")
            }

            let daemon = try ProxyDaemon(
                configuration: configuration, authority: ca,
                adminAddress: adminAddress, adminToken: adminToken,
                harPath: har, eventsPath: events, keepsRecentFlows: false, logger: logger)
            let termination = try TerminationSignal()
            // The pid file exists before anything answers: a script that waits for /health or
            // the port may read it at once.
            if let pidFile { try FileIO.write(Array("\(getpid())\n".utf8), to: pidFile, mode: 0o644) }
            let address: ListenAddress
            do { address = try daemon.start() } catch {
                if let pidFile { unlink(pidFile) }
                throw error
            }
            var ready = "pinproxy ready: \(daemon.modeDescription) on \(address); CA \(directory.certificatePEMPath) SPKI pin \(ca.certificate.spkiPin.okhttp)"
            if let adminAddress = daemon.adminAddress {
                ready += "; admin http://\(adminAddress)"
                if daemon.admin?.requiresToken == true { ready += " (bearer token)" }
            }
            FileHandle.standardOutput.write(Data((ready + "\n").utf8))

            termination.wait()
            termination.onRepeat { [logger] in
                logger.notice("second signal: closing the connections still open now")
                daemon.server.cutDrainShort()
            }
            logger.notice("stopping: no new connections, draining for up to \(Self.plain(configuration.timeouts.drain)) s (a second Ctrl-C ends the drain now)")
            daemon.stop()
            if let pidFile { unlink(pidFile) }
            logger.notice("stopped")
            LogLineHandler.flushStandardError()
        }
    }

    private func makeConfiguration() throws -> ProxyConfiguration {
        var c = ProxyConfiguration()
        c.listen = try ListenAddress(parsing: listen)
        c.allowRemote = allowRemote
        c.keepHostHeader = keepHostHeader
        c.http2 = http2 == "on"
        c.upstreamHTTP2 = upstreamHTTP2 == "on"
        c.mode = try ProxyConfiguration.Mode(parsing: mode)
        c.upstreamTrust = upstreamInsecure ? .insecure : upstreamCA.map { .file($0) } ?? .system
        for entry in resolve {
            let (host, address) = try UpstreamAddresses.parse(entry)
            try c.upstreamAddresses.set(host, to: address)
        }
        c.upstreamClientCertificate = upstreamClientCert.map { ClientCertificateFiles(certificate: $0, key: upstreamClientKey) }
        var rules = InterceptionRules(defaultProfile: AttackProfile(attack))
        rules.passthrough = try passthrough.map { try HostPattern(parsing: $0) }
        for text in rule {
            guard let eq = text.lastIndex(of: "=") else { throw PinproxyError(.invalidArgument, "--rule wants pattern=profile, got '\(text)'") }
            rules.rules.append(.init(pattern: try HostPattern(parsing: String(text[..<eq])),
                                     profile: AttackProfile(String(text[text.index(after: eq)...]))))
        }
        c.rules = rules
        if let misissuingCA {
            do {
                c.misissuingAuthority = try CADirectory(path: misissuingCA).load()
            } catch let error as PinproxyError {
                throw PinproxyError(error.code, "--misissuing-ca: \(error.reason)", openSSLErrors: error.openSSLErrors)
            }
        }
        if rotationCA.count > 2 { throw PinproxyError(.invalidArgument, "--rotation-ca is given at most twice: your CA, then the second CA you would move to") }
        for directory in rotationCA {
            do {
                c.rotationAuthorities.append(try CADirectory(path: directory).load())
            } catch let error as PinproxyError {
                throw PinproxyError(error.code, "--rotation-ca \(directory): \(error.reason)", openSSLErrors: error.openSSLErrors)
            }
        }
        if !rotationCA.isEmpty { c.catalog = .withRotations }
        c.proxyAuthentication = proxyAuth
        c.bodyCaptureLimit = captureBodies
        c.eventLoops = loops
        c.timeouts.idle = idleTimeout
        c.timeouts.handshake = handshakeTimeout
        c.timeouts.requestHeaders = headerTimeout
        c.timeouts.upstreamHandshake = upstreamHandshakeTimeout
        c.timeouts.tunnelIdle = tunnelIdleTimeout
        c.timeouts.idleUpstream = idleUpstreamTimeout
        c.timeouts.upstreamHold = upstreamHold
        c.timeouts.drain = drainTimeout
        try c.validate()
        return c
    }
}
