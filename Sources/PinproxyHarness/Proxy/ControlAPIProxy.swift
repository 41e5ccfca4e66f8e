import Foundation
import PinproxyCertificates
import PinproxyHTTP1
import PinproxyProxy

/// A running `pinproxy serve` daemon, driven through its control API: the
/// harness reads its CA, rules and resolve map, points the world's host at the
/// origin's loopback address (`PUT /resolve`), serves that host with each
/// profile in turn (`PUT /rules`), reads the outcome of each connection from
/// `GET /events`, and puts the daemon's own rules and map back when it closes.
///
/// Clients `CONNECT` to the world's host by name, as a device would; the
/// daemon must be able to verify the origin (`--upstream-ca` with the
/// origin's root, or `--upstream-insecure` for a generated world, whose root
/// is new on every run).
///
/// Checks against one daemon take turns: the proxy reads the daemon's rules only once no
/// other check drives it (``DaemonLock``, and no live check's rule on the daemon), and lets
/// the next one in when it has put them back.
public final class ControlAPIProxy: ProxyUnderTest {
    /// How long a check waits, by default, for another one using the same daemon.
    public static let defaultWait: TimeInterval = 300

    public let address: ListenAddress
    public let caCertificate: Certificate
    /// The CA the daemon's `misissued` profile signs with (`--misissuing-ca`), when it has one;
    /// the harness's world adopts it as its misissuer.
    public let misissuingCertificate: Certificate?
    /// What an earlier check that was killed had left on the daemon, removed before this one
    /// started (see ``CheckLeftovers``); empty when there was nothing.
    public let removedLeftovers: [String]
    public var kind: String { "daemon" }
    public var setupNotes: [String] {
        removedLeftovers.isEmpty ? [] : ["removed what a pinproxy check that is gone left on the daemon: " + removedLeftovers.joined(separator: "; ")]
    }
    private let admin: ListenAddress
    /// Sent as `Authorization: Bearer` on every request, when the daemon wants one.
    private let token: AdminToken?
    private let savedRules: InterceptionRules
    /// The daemon's resolve map as found; nil when its control API has no `/resolve`.
    private let savedResolve: [String: String]?
    private let lock: DaemonLock

