import Dispatch
import Foundation
import Logging
import PinproxyCertificates
import PinproxyHTTP1

/// The control API, on its own address: loopback, or beyond it only with a bearer token.
/// Every request passes ``AdminAccess`` first (token, Host, Origin); a refused one gets 401
/// or 403 with a one-line reason and a warning line in the log.
///
/// | request | answer |
/// |---|---|
/// | `GET /health` | `{"status":"ready", "uptimeSeconds", "counts", "profiles", "openConnections", ...}` |
/// | `GET /ca.pem`, `GET /ca.cer` | the CA certificate, PEM or DER |
/// | `GET /misissuing-ca.pem` | the `misissued` profile's CA certificate (`--misissuing-ca`); 404 without one |
/// | `GET /events` | recent TLS outcomes per host and in order, newest first |
/// | `GET /flows` | recent flows, newest first |
/// | `GET /rules` | the interception rules in force; a rule's optional `owner` says who set it |
/// | `PUT /rules` | replaces them: `{"defaultProfile":"forge","passthrough":["*.example.test"],"rules":[{"pattern":"api.test","profile":"expired"}]}` |
/// | `GET /resolve` | the upstream names pinned to an address: `{"api.example.test":"127.0.0.1"}` |
/// | `PUT /resolve` | replaces that map (`{}` empties it); every entry is checked first |
/// | `GET /profiles` | the attack profiles: name, what the client is shown, what it catches, whether it is available |
/// | `DELETE /flows`, `DELETE /events` | forget the recent flows, or events and host summaries (204) |
///
/// `HEAD` answers every `GET` route with the same headers and no body.
public final class AdminServer: Sendable {
    public let requestedAddress: ListenAddress
    let proxy: ProxyServer
    let logger: Logger
    let token: AdminToken?
    let queue = EventLoops.admin.nextLoop().queue
    private let state = Locked<(source: Confined<DispatchSourceRead>?, address: ListenAddress?)>((nil, nil))

    init(address: ListenAddress, token: AdminToken?, proxy: ProxyServer, logger: Logger) {
        self.requestedAddress = address
        self.token = token
        self.proxy = proxy
        self.logger = logger
    }

    public var address: ListenAddress? { state.withLock { $0.address } }

    /// Whether callers must send the bearer token.
    public var requiresToken: Bool { token != nil }

    /// Who may use the API; fixed once the listener's port is known.
    var access: AdminAccess {
        AdminAccess(listenHost: requestedAddress.host, port: address?.port ?? requestedAddress.port, token: token)
    }

    public func start() throws {
        let listener = try Socket.listen(requestedAddress, backlog: 64)
        let bound = ListenAddress(host: requestedAddress.host, port: Socket.localPort(listener))
        let source = DispatchSource.makeReadSource(fileDescriptor: listener.rawValue, queue: queue)
        source.setEventHandler { [weak self] in
            guard let self else { return }
            while case .success(let client) = Socket.accept(listener) {
                AdminConnection(descriptor: client, admin: self).start()
            }
        }
        source.setCancelHandler { listener.close() }
        state.withLock { $0 = (Confined(source), bound) }
        source.resume()
    }

    public func stop() {
        let source = state.withLock { s -> Confined<DispatchSourceRead>? in
            let source = s.source
            s.source = nil
            return source
        }
        source?.value.cancel()
    }

