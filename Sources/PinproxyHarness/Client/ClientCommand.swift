import Foundation
import PinproxyCertificates

/// A real client to run per scenario instead of the built-in one: a shell
/// command with placeholders the harness fills in.
///
/// | placeholder | value |
/// |---|---|
/// | `{url}` | `https://HOST:PORT/account` on the world's origin |
/// | `{host}`, `{port}` | the host and the origin's port |
/// | `{proxy}` | `http://127.0.0.1:PORT` of the proxy (also exported as `HTTPS_PROXY`, `HTTP_PROXY` and their lower-case forms); empty in the direct row, where no proxy variable is set |
/// | `{resolve}` | `HOST:PORT:127.0.0.1`, for curl's `--resolve`: the origin is there, not where DNS may send the world's host |
/// | `{address}` | `127.0.0.1`, the address the world's host stands for, for clients that map the name themselves |
/// | `{ca}` | a PEM bundle of the world's public roots: the device's system store (the root and the misissuing CA) |
/// | `{proxy-ca}` | the proxy CA (PEM), for a device that installed it |
/// | `{device-ca}` | `{ca}` and `{proxy-ca}` in one bundle: the trust store of a device that installed the proxy CA |
/// | `{pin}`, `{pin-base64}` | the genuine leaf's SPKI pin, `sha256//…` (curl, wget) and bare base64 |
///
/// Every value is substituted shell-quoted, so paths with spaces stay one word.
///
/// The direct row (the client straight to the origin, no proxy) runs only for a
/// command that names `{resolve}` or `{address}`: without one of them it could
/// reach the world's host only through DNS, which the harness does not control.
public struct ClientCommand: Sendable {
    public let template: String

    public static let placeholders = ["{url}", "{host}", "{port}", "{proxy}", "{ca}", "{proxy-ca}", "{device-ca}", "{pin}", "{pin-base64}", "{resolve}", "{address}"]

    /// Whether the command says how to reach the world's host without the proxy (the direct row).
    public var reachesOriginDirectly: Bool { template.contains("{resolve}") || template.contains("{address}") }

    /// Whether the command is given the world's public roots (`{ca}` or `{device-ca}`): without
    /// them a client that verifies refuses the genuine origin as readily as a forged one.
    public var namesWorldRoots: Bool { template.contains("{ca}") || template.contains("{device-ca}") }

    /// Checks that every `{name}` in `template` is a known placeholder.
    public init(_ template: String) throws {
        guard !template.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw PinproxyError(.invalidArgument, "--client needs a command, e.g. 'curl -sS --pinnedpubkey {pin} --cacert {ca} {url}'")
        }
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = String(rest[open...close])
            if !Self.placeholders.contains(name) && !name.contains(" ") {
                let nearest = NearestName.hint(for: name, among: Self.placeholders) { $0 }
                throw PinproxyError(.invalidArgument, "--client: unknown placeholder \(name)\(nearest); known: \(Self.placeholders.joined(separator: " "))")
            }
            rest = rest[rest.index(after: close)...]
        }
        self.template = template
    }

    /// The command with the placeholders filled in from `values`.
    func filled(_ values: [String: String]) -> String {
        var command = template
        for (name, value) in values { command = command.replacingOccurrences(of: name, with: Self.quote(value)) }
        return command
    }

    /// `value` as one POSIX shell word.
    static func quote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The child's environment: this process's, with the proxy set in every spelling clients read
    /// and no exclusions that would let the client go around it.
    static func environment(proxy: String?) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"] {
            environment.removeValue(forKey: name)
        }
        if let proxy {
            for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] { environment[name] = proxy }
        }
        return environment
    }
}
