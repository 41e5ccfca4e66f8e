import PinproxyCertificates
import PinproxyHTTP1

/// Who may use the control API, decided for each request before it is answered.
///
/// The API hands out captured secrets (`GET /flows` carries the `Authorization` and `Cookie`
/// fields the proxy relayed) and switches the proxy's attacks (`PUT /rules`). Three checks:
///
/// - **Token.** With a token (required beyond loopback), a request without
///   `Authorization: Bearer <token>` gets 401. A web page cannot know the token, so a request
///   that carries it passes the Host check below whatever name it used: a container's API is
///   reached as `pinproxy:8081` or through a published port.
/// - **Host (DNS rebinding).** A page on `http://rebind.attacker.example:8081` can point its own
///   name at 127.0.0.1; the browser then treats the API as that page's own origin. Such a request
///   still names the attacker in `Host`, so only names of the listener itself are accepted:
///   `localhost`, IPv4 literals in 127.0.0.0/8, IPv6 `::1` and the listener's own configured
///   address, each with the listener's port or none (mitmproxy's answer to the same hole,
///   its issue 3234). An absolute-form target's authority is checked the same way. A request
///   with no `Host` (HTTP/1.0 allows it; the parser refuses HTTP/1.1 without one, and an empty
///   one in either version) names nothing, so nothing could be rebound: it is accepted.
///   Browsers always send a name.
/// - **Origin (cross-site requests).** A state-changing request (anything but GET and HEAD)
///   that carries an `Origin` must come from the listener's own origin (`http://` + a name
///   accepted above + the listener's port); otherwise 403. Command-line clients send no
///   `Origin`; a browser always does on such requests, `null` included.
struct AdminAccess: Sendable {
    /// The configured numeric address of the listener.
    let listenHost: String
    /// The port the listener is bound to.
    let port: Int
    let token: AdminToken?

    struct Refusal: Equatable {
        var status: Int
        /// One line, for the caller and the log; never the token.
        var reason: String
    }

    func refusal(for head: HTTP1RequestHead) -> Refusal? {
        if let token {
            let authorizations = head.headers.values(named: "Authorization")
            guard authorizations.count == 1, token.admits(authorization: authorizations.first) else {
                return Refusal(status: 401, reason: authorizations.isEmpty
                    ? "the control API needs Authorization: Bearer <token> (the token given to pinproxy serve)"
                    : "the control API refused the bearer token")
            }
        } else {
            let hosts = head.headers.values(named: "Host")
            if hosts.count > 1 { return Refusal(status: 403, reason: "the request has \(hosts.count) Host fields") }
            if let host = hosts.first, !host.isEmpty, !namesListener(host, defaultPort: nil) {
                return Refusal(status: 403, reason: "Host '\(Self.shown(host))' does not name this control API (DNS rebinding?); use http://\(ListenAddress(host: listenHost, port: port))")
            }
            if case .absolute(let url) = head.target, !namesListener("\(url.host.uriHost):\(url.port)", defaultPort: nil) {
                return Refusal(status: 403, reason: "the target's host '\(Self.shown(url.host.uriHost)):\(url.port)' does not name this control API")
            }
        }
        if head.method != "GET" && head.method != "HEAD" {
            let origins = head.headers.values(named: "Origin")
            if let origin = origins.first, origins.count > 1 || !isOwnOrigin(origin) {
                return Refusal(status: 403, reason: "Origin '\(Self.shown(origins.joined(separator: ", ")))' is not this control API's own; \(head.method) from a web page is refused")
            }
        }
        return nil
    }

    /// Whether `authority` (`host`, `host:port`, `[v6]:port`) names this listener: a loopback
    /// name or the listener's own address, with the listener's port or, when `defaultPort` is
    /// nil, none.
    func namesListener(_ authority: String, defaultPort: Int?) -> Bool {
        guard let (host, port) = Self.split(authority) else { return false }
        if let port { return namesListener(host, explicitPort: port) }
        guard let defaultPort else { return isOwnName(host) }
        return namesListener(host, explicitPort: defaultPort)
    }

    private func namesListener(_ host: String, explicitPort: Int) -> Bool {
        explicitPort == port && isOwnName(host)
    }

    /// `localhost`, 127.0.0.0/8, ::1 or the configured address (a host without brackets).
    func isOwnName(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        guard let bytes = HostName.parseNumeric(host) else { return false }
        if bytes.count == 4 && bytes[0] == 127 { return true }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return bytes == HostName.parseNumeric(listenHost)
    }

    /// `http://` + a name of this listener + its port (an absent port is 80, as in any origin).
    func isOwnOrigin(_ origin: String) -> Bool {
        let prefix = "http://"
        guard origin.lowercased().hasPrefix(prefix) else { return false }
        return namesListener(String(origin.dropFirst(prefix.count)), defaultPort: 80)
    }

    /// A caller's text as a refusal quotes it: at most 100 characters.
    static func shown(_ text: String) -> String { text.count > 100 ? text.prefix(100) + "…" : text }

    /// `host:port` → (host, port); `[::1]:8081` → ("::1", 8081); a bare host has no port.
    /// Nil when the form is wrong (an unbracketed IPv6 literal, a port that is not a number).
    static func split(_ authority: String) -> (host: String, port: Int?)? {
        var host = Substring(authority)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else if let colon = host.firstIndex(of: ":") {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { return nil }
        guard let portText else { return (String(host), nil) }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCIIDigit), let port = Int(portText) else { return nil }
        return (String(host), port)
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

private extension HTTPHeaders {
    func values(named name: String) -> [String] {
        filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}