    /// The answer to one request: status, content type, body.
    func respond(method: String, path: String, body: [UInt8]) -> (Int, String, [UInt8]) {
        let json = "application/json"
        let route = route(of: path)
        // HEAD is GET without the body (the connection drops it), so its headers match GET's.
        switch (method == "HEAD" ? "GET" : method, route) {
        case ("GET", "/health"):
            return (200, json, health())
        case ("GET", "/ca.pem"):
            return (200, "application/x-pem-file", Array(proxy.authority.certificate.pemEncoded.utf8))
        case ("GET", "/ca.cer"):
            return (200, "application/pkix-cert", proxy.authority.certificate.derEncoded)
        case ("GET", "/misissuing-ca.pem"):
            guard let misissuing = proxy.configuration.misissuingAuthority else {
                return (404, json, encode(["error": "no misissuing CA: start pinproxy serve with --misissuing-ca DIR"]))
            }
            return (200, "application/x-pem-file", Array(misissuing.certificate.pemEncoded.utf8))
        case ("GET", "/events"):
            return (200, json, proxy.recorder.recent.eventsJSON())
        case ("GET", "/flows"):
            return (200, json, proxy.recorder.recent.flowsJSON())
        case ("GET", "/rules"):
            return (200, json, encode(proxy.rules))
        case ("GET", "/profiles"):
            return (200, json, profiles())
        case ("GET", "/resolve"):
            return (200, json, encode(proxy.configuration.upstreamAddresses.all))
        case ("PUT", "/resolve"):
            return replaceResolve(body)
        case ("DELETE", "/flows"):
            proxy.recorder.recent.clearFlows()
            return (204, "", [])
        case ("DELETE", "/events"):
            proxy.recorder.recent.clearEvents()
            return (204, "", [])
        case ("POST", "/rules"):
            // PUT replaces the whole rule set; POST would suggest adding one rule.
            return (405, json, encode(["error": "POST is not allowed on /rules: use PUT /rules to replace the rules"]))
        case ("PUT", "/rules"):
            do {
                let rules = try JSONDecoder().decode(InterceptionRules.self, from: Data(body))
                try proxy.updateRules(rules)
                return (200, json, encode(proxy.rules))
            } catch let error as PinproxyError {
                return (400, json, encode(["error": error.reason]))
            } catch {
                return (400, json, encode(["error": "invalid rules JSON: \(DecodingErrorText.describe(error))"]))
            }
        case (_, "/health"), (_, "/ca.pem"), (_, "/ca.cer"), (_, "/events"), (_, "/flows"), (_, "/rules"), (_, "/profiles"), (_, "/resolve"), (_, "/misissuing-ca.pem"):
            return (405, json, encode(["error": "method \(method) not allowed on \(route)"]))
        default:
            return (404, json, encode(["error": "no such endpoint; try /health, /ca.pem, /ca.cer, /misissuing-ca.pem, /events, /flows, /rules, /profiles, /resolve"]))
        }
    }

    func route(of path: String) -> String { path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path }

    /// The methods each route answers, for `Allow` on a 405.
    static func allowed(on route: String) -> String {
        switch route {
        case "/rules", "/resolve": return "GET, HEAD, PUT"
        case "/flows", "/events": return "GET, HEAD, DELETE"
        default: return "GET, HEAD"
        }
    }