    /// Connects to the daemon at `proxy` whose control API is at `admin` (`http://HOST:PORT` or
    /// `HOST:PORT`), once no other check uses it, sending `token` when given (a daemon whose API
    /// listens beyond loopback wants one). Another check's turn is waited for up to
    /// `wait` seconds (0: not at all), calling `waiting` once with who has it
    /// (`pinproxy check pid N`); past that, throws ``PinproxyError/Code/daemonBusy``.
    public init(proxy: String, admin: String, token: AdminToken? = nil, wait: TimeInterval = ControlAPIProxy.defaultWait,
                waiting: (String) -> Void = { _ in }) throws {
        let deadline = Date().addingTimeInterval(wait)
        address = try Self.parse(proxy, what: "--proxy")
        self.admin = try Self.parse(admin, what: "--admin")
        if address == self.admin {
            throw PinproxyError(.invalidArgument, "--proxy and --admin are both \(address): the control API listens on a port of its own (serve --admin HOST:PORT)")
        }
        self.token = token
        let status: Int, pem: [UInt8]
        do { (status, pem) = try AdminHTTP.request("GET", "/ca.pem", at: self.admin, token: token) } catch let error as PinproxyError {
            throw PinproxyError(.connect, "cannot reach the daemon's control API: \(error.reason); is pinproxy serve running with --admin \(self.admin)?")
        }
        if let refusal = AdminHTTP.refusal(status: status, body: pem, at: self.admin, token: token) { throw refusal }
        guard status == 200 else {
            // The proxy port answers a control request with its own 400, which says what it is.
            let text = String(decoding: pem.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let isProxyPort = text.contains("pinproxy is a proxy")
            throw PinproxyError(.connect, "the control API at \(self.admin) answered GET /ca.pem with \(status)"
                + (isProxyPort ? ": that is a proxy port, not the control API (serve --admin HOST:PORT names the control API's)"
                   : text.isEmpty ? "" : " (\(text.split(separator: "\n").first ?? ""))"))
        }
        caCertificate = try Certificate(pemEncoded: String(decoding: pem, as: UTF8.self))
        try Self.checkSameDaemon(proxy: address, admin: self.admin, token: token)
        let daemon = "the daemon at \(self.admin)"
        var told = false
        lock = try DaemonLock.acquire(DaemonLock.path(ca: caCertificate, adminPort: self.admin.port), until: deadline, what: daemon) {
            told = true
            waiting($0)
        }
        let (misissuingStatus, misissuing) = try AdminHTTP.request("GET", "/misissuing-ca.pem", at: self.admin, token: token)
        if misissuingStatus == 200 {
            do { misissuingCertificate = try Certificate(pemEncoded: String(decoding: misissuing, as: UTF8.self)) } catch let error as PinproxyError {
                throw PinproxyError(.connect, "the control API's GET /misissuing-ca.pem is not a certificate: \(error.reason)")
            }
        } else {
            misissuingCertificate = nil
        }
        // A check that does not take the lock (another machine's /tmp, an older pinproxy) still
        // marks its rule: its turn lasts while it lives.
        var found = try Self.rules(at: self.admin, token: token)
        while let owner = CheckLeftovers.liveOwner(in: found) {
            if Date() >= deadline { throw DaemonLock.busy(holder: owner, what: daemon, waited: wait) }
            if !told { waiting(owner) }
            told = true
            usleep(100_000)
            found = try Self.rules(at: self.admin, token: token)
        }
        let (resolveStatus, resolve) = try AdminHTTP.request("GET", "/resolve", at: self.admin, token: token)
        let foundResolve = resolveStatus == 200 ? try? JSONDecoder().decode([String: String].self, from: Data(resolve)) : nil
        let cleaned = CheckLeftovers.removing(from: found, resolve: foundResolve, originAddress: OriginServer.address)
        (savedRules, savedResolve, removedLeftovers) = (cleaned.rules, cleaned.resolve, cleaned.removed)
        if !removedLeftovers.isEmpty { try restore() }
    }

    /// `GET /rules`.
    private static func rules(at admin: ListenAddress, token: AdminToken?) throws -> InterceptionRules {
        let (status, rules) = try AdminHTTP.request("GET", "/rules", at: admin, token: token)
        guard status == 200 else { throw PinproxyError(.connect, "the control API answered GET /rules with \(status)") }
        do {
            return try JSONDecoder().decode(InterceptionRules.self, from: Data(rules))
        } catch {
            throw PinproxyError(.connect, "the control API's rules are not readable: \(error)")
        }
    }

    /// Refuses a `--proxy` that is not the listener of the daemon behind `--admin`: the
    /// rules would change on one daemon while the clients go through another.
    static func checkSameDaemon(proxy: ListenAddress, admin: ListenAddress, token: AdminToken? = nil) throws {
        struct Health: Decodable { var listen: String? }
        guard let (status, body) = try? AdminHTTP.request("GET", "/health", at: admin, token: token), status == 200,
              let listen = (try? JSONDecoder().decode(Health.self, from: Data(body)))?.listen,
              let listening = try? ListenAddress(parsing: listen) else { return }
        let anyAddress = ["0.0.0.0", "::", "[::]"].contains(listening.host)
        if listening.port != proxy.port || (!anyAddress && listening.host != proxy.host) {
            throw PinproxyError(.invalidArgument, "--proxy \(proxy) is not the proxy of the control API at \(admin): that daemon listens on \(listening); give --proxy http://\(listening) or the --admin of the daemon at \(proxy)")
        }
    }

    /// `http://127.0.0.1:8080`, `127.0.0.1:8080` → the address.
    static func parse(_ text: String, what: String) throws -> ListenAddress {
        var rest = text
        if rest.lowercased().hasPrefix("http://") {
            rest = String(rest.dropFirst(7))
        } else if let scheme = rest.range(of: "://") {
            throw PinproxyError(.invalidArgument, "\(what) '\(text)': the \(rest[..<scheme.lowerBound]) scheme is not served; pinproxy's proxy and control API speak plain HTTP: give http://HOST:PORT or HOST:PORT")
        }
        if rest.hasSuffix("/") { rest = String(rest.dropLast()) }
        // user:password@ (never echoed): check sends no credentials to the proxy or its control API.
        if let at = rest.lastIndex(of: "@") {
            throw PinproxyError(.invalidArgument, "\(what) http://…@\(rest[rest.index(after: at)...]): credentials in the address are not supported; "
                + "check sends none, so run the daemon it checks through without --proxy-auth")
        }
        do { return try ListenAddress(parsing: rest) } catch let error as PinproxyError {
            throw PinproxyError(.invalidArgument, "\(what) '\(text)': \(error.reason)")
        }
    }

    public func profiles() throws -> [ProfileAvailability] {
        struct Listing: Decodable {
            struct Entry: Decodable { var name: String; var unavailable: String? }
            var profiles: [Entry]
        }
        let (status, body) = try AdminHTTP.request("GET", "/profiles", at: admin, token: token)
        // A daemon without GET /profiles knows the two first profiles only.
        guard status == 200 else { return [.init(profile: .passthrough), .init(profile: .forge)] }
        let listing = try JSONDecoder().decode(Listing.self, from: Data(body))
        return listing.profiles.map { ProfileAvailability(profile: AttackProfile($0.name), unavailable: $0.unavailable) }
    }

    public func use(_ profile: AttackProfile, for host: HostName) throws {
        if let pattern = savedRules.passthrough.first(where: { $0.matches(host) }), profile != .passthrough {
            throw PinproxyError(.invalidArgument, "the daemon passes \(host) through (pattern \(pattern)); remove that pattern to check attacks on it")
        }
        try putMarkedRule(profile, for: host)
    }

    /// The daemon's own rules behind one for `host`, marked as this check's (``CheckLeftovers``).
    private func putMarkedRule(_ profile: AttackProfile, for host: HostName) throws {
        var rules = savedRules
        rules.rules.insert(InterceptionRules.Rule(pattern: try HostPattern(parsing: host.description), profile: profile,
                                                  owner: CheckLeftovers.owner), at: 0)
        try put("/rules", Array(try JSONEncoder().encode(rules)), what: "the rules")
    }

    private func put(_ path: String, _ document: [UInt8], what: String) throws {
        let (status, body) = try AdminHTTP.request("PUT", path, at: admin, body: document, token: token)
        guard status == 200 else {
            let message = (try? JSONDecoder().decode([String: String].self, from: Data(body)))?["error"] ?? "status \(status)"
            throw PinproxyError(.connect, "the control API refused \(what): \(message)")
        }
    }

    public func resolve(_ host: HostName, to address: String) throws {
        guard var map = savedResolve else {
            throw PinproxyError(.connect, "the daemon's control API at \(admin) has no /resolve (an older pinproxy serve), so it cannot reach the world's origin for \(host); run a pinproxy serve of this version")
        }
        map[host.description] = address
        // The marked rule first, serving what the daemon's rules serve: a check killed from here on
        // leaves a resolve entry that its rule shows and a later check removes.
        try putMarkedRule(savedRules.profile(for: host), for: host)
        try put("/resolve", Array(try JSONEncoder().encode(map)), what: "the resolve map")
    }

    public func event(clientPort: Int, since: Date, timeout: TimeInterval) -> TLSOutcomeEvent? {
        // The daemon's timestamps are rounded to milliseconds.
        let earliest = since.addingTimeInterval(-0.001)
        return waitFor(timeout: timeout, interval: 0.01) {
            recentEvents().first { $0.time >= earliest && port(ofAddress: $0.clientAddress) == clientPort }
        }
    }

    public func events(host: String, since: Date) -> [TLSOutcomeEvent] {
        let earliest = since.addingTimeInterval(-0.001)
        return recentEvents().filter { $0.host == host && $0.time >= earliest }.reversed()
    }

    /// `GET /events`, newest first; empty when the API does not answer.
    private func recentEvents() -> [TLSOutcomeEvent] {
        struct Listing: Decodable { var events: [TLSOutcomeEvent] }
        guard let (status, body) = try? AdminHTTP.request("GET", "/events", at: admin, token: token), status == 200,
              let listing = try? AdminHTTP.decoder.decode(Listing.self, from: Data(body)) else { return [] }
        return listing.events
    }

    public func flows(clientPort: Int) -> [Flow] {
        struct Listing: Decodable { var flows: [Flow] }
        guard let (status, body) = try? AdminHTTP.request("GET", "/flows", at: admin, token: token), status == 200,
              let listing = try? AdminHTTP.decoder.decode(Listing.self, from: Data(body)) else { return [] }
        return listing.flows.filter { port(ofAddress: $0.clientAddress) == clientPort }
    }

    /// Puts the daemon's rules and resolve map back as they were (without an earlier check's
    /// leftovers), then lets the next check in.
    public func close() {
        try? restoreRules()
        try? restoreResolve()
        lock.release()
    }

    private func restore() throws {
        try restoreRules()
        try restoreResolve()
    }

    private func restoreRules() throws {
        try put("/rules", Array(try JSONEncoder().encode(savedRules)), what: "the rules")
    }

    private func restoreResolve() throws {
        if let savedResolve { try put("/resolve", Array(try JSONEncoder().encode(savedResolve)), what: "the resolve map") }
    }
}

/// One-request HTTP/1.1 exchanges with the control API.
enum AdminHTTP {
    static func request(_ method: String, _ path: String, at address: ListenAddress, body: [UInt8] = [],
                        token: AdminToken? = nil) throws -> (Int, [UInt8]) {
        let socket = try LoopbackSocket.connect(host: address.host, port: address.port, timeout: 5)
        defer { socket.close() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\n"
        if let token { head += "Authorization: \(token.authorizationValue)\r\n" }
        if !body.isEmpty || method == "PUT" { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        try socket.send(Array((head + "\r\n").utf8) + body)
        var reader = HTTP1MessageReader(.response) { try socket.receive() }
        let response: (head: HTTP1ResponseHead, body: [UInt8])
        do { response = try reader.response(toMethod: method) } catch let error as PinproxyError {
            throw PinproxyError(.connect, "the control API at \(address) did not answer HTTP: \(error.reason)")
        }
        let (status, content) = (response.head.status, response.body)
        return (status, content)
    }

    /// What a 401 or 403 from the control API means for the caller, in one line; nil for other statuses.
    static func refusal(status: Int, body: [UInt8], at address: ListenAddress, token: AdminToken?) -> PinproxyError? {
        let reason = (try? JSONDecoder().decode([String: String].self, from: Data(body)))?["error"] ?? "status \(status)"
        switch status {
        case 401 where token == nil:
            return PinproxyError(.connect, "the control API at \(address) wants a bearer token: give --admin-token-file FILE or set \(AdminToken.environmentVariable) (the daemon's own)")
        case 401:
            return PinproxyError(.connect, "the control API at \(address) refused the bearer token: it is not the one pinproxy serve was given")
        case 403:
            return PinproxyError(.connect, "the control API at \(address) refused the request: \(reason)")
        default:
            return nil
        }
    }

    /// Reads the API's timestamps (ISO 8601 with fractional seconds).
    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
            return try Date.ISO8601FormatStyle().parse(text)
        }
        return decoder
    }
}
