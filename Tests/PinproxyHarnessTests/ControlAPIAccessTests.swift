import Foundation
import PinproxyCertificates
import PinproxyTestSupport
import Testing

/// Who may use a running daemon's control API: the Host allow-list against DNS rebinding and
/// the Origin check against cross-site writes, driven with curl against `pinproxy serve`.
@Suite(.timeLimit(.minutes(10)))
struct ControlAPIAccessTests {
    typealias Daemon = ControlAPIProxyTests.Daemon

    /// Every route and method the API answers (and one it does not), with a body where one is needed.
    static let endpoints: [(method: String, path: String, body: String?)] = [
        ("GET", "/health", nil), ("GET", "/ca.pem", nil), ("GET", "/ca.cer", nil), ("GET", "/misissuing-ca.pem", nil),
        ("GET", "/events", nil), ("GET", "/flows", nil), ("GET", "/rules", nil), ("GET", "/profiles", nil),
        ("GET", "/resolve", nil), ("HEAD", "/flows", nil),
        ("PUT", "/rules", #"{"defaultProfile":"passthrough"}"#), ("PUT", "/resolve", #"{"evil.example.test":"127.0.0.1"}"#),
        ("POST", "/rules", #"{"defaultProfile":"passthrough"}"#), ("DELETE", "/flows", nil), ("DELETE", "/events", nil),
        ("GET", "/no-such-endpoint", nil),
    ]

    /// `curl` against the control API with these extra headers; returns the status and body.
    static func request(_ daemon: Daemon, _ method: String, _ path: String, body: String? = nil, headers: [String] = [],
                        http10: Bool = false) throws -> (status: Int, body: String) {
        var arguments = ["curl", "-sS", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}", "-X", method]
        if method == "HEAD" { arguments = ["curl", "-sS", "--max-time", "20", "-I", "-o", "/dev/null", "-w", "\n%{http_code}"] }
        if http10 { arguments.append("-0") }
        if let body { arguments += ["--data", body] }
        for header in headers { arguments += ["-H", header] }
        let r = try run(arguments + ["\(daemon.admin)\(path)"])
        let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? -1, lines.dropLast().joined(separator: "\n"))
    }

    @Test func aRebindingHostIsRefusedOnEveryEndpointAndLogged() throws {
        let directory = try TemporaryDirectory()
        let log = directory.file("serve.log")
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")], log: log)
        let rebound = "Host: rebind.attacker.example:\(daemon.adminPort)"
        for (method, path, body) in Self.endpoints {
            let r = try Self.request(daemon, method, path, body: body, headers: [rebound])
            #expect(r.status == 403, "\(method) \(path): \(r.status) \(r.body)")
            if method != "HEAD" {
                #expect(r.body.contains("Host 'rebind.attacker.example:\(daemon.adminPort)' does not name this control API"),
                        "\(method) \(path): \(r.body)")
            }
        }
        // Nothing changed: the rules and the resolve map are the daemon's own.
        let rules = try Self.request(daemon, "GET", "/rules")
        #expect(rules.status == 200 && rules.body.contains(#""defaultProfile" : "forge""#), "\(rules.body)")
        let resolve = try Self.request(daemon, "GET", "/resolve")
        #expect(resolve.status == 200 && !resolve.body.contains("evil.example.test"), "\(resolve.body)")
        // Other names and forms that are not this listener's.
        for host in ["rebind.attacker.example", "localhost.attacker.example:\(daemon.adminPort)",
                     "127.0.0.1.nip.io:\(daemon.adminPort)", "localhost:\(daemon.adminPort + 1)", "[::2]:\(daemon.adminPort)",
                     "10.0.0.1:\(daemon.adminPort)", "127.0.0.1:\(daemon.adminPort)x", "::1"] {
            let r = try Self.request(daemon, "GET", "/flows", headers: ["Host: \(host)"])
            #expect(r.status == 403, "Host \(host): \(r.status) \(r.body)")
        }
        // An absolute-form target names the server too.
        let absolute = try run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--request-target",
                                "http://rebind.attacker.example:\(daemon.adminPort)/flows", "\(daemon.admin)/flows"])
        #expect(absolute.stdout == "403", "\(absolute.output)")
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        #expect(logged.contains("control API refused GET /flows from 127.0.0.1:"), "\(logged)")
        #expect(logged.contains("control API refused PUT /rules from 127.0.0.1:"), "\(logged)")
    }

    @Test func everyNameOfTheLoopbackListenerIsServed() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")])
        let port = daemon.adminPort
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LocalHost:\(port)", "[::1]:\(port)", "127.0.0.2:\(port)",
                     "[0:0:0:0:0:0:0:1]:\(port)", "localhost", "127.0.0.1"] {
            for (method, path, body) in [("GET", "/flows", nil), ("GET", "/events", nil), ("GET", "/resolve", nil),
                                         ("PUT", "/rules", #"{"defaultProfile":"forge"}"#), ("PUT", "/resolve", "{}")] {
                let r = try Self.request(daemon, method, path, body: body, headers: ["Host: \(host)"])
                #expect(r.status == 200, "Host \(host), \(method) \(path): \(r.status) \(r.body)")
            }
        }
        // HTTP/1.0 may leave Host out (curl's "Host:" removes it): no name, nothing to rebind.
        let noHost = try Self.request(daemon, "GET", "/flows", headers: ["Host:"], http10: true)
        #expect(noHost.status == 200, "\(noHost)")
        // An empty one names an http URI with an empty host: the parser refuses it in either version.
        let empty = try Self.request(daemon, "GET", "/flows", headers: ["Host;"], http10: true)
        #expect(empty.status == 400, "\(empty)")
    }

    @Test(.enabled(if: hasIPv6Loopback(), "this machine has no IPv6 loopback"))
    func aListenerOnIPv6LoopbackIsServedByItsOwnName() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")], admin: "[::1]:0")
        #expect(daemon.admin.hasPrefix("http://[::1]:"), "\(daemon.admin)")
        for (method, path, body) in [("GET", "/flows", nil), ("PUT", "/rules", #"{"defaultProfile":"forge"}"#)] {
            // curl sends Host: [::1]:PORT.
            let r = try Self.request(daemon, method, path, body: body)
            #expect(r.status == 200, "\(method) \(path): \(r.status) \(r.body)")
        }
        let rebound = try Self.request(daemon, "GET", "/flows", headers: ["Host: rebind.attacker.example:\(daemon.adminPort)"])
        #expect(rebound.status == 403, "\(rebound)")
    }

    @Test func aStateChangingRequestFromAnotherOriginIsRefused() throws {
        let directory = try TemporaryDirectory()
        let daemon = try Daemon(arguments: ["--dir", directory.file("ca")])
        let port = daemon.adminPort
        let change = #"{"defaultProfile":"passthrough"}"#
        for origin in ["http://rebind.attacker.example:\(port)", "null", "http://localhost:\(port + 1)", "http://localhost",
                       "https://127.0.0.1:\(port)", "http://127.0.0.1:\(port)/x"] {
            for (method, path, body) in [("PUT", "/rules", change), ("PUT", "/resolve", "{}"), ("DELETE", "/flows", nil)] {
                let r = try Self.request(daemon, method, path, body: body, headers: ["Origin: \(origin)"])
                #expect(r.status == 403, "Origin \(origin), \(method) \(path): \(r.status) \(r.body)")
                #expect(r.body.contains("is not this control API's own"), "\(r.body)")
            }
        }
        #expect(try Self.request(daemon, "GET", "/rules").body.contains(#""defaultProfile" : "forge""#))
        // Two Origin fields, its own first: a browser never sends two, so which one counts is unknowable.
        for pair in [["http://localhost:\(port)", "http://rebind.attacker.example:\(port)"],
                     ["http://localhost:\(port)", "http://localhost:\(port)"]] {
            let r = try Self.request(daemon, "PUT", "/rules", body: change, headers: pair.map { "Origin: \($0)" })
            #expect(r.status == 403, "Origin \(pair): \(r.status) \(r.body)")
            #expect(r.body.contains("is not this control API's own"), "\(r.body)")
        }
        #expect(try Self.request(daemon, "GET", "/rules").body.contains(#""defaultProfile" : "forge""#))
        // Its own origin, in each name, may change the rules.
        for origin in ["http://127.0.0.1:\(port)", "http://localhost:\(port)", "http://[::1]:\(port)"] {
            let r = try Self.request(daemon, "PUT", "/rules", body: #"{"defaultProfile":"forge"}"#, headers: ["Origin: \(origin)"])
            #expect(r.status == 200, "Origin \(origin): \(r.status) \(r.body)")
        }
        let own = try Self.request(daemon, "PUT", "/rules", body: change, headers: ["Origin: http://localhost:\(port)"])
        #expect(own.status == 200)
        #expect(try Self.request(daemon, "GET", "/rules").body.contains(#""defaultProfile" : "passthrough""#))
    }
}

/// Whether a socket can bind ::1 (a machine or container may have IPv6 turned off).
func hasIPv6Loopback() -> Bool {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
    } == 0
}