    /// `PUT /resolve`: a JSON object of host name → numeric address replaces the map.
    private func replaceResolve(_ body: [UInt8]) -> (Int, String, [UInt8]) {
        let json = "application/json"
        let map: [String: String]
        do { map = try JSONDecoder().decode([String: String].self, from: Data(body)) } catch {
            return (400, json, encode(["error": #"PUT /resolve wants a JSON object of host name to address, e.g. {"api.example.test":"127.0.0.1"}"#]))
        }
        do {
            try proxy.configuration.upstreamAddresses.replace(with: map)
        } catch let error as PinproxyError {
            return (400, json, encode(["error": error.reason]))
        } catch {
            return (400, json, encode(["error": "\(error)"]))
        }
        let pinned = proxy.configuration.upstreamAddresses.all
        logger.info("resolve updated: \(pinned.count) name(s) pinned to an address")
        return (200, json, encode(pinned))
    }

    private func health() -> [UInt8] {
        struct Health: Encodable {
            var status: String
            var uptimeSeconds: Double
            var mode: String
            var listen: String
            var openConnections: Int
            var counts: ProxyCounters.Counts
            var profiles: [String: ProxyCounters.ProfileCounts]
            var leafCache: [String: Int]
            var caPin: String
        }
        let stats = proxy.leaves.statistics
        let mode: String
        switch proxy.configuration.mode {
        case .forward: mode = "forward"
        case .reverse(let scheme, let host, let port): mode = "reverse:\(scheme)://\(host.uriHost):\(port)"
        }
        return encode(Health(
            status: proxy.counters.readyAt == nil ? "starting" : "ready",
            uptimeSeconds: (proxy.counters.readyAt.map { Date().timeIntervalSince($0) } ?? 0).rounded(),
            mode: mode, listen: proxy.address?.description ?? "", openConnections: proxy.openConnections,
            counts: proxy.counters.counts, profiles: proxy.counters.profiles,
            leafCache: ["hits": stats.hits, "misses": stats.misses, "count": stats.count],
            caPin: proxy.authority.certificate.spkiPin.okhttp))
    }

    private func profiles() -> [UInt8] {
        struct Profile: Encodable {
            var name: String
            var shows: String
            var catches: String
            /// Why the profile cannot be used here (`misissued` without a second CA); absent when it can.
            var unavailable: String?
        }
        let configuration = proxy.configuration
        let catalog = configuration.catalog
        let list = catalog.profiles.compactMap { profile in
            catalog.strategy(for: profile).map {
                Profile(name: profile.name, shows: $0.shows, catches: $0.catches, unavailable: $0.unavailability(in: configuration))
            }
        }
        return encode(["profiles": list])
    }

    func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Array((try? encoder.encode(value)) ?? Data("{}".utf8)) + [0x0a]
    }
}

/// One control API connection: one request, one response, close.
final class AdminConnection: @unchecked Sendable {
    // Sendable: confined to the admin queue.
    private let transport: Transport
    private let admin: AdminServer
    private var parser = HTTP1Parser(mode: .request)
    private var head: HTTP1RequestHead?
    private var body: [UInt8] = []
    private var done = false
    static let maxBody = 256 * 1024

    init(descriptor: Descriptor, admin: AdminServer) {
        self.transport = Transport(descriptor: descriptor, queue: admin.queue)
        self.admin = admin
    }

    func start() {
        transport.onData = { [self] bytes in self.received(bytes) }
        transport.onEnd = { [self] _ in self.transport.close() }
        transport.start()
        admin.queue.later(after: 10) { [self] in if !done { transport.close() } }
    }

    private func received(_ bytes: ArraySlice<UInt8>) {
        guard !done else { return }
        do {
            for event in try parser.feed(Array(bytes)) {
                switch event {
                case .requestHead(let h): head = h
                case .body(let b):
                    body += b
                    if body.count > AdminConnection.maxBody { return reply(413, "text/plain", Array("body too large\n".utf8)) }
                case .end:
                    guard let head else { return }
                    if let refusal = admin.access.refusal(for: head) { return refuse(head, refusal) }
                    let (status, type, content) = admin.respond(method: head.method, path: head.target.path, body: body)
                    return reply(status, type, head.method == "HEAD" ? [] : content, length: content.count)
                default: break
                }
            }
        } catch {
            transport.send(HTTP1Response.error(error))
            done = true
            transport.closeAfterSending()
        }
    }

    /// A request that ``AdminAccess`` refused: its reason to the caller and to the log.
    private func refuse(_ head: HTTP1RequestHead, _ refusal: AdminAccess.Refusal) {
        let peer = Socket.peerName(transport.descriptor)
        admin.logger.warning("control API refused \(head.method) \(AdminAccess.shown(head.target.path)) from \(peer) with \(refusal.status): \(refusal.reason)")
        let body = admin.encode(["error": refusal.reason])
        reply(refusal.status, "application/json", head.method == "HEAD" ? [] : body, length: body.count)
    }

    private func reply(_ status: Int, _ type: String, _ content: [UInt8], length: Int? = nil) {
        done = true
        var headers = HTTPHeaders()
        if status != 204 {  // RFC 9110 §8.6: no Content-Length (nor a body) on 204
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: String(length ?? content.count))
        }
        if status == 405 { headers.add(name: "Allow", value: AdminServer.allowed(on: admin.route(of: head?.target.path ?? ""))) }
        if status == 401 { headers.add(name: "WWW-Authenticate", value: #"Bearer realm="pinproxy control API""#) }
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Connection", value: "close")
        transport.send(HTTP1ResponseHead(status: status, headers: headers).serialized())
        transport.send(content)
        transport.closeAfterSending()
    }
}
